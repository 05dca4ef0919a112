//! `oom-score-adj`: the process's `/proc/self/oom_score_adj`, set from `oom-score-adj-values` as Redis's `setOOMScoreAdj` does.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use crate::config::Config;

/// Whether Oxidis changed the score, and the score it found before (restored
/// when `oom-score-adj` goes back to `no`). Per process, as the file is.
static ADJUSTED: AtomicBool = AtomicBool::new(false);
static BASE: AtomicI64 = AtomicI64::new(0);

const PATH: &str = "/proc/self/oom_score_adj";

/// Writes the score for a primary (the first of `oom-score-adj-values`;
/// Oxidis has no replica or child process classes yet). Errors are logged
/// and returned as Redis's CONFIG SET error text.
pub fn apply(cfg: &Config) -> Result<(), String> {
    let mode = cfg.get("oom-score-adj").unwrap_or("no");
    let val = if mode != "no" {
        if !ADJUSTED.swap(true, Ordering::Relaxed) {
            match std::fs::read_to_string(PATH) {
                Ok(s) => BASE.store(s.trim().parse().unwrap_or(0), Ordering::Relaxed),
                Err(e) => {
                    ADJUSTED.store(false, Ordering::Relaxed);
                    return Err(failed("read", &e));
                }
            }
        }
        let values = cfg.get("oom-score-adj-values").unwrap_or("0");
        let primary: i64 = values
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let relative = if mode == "absolute" {
            0
        } else {
            BASE.load(Ordering::Relaxed)
        };
        (primary + relative).clamp(-1000, 1000)
    } else if ADJUSTED.swap(false, Ordering::Relaxed) {
        BASE.load(Ordering::Relaxed)
    } else {
        return Ok(());
    };
    std::fs::write(PATH, format!("{val}\n")).map_err(|e| failed("write", &e))
}

fn failed(what: &str, e: &std::io::Error) -> String {
    crate::log::warning(&format!(
        "Unable to {what} oom_score_adj: {}",
        crate::config::os_error(e)
    ));
    "Failed to set current oom_score_adj. Check server logs.".to_string()
}
