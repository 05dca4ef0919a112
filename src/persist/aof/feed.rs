//! The AOF buffer (Redis's `server.aof_buf`): what the propagation stream appended since the last write to the file.

/// Present in `Propagation` only while the AOF collects (on, or waiting for
/// its first rewrite), so with the AOF off propagation allocates nothing.
#[derive(Default)]
pub struct Sink {
    pub buf: Vec<u8>,
    /// `aof-timestamp-enabled`: a `#TS:<unix secs>` line before the first
    /// command of each new second.
    pub timestamps: bool,
    /// The last second annotated (Redis's `aof_cur_timestamp`).
    pub cur_ts: i64,
}

impl Sink {
    /// Called before the commands of one top-level command are appended.
    #[inline]
    pub fn begin(&mut self) {
        if self.timestamps {
            let now = crate::clock::real_now_us() / 1_000_000;
            if self.cur_ts < now {
                self.cur_ts = now;
                self.buf
                    .extend_from_slice(format!("#TS:{now}\r\n").as_bytes());
            }
        }
    }
}
