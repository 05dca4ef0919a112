//! The RDB format (version 10, as Redis 7.0 writes it; versions 1–12 read): whole-dataset save and load, DUMP payloads.
//!
//! The interface the rest of the server uses (snapshots, the AOF preamble,
//! DEBUG RELOAD) is [`write_dataset`] / [`load_dataset`] (and their `_with`
//! forms for the AOF base); DUMP/RESTORE and FUNCTION DUMP/RESTORE use
//! [`dump_value`] / [`restore_value`] and [`dump_functions`] /
//! [`restore_functions`]. The per-object codec is in `write` and `read`.

pub mod consts;
mod dataset;
pub mod intset;
pub mod listpack;
pub mod lzf;
pub mod read;
mod stream;
pub mod write;
pub mod ziplist;

use crate::db::{Entry, Value, LFU_INIT_VAL};

pub use dataset::{
    load_dataset, load_dataset_with, write_dataset, write_dataset_with, LoadOptions, SaveOptions,
};

/// CRC-64/Jones as Redis computes it (`crc64(0, ...)`), table-driven.
pub static CRC64: crc::Crc<u64, crc::Table<16>> =
    crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

/// Redis's `crc64(0, data)`.
pub fn crc64(data: &[u8]) -> u64 {
    CRC64.checksum(data)
}

/// What a successful load found.
#[derive(Debug, Default, Clone)]
pub struct LoadInfo {
    /// Bytes of `data` the RDB image used (an AOF base may go on after it).
    pub consumed: usize,
    /// Keys loaded (expired keys are skipped at load, as Redis does on a master).
    pub keys: u64,
    pub expires: u64,
    /// Keys skipped because their time had passed.
    pub expired_skipped: u64,
    /// Empty collections skipped (Redis logs how many).
    pub empty_skipped: u64,
    /// The replication history the image was saved in (Redis's
    /// `rdbSaveInfo`), when its three AUX fields are there and valid.
    pub repl: Option<ReplInfo>,
}

/// The `repl-id`, `repl-offset` and `repl-stream-db` AUX fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplInfo {
    pub id: String,
    pub offset: i64,
    pub stream_db: i64,
}

/// A loaded value's entry with Redis's `objectSetLRUOrLFU`: under an LFU
/// policy the counter `freq` when given, otherwise the idle time `idle_secs`
/// when given; else a fresh access at `now_ms`.
pub fn loaded_entry(
    val: Value,
    lfu_policy: bool,
    freq: Option<u8>,
    idle_secs: Option<u64>,
    now_ms: i64,
) -> Entry {
    let now_secs = (now_ms / 1000) as u32;
    let minutes = ((now_ms / 60_000) & 0xffff) as u32;
    let mut entry = Entry {
        val,
        lru: now_secs,
        lfu: minutes << 8 | LFU_INIT_VAL,
    };
    if lfu_policy {
        if let Some(f) = freq {
            entry.lfu = minutes << 8 | f as u32;
        }
    } else if let Some(i) = idle_secs {
        entry.lru = now_secs.saturating_sub(i.min(u32::MAX as u64) as u32);
    }
    entry
}

/// Why a load failed: `message` is the text Redis logs for the same case.
#[derive(Debug, Clone)]
pub struct LoadError {
    pub message: String,
}

/// The footer of a DUMP payload: RDB version (u16 LE) and CRC64 (u64 LE).
fn seal(mut payload: Vec<u8>) -> Vec<u8> {
    payload.extend_from_slice(&consts::RDB_VERSION.to_le_bytes());
    let crc = crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

/// `DUMP`'s payload for a value (`createDumpPayload`): type byte, the
/// value as RDB writes it, RDB version, CRC64.
pub fn dump_value(v: &Value, compress: bool) -> Vec<u8> {
    let mut e = write::Encoder::new(compress);
    e.byte(write::Encoder::type_of(v));
    e.object(v);
    seal(e.buf)
}

/// Bytes of a value's RDB body (Redis's `rdbSavedObjectLen`, DEBUG OBJECT's
/// `serializedlength`).
pub fn serialized_len(v: &Value, compress: bool) -> usize {
    let mut e = write::Encoder::new(compress);
    e.object(v);
    e.buf.len()
}

/// Why a payload was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short, a newer RDB version or a wrong checksum (Redis's
    /// "DUMP payload version or checksum are wrong").
    VersionOrChecksum,
    /// The body does not decode (Redis's "Bad data format"); the reason is
    /// what Redis would log at verbose level.
    BadFormat(String),
}

/// `verifyDumpPayload`: at least the 10-byte footer, a version this server
/// reads, and a matching CRC64 (`skip_checksum` as `DEBUG SET-SKIP-CHECKSUM-VALIDATION`).
pub fn verify_payload(p: &[u8], skip_checksum: bool) -> Result<(), PayloadError> {
    if p.len() < 10 {
        return Err(PayloadError::VersionOrChecksum);
    }
    let footer = &p[p.len() - 10..];
    let ver = u16::from_le_bytes([footer[0], footer[1]]);
    if ver > consts::RDB_VERSION {
        return Err(PayloadError::VersionOrChecksum);
    }
    if skip_checksum {
        return Ok(());
    }
    let crc = u64::from_le_bytes(footer[2..].try_into().unwrap_or_default());
    if crc64(&p[..p.len() - 8]) != crc {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok(())
}

/// `RESTORE`'s decoding: checks the footer, then reads one value. As in
/// Redis, the reader may run into the footer bytes and trailing bytes are
/// ignored.
pub fn restore_value(
    p: &[u8],
    limits: &read::Limits,
    skip_checksum: bool,
) -> Result<Value, PayloadError> {
    verify_payload(p, skip_checksum)?;
    let mut r = read::Reader::new(p);
    let bad = |b: read::Bad| PayloadError::BadFormat(format!("{b:?}"));
    let t = r.byte().map_err(bad)?;
    r.object(t, limits).map_err(bad)
}

/// `FUNCTION DUMP`'s payload: each library as `FUNCTION2` + its code.
pub fn dump_functions<'a>(codes: impl IntoIterator<Item = &'a [u8]>, compress: bool) -> Vec<u8> {
    let mut e = write::Encoder::new(compress);
    for c in codes {
        e.byte(consts::OPCODE_FUNCTION2);
        e.string(c);
    }
    seal(e.buf)
}

/// `FUNCTION RESTORE`'s decoding into library codes, with Redis's error
/// texts (without the `ERR ` prefix).
pub fn restore_functions(p: &[u8]) -> Result<Vec<Vec<u8>>, &'static str> {
    verify_payload(p, false).map_err(|_| "DUMP payload version or checksum are wrong")?;
    // Reads up to the footer; as in Redis, a library may run into it.
    let mut r = read::Reader::new(p);
    let mut codes = Vec::new();
    while p.len() - r.pos > 10 {
        let op = r.byte().map_err(|_| "can not read data type")?;
        if op != consts::OPCODE_FUNCTION2 && op != consts::OPCODE_FUNCTION_PRE_GA {
            return Err("given type is not a function");
        }
        codes.push(dataset::function_code(&mut r, op).map_err(|(_, why)| why)?);
    }
    Ok(codes)
}
