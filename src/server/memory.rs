//! The server's memory figures: `used_memory` (what maxmemory, INFO and eviction compare) and RSS.
//!
//! One place answers "how much memory does the server hold?", so the OOM
//! stage, eviction, INFO memory and the RDB `used-mem` field agree.

/// Bytes the server holds as Redis's `used_memory` means it. Today this is
/// the resident set size (no allocator statistics yet: issue 13).
pub fn used_memory() -> u64 {
    rss_bytes()
}

/// Resident set size of this process, from /proc/self/statm.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}
