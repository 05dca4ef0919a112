//! DEBUG subcommands on keys and persistence: OBJECT, POPULATE, LOG, SET-SKIP-CHECKSUM-VALIDATION, AOF-FLUSH-SLEEP.

use crate::command::Args;
use crate::db::Value;
use crate::error::{CmdResult, Error};
use crate::persist::rdb;
use crate::server::Ctx;
use crate::types::string::Str;

/// Runs `DEBUG <sub> ...` when `sub` is one of these; None otherwise.
pub fn run(ctx: &mut Ctx, sub: &[u8], args: &Args) -> Option<CmdResult> {
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    let n = args.len();
    if is("object") && n == 3 {
        return Some(object(ctx, args.at(2)));
    }
    if is("populate") && (3..=5).contains(&n) {
        return Some(populate(ctx, args));
    }
    if is("log") && n == 3 {
        crate::log::warning(&format!(
            "DEBUG LOG: {}",
            String::from_utf8_lossy(args.at(2))
        ));
    } else if is("aof-flush-sleep") && n == 3 {
        let us = super::debug_more::atoi(args.at(2));
        ctx.srv.aof.flush_sleep_us = us.max(0) as u64;
    } else if is("set-skip-checksum-validation") && n == 3 {
        // RESTORE payloads and RDB files are then taken without their CRC64.
        ctx.srv.persist.skip_checksum = super::debug_more::atoi(args.at(2)) != 0;
    } else {
        return None;
    }
    ctx.out().ok();
    Some(Ok(()))
}

/// ```text
/// DEBUG OBJECT key
/// ```
/// Status: `Value at:<addr> refcount:<n> encoding:<enc> serializedlength:<n>
/// lru:<clock> lru_seconds_idle:<s>`, and for lists the quicklist figures
/// (`ql_nodes`, `ql_avg_node`, `ql_listpack_max`, `ql_compressed`,
/// `ql_uncompressed_size`). The key is read as stored: neither expired nor
/// touched (Redis reads the dictionary directly).
fn object(ctx: &mut Ctx, key: &[u8]) -> CmdResult {
    let cfg = &ctx.srv.config;
    let compress = cfg.get("rdbcompression") == Some("yes");
    let lfu = cfg
        .get("maxmemory-policy")
        .is_some_and(|p| p.contains("lfu"));
    let shared_ints = crate::cmd::keyspace::object::ints_shared(cfg);
    let fill = cfg.list_max_listpack_size;
    let compressed = cfg.get_i64("list-compress-depth") != 0;
    let db = &ctx.srv.ks.dbs[ctx.client.db];
    let Some(e) = db.peek_entry(key) else {
        return Err(Error::NoSuchKey);
    };
    let mut extra = String::new();
    if let Value::List(l) = &e.val {
        let nodes = l.nodes().count();
        let bytes: usize = rdb::write::Encoder::list_node_bytes(l).sum();
        extra = format!(
            " ql_nodes:{nodes} ql_avg_node:{:.2} ql_listpack_max:{fill} ql_compressed:{} ql_uncompressed_size:{bytes}",
            l.len() as f64 / nodes.max(1) as f64,
            compressed as u8
        );
    }
    // Redis's `robj.lru`: the 24-bit LRU clock (seconds), or the LFU word.
    let lru = if lfu { e.lfu } else { e.lru & 0x00ff_ffff };
    let text = format!(
        "Value at:{:p} refcount:{} encoding:{} serializedlength:{} lru:{lru} lru_seconds_idle:{}{extra}",
        &e.val as *const Value,
        crate::cmd::keyspace::object::refcount_of(shared_ints, &e.val),
        e.val.encoding(),
        rdb::serialized_len(&e.val, compress),
        e.idle_secs(),
    );
    ctx.out().simple(&text);
    Ok(())
}

/// ```text
/// DEBUG POPULATE count [prefix] [size]
/// ```
/// `OK` after adding `prefix:<j>` = `value:<j>` for j in 0..count (prefix
/// `key`), skipping keys that exist; with `size`, each value is `size`
/// bytes: `value:<j>` cut or padded with zero bytes. As in Redis, no dirty
/// count, no keyspace event and no propagation: only WATCH sees the keys.
fn populate(ctx: &mut Ctx, args: &Args) -> CmdResult {
    // Redis's getPositiveLongFromObjectOrReply: one error for both cases.
    let positive = |b: &[u8]| match crate::types::number::parse_i64(b) {
        Some(v) if v >= 0 => Ok(v as usize),
        _ => Err(Error::MustBePositive),
    };
    let count = positive(args.at(2))?;
    let size = if args.len() == 5 {
        positive(args.at(4))?
    } else {
        0
    };
    let prefix = if args.len() >= 4 { args.at(3) } else { b"key" };
    let db = ctx.db();
    let mut key = Vec::new();
    for j in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        key.push(b':');
        key.extend_from_slice(itoa::Buffer::new().format(j).as_bytes());
        if db.get_mut(&key).is_some() {
            continue;
        }
        let mut val = format!("value:{j}").into_bytes();
        if size != 0 {
            val.resize(size, 0);
        }
        db.add_new(&key, Value::Str(Str::from_vec(val)));
        db.touch(&key);
    }
    ctx.out().ok();
    Ok(())
}
