//! Whole RDB images: header, AUX fields, function libraries, databases, EOF and checksum, both ways.

use std::io;

use super::consts::*;
use super::read::{Bad, Limits, Reader};
use super::write::Encoder;
use super::{LoadError, LoadInfo, CRC64};
use crate::clock;
use crate::db::Db;
use crate::log;
use crate::script::function::Functions;
use crate::server::Server;

/// How an image is written.
#[derive(Clone, Copy, Debug, Default)]
pub struct SaveOptions {
    /// The image starts an AOF base file (`aof-base 1` AUX field).
    pub aof_base: bool,
    /// Without the keys, or without the function libraries (a replica's
    /// `REPLCONF rdb-filter-only`, as `redis-cli --functions-rdb` asks).
    pub exclude_data: bool,
    pub exclude_functions: bool,
}

/// How an image is read.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    /// The image is an AOF base: keys past their time are kept, since the
    /// commands after it were logged against them (as Redis).
    pub aof_preamble: bool,
    /// Load over the current dataset and functions instead of replacing
    /// them (DEBUG RELOAD NOFLUSH); a key or library already there is an
    /// error unless `allow_dup`.
    pub keep: bool,
    /// A key or library already there is replaced (DEBUG RELOAD MERGE,
    /// Redis's `RDBFLAGS_ALLOW_DUP`).
    pub allow_dup: bool,
    /// Keys past their time are kept: a replica's full sync, whose master
    /// sends their DELs. A server that is not a master keeps them anyway
    /// (Redis's `iAmMaster` in `rdbLoad`).
    pub keep_expired: bool,
}

/// Bytes gathered before each write to the output.
const CHUNK: usize = 64 << 10;

/// Writes the whole dataset as an RDB version 10 image, as Redis 7.0 does.
pub fn write_dataset(server: &Server, out: &mut dyn io::Write) -> io::Result<()> {
    write_dataset_with(server, out, &SaveOptions::default())
}

/// [`write_dataset`] with options: header, AUX fields, function libraries,
/// every non-empty database (SELECTDB, RESIZEDB, keys with EXPIRETIME_MS,
/// IDLE or FREQ under an LRU or LFU maxmemory policy), EOF and the CRC64
/// (zero with `rdbchecksum no`).
pub fn write_dataset_with(
    server: &Server,
    out: &mut dyn io::Write,
    opts: &SaveOptions,
) -> io::Result<()> {
    let cfg = &server.config;
    let yes = |name: &str| cfg.get(name) == Some("yes");
    let checksum = yes("rdbchecksum");
    let policy = cfg.get("maxmemory-policy").unwrap_or("");
    let (save_lru, save_lfu) = (policy.contains("lru"), policy.contains("lfu"));
    let mut e = Encoder::new(yes("rdbcompression"));
    let mut delay = crate::persist::KeyDelay::from_config(server, "rdb-key-save-delay");
    let mut digest = CRC64.digest();
    let mut flush = |e: &mut Encoder, out: &mut dyn io::Write| -> io::Result<()> {
        if checksum {
            digest.update(&e.buf);
        }
        out.write_all(&e.buf)?;
        e.buf.clear();
        Ok(())
    };

    e.buf
        .extend_from_slice(format!("REDIS{:04}", RDB_VERSION).as_bytes());
    let aux = |e: &mut Encoder, k: &str, v: &str| {
        e.byte(OPCODE_AUX);
        e.string(k.as_bytes());
        e.string(v.as_bytes());
    };
    aux(&mut e, "redis-ver", crate::REDIS_VERSION);
    aux(&mut e, "redis-bits", "64");
    aux(
        &mut e,
        "ctime",
        &(clock::real_now_us() / 1_000_000).to_string(),
    );
    aux(
        &mut e,
        "used-mem",
        &crate::server::memory::used_memory().to_string(),
    );
    // A master with a backlog saves its replication history, so its
    // replicas can continue after it restarts (Redis's rdbPopulateSaveInfo).
    if server.prop.backlog.is_some() {
        aux(
            &mut e,
            "repl-stream-db",
            &server.prop.stream_db().unwrap_or(0).to_string(),
        );
        aux(&mut e, "repl-id", &server.repl.replid);
        aux(&mut e, "repl-offset", &server.prop.repl_offset.to_string());
    }
    aux(&mut e, "aof-base", if opts.aof_base { "1" } else { "0" });

    let libs = if opts.exclude_functions {
        &[][..]
    } else {
        &server.script.functions.libs[..]
    };
    for lib in libs {
        e.byte(OPCODE_FUNCTION2);
        e.string(&lib.code);
    }

    for db in &server.ks.dbs {
        if db.is_empty() || opts.exclude_data {
            continue;
        }
        e.byte(OPCODE_SELECTDB);
        e.len(db.id as u64);
        e.byte(OPCODE_RESIZEDB);
        e.len(db.len() as u64);
        e.len(db.expires_len() as u64);
        for (key, entry) in db.entries() {
            if let Some(at) = db.expire_at(key) {
                e.byte(OPCODE_EXPIRETIME_MS);
                e.buf.extend_from_slice(&at.to_le_bytes());
            }
            if save_lru {
                e.byte(OPCODE_IDLE);
                e.len(entry.idle_secs());
            }
            if save_lfu {
                e.byte(OPCODE_FREQ);
                e.byte(entry.freq().min(255) as u8);
            }
            e.byte(Encoder::type_of(&entry.val));
            e.string(key);
            e.object(&entry.val);
            delay.wait();
            crate::persist::child_info::key_saved();
            if e.buf.len() >= CHUNK {
                flush(&mut e, out)?;
            }
        }
    }
    e.byte(OPCODE_EOF);
    flush(&mut e, out)?;
    let crc = if checksum { digest.finalize() } else { 0 };
    out.write_all(&crc.to_le_bytes())
}

