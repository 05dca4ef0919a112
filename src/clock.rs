//! The server's clock: expiry, TTL, TIME, scripts, blocking timeouts and the cron read time here.
//!
//! The clock belongs to one server. Every server runs on its own data thread
//! (see `lib.rs`), so its clock state lives in that thread's storage: moving
//! one server's time (an offset, for tests and later for a client with test
//! controls) leaves every other server in the process alone.
//!
//! Redis freezes time for the duration of a command (and a whole script), so a
//! command sees one instant: `begin_command` / `set_snapshot` take that
//! snapshot, `now_ms` / `now_us` read it.

use std::cell::Cell;

/// One server's clock state.
struct Clock {
    /// Added to the system time (microseconds); 0 unless a test moved the clock.
    offset_us: Cell<i64>,
    /// The instant the running command sees; 0 before the first command.
    snapshot_us: Cell<i64>,
}

thread_local! {
    static CLOCK: Clock = const {
        Clock {
            offset_us: Cell::new(0),
            snapshot_us: Cell::new(0),
        }
    };
}

/// This server's wall-clock microseconds since the epoch (system time plus
/// any offset the server's clock was moved by).
pub fn real_now_us() -> i64 {
    system_now_us() + CLOCK.with(|c| c.offset_us.get())
}

/// The system's wall clock in microseconds since the epoch, read with
/// `clock_gettime` as `SystemTime::now` does, without the checked
/// `duration_since(UNIX_EPOCH)` and 128-bit `as_micros` around it: every
/// command reads the clock twice (its time and its duration), and those
/// cost more than the read itself (~70 of ~100 instructions).
#[inline]
fn system_now_us() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    // CLOCK_REALTIME always exists, so the call cannot fail (its only
    // errors are a bad clock id or pointer); `ts` is read only after it.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1000
}

/// Takes the snapshot the next command (or script) will see.
pub fn begin_command() {
    set_snapshot(real_now_us());
}

/// Makes `us` (a [`real_now_us`] reading the caller already took) the time
/// the running command sees, saving a second clock read.
pub fn set_snapshot(us: i64) {
    CLOCK.with(|c| c.snapshot_us.set(us));
}

/// The current command's time in milliseconds.
#[inline]
pub fn now_ms() -> i64 {
    now_us() / 1000
}

/// The current command's time in microseconds.
#[inline]
pub fn now_us() -> i64 {
    CLOCK.with(|c| {
        let v = c.snapshot_us.get();
        if v == 0 {
            let now = real_now_us();
            c.snapshot_us.set(now);
            now
        } else {
            v
        }
    })
}

/// Moves this server's clock by `ms` from the system time (replacing any
/// earlier offset), and the snapshot with it.
pub fn set_offset_ms(ms: i64) {
    CLOCK.with(|c| c.offset_us.set(ms * 1000));
    begin_command();
}

/// This server's wall-clock time in whole seconds since the epoch (what
/// Redis keeps in `server.unixtime`).
pub fn unix_now() -> i64 {
    real_now_us() / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct read agrees with std's `SystemTime` (taken on both sides of it).
    #[test]
    fn system_now_matches_system_time() {
        let std_us = || {
            let d = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            d.as_micros() as i64
        };
        let before = std_us();
        let ours = system_now_us();
        let after = std_us();
        assert!(before <= ours && ours <= after, "{before} {ours} {after}");
    }

    #[test]
    fn each_server_thread_has_its_own_clock() {
        let moved = std::thread::spawn(|| {
            set_offset_ms(3_600_000);
            now_ms()
        })
        .join()
        .unwrap();
        let here = std::thread::spawn(|| {
            begin_command();
            now_ms()
        })
        .join()
        .unwrap();
        // The first thread's clock is an hour ahead; the second one's is not.
        assert!(moved - here > 3_000_000, "{moved} vs {here}");
    }
}
