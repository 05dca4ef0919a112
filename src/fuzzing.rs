//! In-process entry points for the fuzz targets in `fuzz/` (cargo feature `fuzzing`, never in a release build).

use std::rc::Rc;

use crate::command::args::Argv;
use crate::command::dispatch::dispatch;
use crate::resp::value::parse_value;
use crate::server::client::ClientCell;
use crate::server::Server;
use crate::Config;

/// A server and one registered client, driven without a socket: each request
/// goes through `dispatch` exactly as `net::conn` sends it there.
pub struct Harness {
    pub srv: Server,
    pub cell: Rc<ClientCell>,
}

impl Default for Harness {
    fn default() -> Self {
        Harness::new(Config::default())
    }
}

impl Harness {
    pub fn new(config: Config) -> Harness {
        let mut srv = Server::new(config);
        let cell = srv.add_local_client();
        Harness { srv, cell }
    }

    /// Runs one request and returns its reply bytes (taken out of the
    /// client's buffer), or `None` when the connection would stop reading
    /// requests: blocked, paused, closing or killed.
    ///
    /// Panics when the reply is not a sequence of well-formed RESP frames.
    pub fn run(&mut self, argv: &[&[u8]]) -> Option<Vec<u8>> {
        let argv = Argv::from_slices(argv.iter().copied());
        let mut c = self.cell.state.borrow_mut();
        if c.blocked.is_some() || c.postponed || c.close_after_reply || self.cell.kill.get() {
            return None;
        }
        dispatch(&mut self.srv, &mut c, &argv.args());
        if c.postponed {
            return None; // CLIENT PAUSE holds it, as `net::conn` leaves it buffered
        }
        let out = c.reply.buf.split().to_vec();
        check_frames(&out);
        Some(out)
    }
}

/// Panics unless `out` is zero or more complete, well-formed RESP frames.
pub fn check_frames(out: &[u8]) {
    let mut pos = 0;
    while pos < out.len() {
        match parse_value(&out[pos..]) {
            Ok(Some((_, used))) => pos += used,
            other => panic!(
                "malformed reply at byte {pos}: {other:?} in {:?}",
                String::from_utf8_lossy(out)
            ),
        }
    }
}