/// Replaces the dataset (keys and function libraries) with an RDB image.
pub fn load_dataset(server: &mut Server, data: &[u8]) -> Result<LoadInfo, LoadError> {
    load_dataset_with(server, data, &LoadOptions::default())
}

/// Short read text Redis logs (`rdbLoadRioWithLoadingCtx`'s `eoferr`).
const SHORT_READ: &str = "Short read or OOM loading DB. Unrecoverable error, aborting now.";

fn fail(message: String) -> LoadError {
    log::warning(&message);
    LoadError { message }
}

/// The error for a value or opcode that could not be read at `pos`, after
/// `info` was loaded.
fn bad_at(b: Bad, pos: usize, info: &LoadInfo) -> LoadError {
    match b {
        Bad::Eof => {
            let e = fail(SHORT_READ.into());
            internal_error(pos, "Unexpected EOF reading RDB file", info);
            e
        }
        Bad::Corrupt(why) => {
            internal_error(pos, &why, info);
            fail(SHORT_READ.into())
        }
        Bad::Unsupported(why) => fail(why),
        Bad::EmptyKey => fail(SHORT_READ.into()),
    }
}

/// Redis's `rdbReportError` while loading a file: the internal error line,
/// then the report `redis-check-rdb` prints for the file (Redis runs the
/// checker on it before exiting; here the loader's own position and counts).
fn internal_error(pos: usize, why: &str, info: &LoadInfo) {
    log::warning(&format!(
        "Internal error in RDB reading offset {pos}, function at rdb.c:0 -> {why}"
    ));
    log::warning("--- RDB ERROR DETECTED ---");
    log::warning(&format!("[offset {pos}] {why}"));
    log::warning(&format!("[info] {} keys read", info.keys));
    log::warning(&format!("[info] {} expires", info.expires));
    log::warning(&format!("[info] {} already expired", info.expired_skipped));
}

