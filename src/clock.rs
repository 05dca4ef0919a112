//! The one clock: expiry, TTL, TIME and scripts all read time from here.
//!
//! Redis freezes time for the duration of a command (and a whole script), so a
//! command sees one instant. `begin_command` takes that snapshot; tests can
//! shift the clock with `set_offset_ms`.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static OFFSET_MS: AtomicI64 = AtomicI64::new(0);

thread_local! {
    static SNAPSHOT_US: Cell<i64> = const { Cell::new(0) };
}

/// Wall-clock microseconds since the epoch, including any test offset.
pub fn real_now_us() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    d.as_micros() as i64 + OFFSET_MS.load(Ordering::Relaxed) * 1000
}

/// Takes the snapshot the next command (or script) will see.
pub fn begin_command() {
    set_snapshot(real_now_us());
}

/// Makes `us` (a [`real_now_us`] reading the caller already took) the time
/// the running command sees, saving a second clock read.
pub fn set_snapshot(us: i64) {
    SNAPSHOT_US.with(|c| c.set(us));
}

/// The current command's time in milliseconds.
#[inline]
pub fn now_ms() -> i64 {
    now_us() / 1000
}

/// The current command's time in microseconds.
#[inline]
pub fn now_us() -> i64 {
    SNAPSHOT_US.with(|c| {
        let v = c.get();
        if v == 0 {
            let now = real_now_us();
            c.set(now);
            now
        } else {
            v
        }
    })
}

/// Moves the clock (tests only; also `DEBUG` may use it).
pub fn set_offset_ms(ms: i64) {
    OFFSET_MS.store(ms, Ordering::Relaxed);
}
