//! Data structures behind the values, free of RESP and of the keyspace.

pub mod glob;
pub mod hash;
pub mod hll;
pub mod list;
pub mod longdouble;
pub mod number;
pub mod pack;
pub mod set;
pub mod string;
pub mod zset;
