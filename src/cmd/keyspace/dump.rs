//! DUMP and RESTORE: a key's value as Redis's serialized payload (RDB object, RDB version, CRC64), and back.

use crate::clock;
use crate::command::Args;
use crate::error::{CmdResult, Error};
use crate::persist::rdb::{self, read::Limits, PayloadError};
use crate::server::{notify, Ctx};
use crate::types::number::parse_i64;

/// ```text
/// DUMP key
/// ```
/// Bulk string: the serialized value, or null when the key is missing.
pub fn dump(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let compress = ctx.srv.config.get("rdbcompression") == Some("yes");
    let (db, out) = ctx.db_out();
    match db.get(args.at(1)) {
        Some(v) => {
            let payload = rdb::dump_value(v, compress);
            out.bulk(&payload);
        }
        None => out.null(),
    }
    Ok(())
}

/// ```text
/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
/// ```
/// `OK`. A ttl already in the past leaves no key (deleting one that
/// REPLACE would have replaced); a relative ttl propagates as ABSTTL.
pub fn restore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut j = 4;
    while j < args.len() {
        let opt = args.at(j);
        let more = args.len() - j - 1;
        if opt.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if opt.eq_ignore_ascii_case(b"absttl") {
            absttl = true;
        } else if opt.eq_ignore_ascii_case(b"idletime") && more >= 1 && freq.is_none() {
            let v = parse_i64(args.at(j + 1)).ok_or(Error::NotInteger)?;
            if v < 0 {
                return Err(Error::msg("Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(v);
            j += 1;
        } else if opt.eq_ignore_ascii_case(b"freq") && more >= 1 && idle.is_none() {
            let v = parse_i64(args.at(j + 1)).ok_or(Error::NotInteger)?;
            if !(0..=255).contains(&v) {
                return Err(Error::msg("Invalid FREQ value, must be >= 0 and <= 255"));
            }
            freq = Some(v);
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let key = args.at(1);
    if !replace && ctx.db().get_mut(key).is_some() {
        return Err(Error::coded("BUSYKEY Target key name already exists."));
    }
    let mut ttl = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    if ttl < 0 {
        return Err(Error::msg("Invalid TTL value, must be >= 0"));
    }
    let limits = Limits::from_config(&ctx.srv.config);
    let skip_crc = ctx.srv.persist.skip_checksum;
    let val = rdb::restore_value(args.at(3), &limits, skip_crc).map_err(|e| match e {
        PayloadError::VersionOrChecksum => Error::msg("DUMP payload version or checksum are wrong"),
        PayloadError::BadFormat(why) => {
            crate::log::verbose(&format!("RESTORE payload refused: {why}"));
            Error::msg("Bad data format")
        }
    })?;
    // REPLACE removes the old value without a `del` event of its own.
    let deleted = replace && ctx.db().delete(key, crate::db::Why::ServerDel);
    let now = clock::now_ms();
    if ttl != 0 && !absttl {
        ttl = ttl.saturating_add(now);
    }
    if ttl != 0 && ttl <= now && !crate::db::loading() {
        if deleted {
            ctx.modified(key, notify::GENERIC, "del");
            ctx.propagate_as(&[b"DEL", key]);
        }
        ctx.out().ok();
        return Ok(());
    }
    let lfu_policy = ctx
        .srv
        .config
        .get("maxmemory-policy")
        .is_some_and(|p| p.contains("lfu"));
    let entry = rdb::loaded_entry(
        val,
        lfu_policy,
        freq.map(|f| f as u8),
        idle.map(|i| i as u64),
        now,
    );
    ctx.db().put(key, entry, (ttl != 0).then_some(ttl));
    if ttl != 0 && !absttl && ctx.propagating() {
        let mut ms = itoa::Buffer::new();
        let mut argv: Vec<&[u8]> = vec![args.at(0), key, ms.format(ttl).as_bytes()];
        argv.extend((3..args.len()).map(|i| args.at(i)));
        argv.push(b"ABSTTL");
        ctx.propagate_as(&argv);
    }
    ctx.modified(key, notify::GENERIC, "restore");
    ctx.out().ok();
    Ok(())
}
