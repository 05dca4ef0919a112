//! Data structures behind the values, free of RESP and of the keyspace.

pub mod geo;
pub mod glob;
pub mod hash;
pub mod hll;
pub mod list;
pub mod longdouble;
pub mod number;
pub mod pack;
pub mod set;
pub mod stream;
pub mod string;
pub mod zset;

/// A seeded xorshift generator for randomized tests (deterministic runs).
#[cfg(test)]
pub(crate) fn test_rng(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}
