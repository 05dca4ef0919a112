//! Redis-style log lines: `pid:M 22 Nov 2026 02:52:14.123 * message`.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;

// Silent until `configure` runs (embedded servers in tests do not log).
static LEVEL: AtomicUsize = AtomicUsize::new(4);
static FILE: Mutex<Option<String>> = Mutex::new(None);
/// Set in a forked child (`persist::child`): lines are marked `C` and
/// written with `write(2)`, never through locks another thread may have
/// held at the fork.
static CHILD: AtomicBool = AtomicBool::new(false);

/// Set while this server is a replica: lines are marked `S` (Redis's
/// role character), `M` otherwise.
static REPLICA: AtomicBool = AtomicBool::new(false);

/// The server became a replica (true) or a master again (false).
pub fn set_replica_role(on: bool) {
    REPLICA.store(on, Ordering::Relaxed);
}

/// Switches the log to a forked child's ways (see [`CHILD`]).
pub fn enter_child() {
    CHILD.store(true, Ordering::Relaxed);
}

/// Sets the level (0 debug .. 3 warning) and the file ("" for stdout).
pub fn configure(level: usize, logfile: Option<String>) {
    LEVEL.store(level, Ordering::Relaxed);
    *FILE.lock() = logfile;
}

/// Changes the level at run time (CONFIG SET loglevel); a silent logger stays silent.
pub fn set_level(level: usize) {
    if LEVEL.load(Ordering::Relaxed) <= 3 {
        LEVEL.store(level, Ordering::Relaxed);
    }
}

fn civil(days: i64) -> (i64, u32, u32) {
    // Howard Hinnant's days-to-civil.
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn timestamp() -> String {
    let us = crate::clock::real_now_us();
    let secs = us / 1_000_000;
    let (y, m, d) = civil(secs.div_euclid(86400));
    let rem = secs.rem_euclid(86400);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{:02} {} {} {:02}:{:02}:{:02}.{:03}",
        d,
        MONTHS[m as usize - 1],
        y,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        (us % 1_000_000) / 1000
    )
}

fn write(level: usize, msg: &str) {
    if level < LEVEL.load(Ordering::Relaxed) {
        return;
    }
    let mark = ['.', '-', '*', '#'][level.min(3)];
    let role = if CHILD.load(Ordering::Relaxed) {
        'C'
    } else if REPLICA.load(Ordering::Relaxed) {
        'S'
    } else {
        'M'
    };
    let line = format!(
        "{}:{role} {} {} {}\n",
        std::process::id(),
        timestamp(),
        mark,
        msg
    );
    emit(&line);
}

/// Writes `text` as it is, with no pid/time prefix (Redis's `LL_RAW`), at
/// notice level: the start-up logo.
pub fn raw_notice(text: &str) {
    if 2 >= LEVEL.load(Ordering::Relaxed) {
        emit(text);
    }
}

/// Writes `text` as it is at warning level (Redis's `LL_WARNING|LL_RAW`):
/// the crash report's blocks.
pub fn raw_warning(text: &str) {
    if 3 >= LEVEL.load(Ordering::Relaxed) {
        emit(text);
    }
}

/// Appends a finished line (or block) to the log file, or stdout.
fn emit(line: &str) {
    if CHILD.load(Ordering::Relaxed) {
        return emit_in_child(line);
    }
    let file = FILE.lock().clone();
    match file {
        Some(path) if !path.is_empty() => {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
            {
                let _ = f.write_all(line.as_bytes());
            }
        }
        _ => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
        }
    }
}

/// [`emit`] in a forked child: the file is opened anew (inherited
/// descriptors are closed) and stdout is written with `write(2)`; a lock
/// left held at the fork means no file name, and the line goes to stdout.
fn emit_in_child(line: &str) {
    let file = FILE.try_lock().and_then(|f| f.clone());
    if let Some(path) = file.filter(|p| !p.is_empty()) {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            let _ = f.write_all(line.as_bytes());
        }
        return;
    }
    let mut rest = line.as_bytes();
    while !rest.is_empty() {
        // SAFETY: writing a valid buffer to fd 1.
        let n = unsafe { libc::write(1, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            break;
        }
        rest = &rest[n as usize..];
    }
}

pub fn debug(msg: &str) {
    write(0, msg);
}

pub fn verbose(msg: &str) {
    write(1, msg);
}

pub fn notice(msg: &str) {
    write(2, msg);
}

pub fn warning(msg: &str) {
    write(3, msg);
}