/// A library's code from a `FUNCTION2` opcode or the 7.0 rc1/rc2 `FUNCTION`
/// one (name, engine, optional description, body: rebuilt into a shebang).
pub(super) fn function_code(r: &mut Reader, op: u8) -> Result<Vec<u8>, (Bad, &'static str)> {
    if op == OPCODE_FUNCTION2 {
        return r
            .string()
            .map(|c| c.into_owned())
            .map_err(|b| (b, "Failed loading library payload"));
    }
    let name = r
        .string()
        .map_err(|b| (b, "Failed loading library name"))?
        .into_owned();
    let engine = r
        .string()
        .map_err(|b| (b, "Failed loading engine name"))?
        .into_owned();
    let has_desc = r
        .length()
        .map_err(|b| (b, "Failed loading library description indicator"))?;
    if has_desc != 0 {
        r.string()
            .map_err(|b| (b, "Failed loading library description"))?;
    }
    let blob = r.string().map_err(|b| (b, "Failed loading library blob"))?;
    let mut code = b"#!".to_vec();
    code.extend_from_slice(&engine);
    code.extend_from_slice(b" name=");
    code.extend_from_slice(&name);
    code.push(b'\n');
    code.extend_from_slice(&blob);
    Ok(code)
}

/// Logs an AUX field as Redis does when it loads one.
fn log_aux(k: &[u8], v: &[u8]) {
    let v_s = String::from_utf8_lossy(v);
    let num = || v_s.trim().parse::<i64>().unwrap_or(0);
    if k.first() == Some(&b'%') {
        log::notice(&format!("RDB '{}': {}", String::from_utf8_lossy(k), v_s));
        return;
    }
    match &k.to_ascii_lowercase()[..] {
        b"redis-ver" => log::notice(&format!("Loading RDB produced by version {v_s}")),
        b"ctime" => {
            let age = (clock::real_now_us() / 1_000_000 - num()).max(0);
            log::notice(&format!("RDB age {age} seconds"));
        }
        b"used-mem" => log::notice(&format!(
            "RDB memory usage when created {:.2} Mb",
            num() as f64 / (1024.0 * 1024.0)
        )),
        b"aof-preamble" if num() != 0 => log::notice("RDB has an AOF tail"),
        b"aof-base" if num() != 0 => log::notice("RDB is base AOF"),
        _ => {}
    }
}

/// [`load_dataset`] with options. Reads RDB versions 1 to 12; the dataset
/// is replaced only when the whole image loads (checksum included), except
/// with `keep` (DEBUG RELOAD NOFLUSH), which loads in place as Redis does
/// and keeps what a failed load added.
pub fn load_dataset_with(
    server: &mut Server,
    data: &[u8],
    opts: &LoadOptions,
) -> Result<LoadInfo, LoadError> {
    if data.len() < 9 || &data[..5] != b"REDIS" {
        return Err(fail("Wrong signature trying to load DB from file".into()));
    }
    let ver: u32 = std::str::from_utf8(&data[5..9])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if ver < 1 || ver > RDB_VERSION_MAX_READ as u32 {
        return Err(fail(format!("Can't handle RDB format version {ver}")));
    }
    let ndbs = server.ks.dbs.len();
    let mut dbs: Vec<Db> = (0..ndbs).map(Db::new).collect();
    let mut functions = Functions::default();
    if opts.keep {
        // Loaded into the live data; put back as it then is, loaded or not
        // (Redis leaves what a failed load added).
        for (live, kept) in server.ks.dbs.iter_mut().zip(dbs.iter_mut()) {
            live.swap_data(kept);
        }
        functions = std::mem::take(&mut server.script.functions);
    }
    let loaded = load_into(server, data, opts, ver, &mut dbs, &mut functions);
    if loaded.is_ok() || opts.keep {
        for (live, loaded) in server.ks.dbs.iter_mut().zip(dbs.iter_mut()) {
            live.swap_data(loaded);
        }
        server.script.functions = functions;
    }
    let info = loaded?;
    if info.empty_skipped > 0 {
        log::warning(&format!(
            "Done loading RDB, keys loaded: {}, keys expired: {}, empty keys skipped: {}.",
            info.keys, info.expired_skipped, info.empty_skipped
        ));
    } else {
        log::notice(&format!(
            "Done loading RDB, keys loaded: {}, keys expired: {}.",
            info.keys, info.expired_skipped
        ));
    }
    Ok(info)
}

