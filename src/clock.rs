//! The server's clock: expiry, TTL, TIME, scripts, blocking timeouts and the cron read time here.
//!
//! The clock belongs to one server. Every server runs on its own data thread
//! (see `lib.rs`), so its clock state lives in that thread's storage: moving
//! one server's time (`OXIDIS CLOCK`, see `cmd::testctl::clock`) leaves every
//! other server in the process alone.
//!
//! The server's time is the system's wall clock plus an offset, or, while the
//! clock is frozen, a fixed instant. Durations (a command's run time for the
//! slow log and latency, a script's time before BUSY) are measured on the
//! system clock ([`system_us`]): they are real work, whatever the server's
//! time says.
//!
//! Redis freezes time for the duration of a command (and a whole script), so a
//! command sees one instant: `begin_command` / `set_snapshot` take that
//! snapshot, `now_ms` / `now_us` read it.

use std::cell::Cell;

/// One server's clock state.
struct Clock {
    /// Added to the system time (microseconds); 0 unless a test moved the clock.
    offset_us: Cell<i64>,
    /// The server's time while the clock is frozen (microseconds); 0 while
    /// it flows.
    frozen_us: Cell<i64>,
    /// The instant the running command sees; 0 before the first command.
    snapshot_us: Cell<i64>,
}

thread_local! {
    static CLOCK: Clock = const {
        Clock {
            offset_us: Cell::new(0),
            frozen_us: Cell::new(0),
            snapshot_us: Cell::new(0),
        }
    };
}

/// This server's wall-clock microseconds since the epoch (system time plus
/// any offset the server's clock was moved by, or the frozen instant).
pub fn real_now_us() -> i64 {
    at_system(system_now_us())
}

/// The server's time when the system clock reads `system_us` (a reading of
/// [`system_us`]), so one clock read gives both a duration's start and the
/// time a command sees.
#[inline]
pub fn at_system(system_us: i64) -> i64 {
    CLOCK.with(|c| {
        let frozen = c.frozen_us.get();
        if frozen != 0 {
            frozen
        } else {
            system_us + c.offset_us.get()
        }
    })
}

/// The system's wall clock in microseconds, whatever the server's clock
/// says: for measuring how long something took.
#[inline]
pub fn system_us() -> i64 {
    system_now_us()
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

/// Stops this server's time where it is, until [`resume`].
pub fn freeze() {
    let now = real_now_us();
    CLOCK.with(|c| c.frozen_us.set(now));
    begin_command();
}

/// Lets time flow again from where it stands (frozen or not).
pub fn resume() {
    let now = real_now_us();
    CLOCK.with(|c| {
        c.frozen_us.set(0);
        c.offset_us.set(now - system_now_us());
    });
    begin_command();
}

/// True while the clock is frozen.
pub fn is_frozen() -> bool {
    CLOCK.with(|c| c.frozen_us.get() != 0)
}

/// Sets this server's time to `us` since the epoch; it stays frozen if it
/// was, and flows on from there otherwise. (A frozen instant of 0 would
/// read as "flowing": it is kept 1 µs later.)
pub fn set_us(us: i64) {
    CLOCK.with(|c| {
        if c.frozen_us.get() != 0 {
            c.frozen_us.set(us.max(1));
        } else {
            c.offset_us.set(us - system_now_us());
        }
    });
    begin_command();
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

    /// Frozen time stands still, moves only when set, and flows on from
    /// where it stood after `resume`.
    #[test]
    fn freeze_set_resume() {
        std::thread::spawn(|| {
            freeze();
            let t = real_now_us();
            std::thread::sleep(std::time::Duration::from_millis(2));
            assert_eq!(real_now_us(), t);
            set_us(t + 3_600_000_000);
            assert_eq!(real_now_us(), t + 3_600_000_000);
            assert_eq!(now_us(), t + 3_600_000_000);
            resume();
            assert!(!is_frozen());
            let after = real_now_us();
            assert!(after >= t + 3_600_000_000 && after < t + 3_700_000_000);
        })
        .join()
        .unwrap();
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
