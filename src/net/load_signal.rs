//! SIGTERM and SIGINT while the dataset loads at start-up: noted by a handler, acted on by the loader's event poll (Redis's `shutdown_asap`, checked in `whileBlockedCron`).
//!
//! The listener registers tokio's handlers only once the load is over, and
//! the loader runs on the data thread without turning the runtime: until
//! then a plain handler stores the signal, and `persist::loading`'s poll
//! takes it and shuts down without saving, as Redis does.

use std::sync::atomic::{AtomicI32, Ordering};

/// The last signal received while the handler is installed (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn note(sig: libc::c_int) {
    // An atomic store is async-signal-safe; the log line is written by `take`'s caller.
    RECEIVED.store(sig, Ordering::Relaxed);
}

/// Installs the handler for SIGTERM and SIGINT (before the start-up load).
pub fn install() {
    set(note as extern "C" fn(libc::c_int) as libc::sighandler_t);
}

/// Puts the default actions back (the listener then registers its own
/// handlers); true when a signal arrived that was not taken yet.
pub fn uninstall() -> bool {
    set(libc::SIG_DFL);
    take().is_some()
}

fn set(handler: libc::sighandler_t) {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: `note` only stores to an atomic; SIG_DFL is always valid.
        unsafe { libc::signal(sig, handler) };
    }
}

/// The signal received since [`install`], taken (None: none).
pub fn take() -> Option<libc::c_int> {
    match RECEIVED.swap(0, Ordering::Relaxed) {
        0 => None,
        sig => Some(sig),
    }
}
