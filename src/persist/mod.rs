//! Persistence in Redis's own formats: RDB snapshots, the multi-part AOF, DUMP payloads.
//!
//! Layout (each file owned by one concern):
//! - `rdb/`: the RDB codec (object encodings, whole-dataset write and load),
//!   shared by snapshots, the AOF's RDB preamble, DUMP/RESTORE and FUNCTION DUMP.
//! - `snapshot.rs`: SAVE, BGSAVE, save points, loading at start-up.
//! - `aof/`: the append-only file fed by the propagation stream.
//!
//! Files are written to a temporary name, fsynced and renamed, so a crash
//! mid-write never leaves a broken file under the real name.

pub mod aof;
pub mod rdb;