/// Reads the image after its header into `dbs` and `functions`.
fn load_into(
    server: &mut Server,
    data: &[u8],
    opts: &LoadOptions,
    ver: u32,
    dbs: &mut [Db],
    functions: &mut Functions,
) -> Result<LoadInfo, LoadError> {
    let limits = Limits::from_config(&server.config);
    let lfu_policy = server
        .config
        .get("maxmemory-policy")
        .unwrap_or("")
        .contains("lfu");
    let keep_expired = opts.keep_expired || !crate::repl::replica::i_am_master(server);
    let ndbs = dbs.len();
    let mut info = LoadInfo::default();
    let mut r = Reader::new(data);
    r.pos = 9;
    let now_ms = clock::now_ms();
    let mut db = 0usize;
    let (mut expire, mut idle, mut freq): (Option<i64>, Option<u64>, Option<u8>) =
        (None, None, None);
    let mut empty_skipped = 0u64;
    let mut delay = crate::persist::KeyDelay::from_config(server, "key-load-delay");
    let mut used_mem = None;
    let (mut repl_id, mut repl_offset, mut repl_db) = (None, None, None);
    loop {
        let at = r.pos;
        let t = r.byte().map_err(|b| bad_at(b, at, &info))?;
        let step: Result<(), Bad> = (|| {
            match t {
                OPCODE_EOF => {}
                OPCODE_EXPIRETIME => {
                    let s = i32::from_le_bytes(r.take(4)?.try_into().unwrap_or_default());
                    expire = Some(s as i64 * 1000);
                }
                OPCODE_EXPIRETIME_MS => {
                    expire = Some(i64::from_le_bytes(
                        r.take(8)?.try_into().unwrap_or_default(),
                    ));
                }
                OPCODE_FREQ => freq = Some(r.byte()?),
                OPCODE_IDLE => idle = Some(r.length()?),
                OPCODE_SELECTDB => {
                    let id = r.length()?;
                    if id >= ndbs as u64 {
                        return Err(Bad::Unsupported(format!(
                            "FATAL: Data file was created with a Redis server configured to handle more than {ndbs} databases. Exiting"
                        )));
                    }
                    db = id as usize;
                }
                OPCODE_RESIZEDB => {
                    let keys = r.length()?;
                    let expires = r.length()?;
                    // Sized once for what follows; the counts come from
                    // the file, so no more than its remaining bytes could
                    // hold (a key takes at least 3).
                    let cap = (r.data.len() - r.pos) as u64 / 3;
                    dbs[db].reserve(keys.min(cap) as usize, expires.min(cap) as usize);
                }
                OPCODE_SLOT_INFO => {
                    r.length()?;
                    r.length()?;
                    r.length()?;
                }
                OPCODE_AUX => {
                    let k = r.string()?;
                    let v = r.string()?;
                    log_aux(&k, &v);
                    if k.eq_ignore_ascii_case(b"used-mem") {
                        used_mem = crate::types::number::parse_i64(&v);
                    } else if k.eq_ignore_ascii_case(b"repl-id") && v.len() == 40 {
                        repl_id = Some(String::from_utf8_lossy(&v).into_owned());
                    } else if k.eq_ignore_ascii_case(b"repl-offset") {
                        repl_offset = crate::types::number::parse_i64(&v);
                    } else if k.eq_ignore_ascii_case(b"repl-stream-db") {
                        repl_db = crate::types::number::parse_i64(&v);
                    }
                }
                OPCODE_MODULE_AUX => {
                    let id = r.length()?;
                    return Err(Bad::Unsupported(format!(
                        "The RDB file contains AUX module data I can't load: no matching module '{}' (module id {id})",
                        super::read::module_type_name(id)
                    )));
                }
                // Loaded where they stand, before the keys that follow, so
                // a NOFLUSH reload stops at a library already there first.
                OPCODE_FUNCTION2 | OPCODE_FUNCTION_PRE_GA => match function_code(&mut r, t) {
                    Ok(c) => {
                        if let Err(e) = functions.load(&c, opts.allow_dup) {
                            return Err(Bad::Unsupported(format!("Failed loading library, {e}")));
                        }
                    }
                    Err((Bad::Eof, why)) => {
                        log::warning(&format!("Failed loading library, {why}"));
                        return Err(Bad::Eof);
                    }
                    Err((b, _)) => return Err(b),
                },
                _ => {
                    delay.wait();
                    let key = r.string()?;
                    let val = match r.object(t, &limits) {
                        Ok(v) => v,
                        Err(Bad::EmptyKey) => {
                            empty_skipped += 1;
                            if empty_skipped <= 10 {
                                log::warning(&format!(
                                    "rdbLoadObject skipping empty key: {}",
                                    String::from_utf8_lossy(&key)
                                ));
                            }
                            (expire, idle, freq) = (None, None, None);
                            return Ok(());
                        }
                        Err(b) => return Err(b),
                    };
                    let ex = expire.take();
                    let (i, f) = (idle.take(), freq.take());
                    if !opts.aof_preamble && !keep_expired && ex.is_some_and(|at| at < now_ms) {
                        info.expired_skipped += 1;
                        return Ok(());
                    }
                    let entry = super::loaded_entry(val, lfu_policy, f, i, now_ms);
                    if opts.allow_dup {
                        dbs[db].replace_loaded(&key, entry, ex);
                    } else if !dbs[db].add_loaded(&key, entry, ex) {
                        return Err(Bad::Unsupported(format!(
                            "RDB has duplicated key '{}' in DB {db}",
                            String::from_utf8_lossy(&key)
                        )));
                    }
                    info.keys += 1;
                    if ex.is_some() {
                        info.expires += 1;
                    }
                }
            }
            Ok(())
        })();
        step.map_err(|b| bad_at(b, at, &info))?;
        if t == OPCODE_EOF {
            if let (Some(id), Some(offset), Some(stream_db)) =
                (repl_id.take(), repl_offset, repl_db)
            {
                if offset != -1 && stream_db != -1 {
                    info.repl = Some(super::ReplInfo {
                        id,
                        offset,
                        stream_db,
                    });
                }
            }
            break;
        }
        if let Some(m) = used_mem.take() {
            crate::persist::loading::rdb_used_mem(server, m.max(0) as u64);
        }
        // INFO shows the counts as they grow (Redis counts in place).
        server.persist.snapshot.last_load_keys = info.keys;
        server.persist.snapshot.last_load_expired = info.expired_skipped;
        // Clients are served every so many bytes; a SHUTDOWN among them
        // stops the load (Redis exits from there).
        if crate::persist::loading::progress(server, r.pos as u64) {
            return Err(LoadError {
                message: "Loading interrupted by SHUTDOWN".into(),
            });
        }
    }
    if ver >= 5 {
        let at = r.pos;
        let file_crc = u64::from_le_bytes(
            r.take(8)
                .map_err(|b| bad_at(b, at, &info))?
                .try_into()
                .unwrap_or_default(),
        );
        if server.config.get("rdbchecksum") == Some("yes") && !server.persist.skip_checksum {
            if file_crc == 0 {
                log::warning("RDB file was saved with checksum disabled: no check performed.");
            } else {
                let expected = super::crc64(&data[..at]);
                if expected != file_crc {
                    let e = fail(format!(
                        "Wrong RDB checksum expected: ({expected:x}) but got ({file_crc:x}). Aborting now."
                    ));
                    // redis-check-rdb reports the offset after the checksum.
                    internal_error(r.pos, "RDB CRC error", &info);
                    return Err(e);
                }
            }
        }
    }
    info.consumed = r.pos;
    info.empty_skipped = empty_skipped;
    Ok(info)
}
