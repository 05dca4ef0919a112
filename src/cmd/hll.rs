//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE. The representation lives in
//! `types::hll`; values are ordinary strings holding Redis's exact bytes.

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::db::Typed;
use crate::error::{CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::hll::{self, REGISTERS};
use crate::types::string::Str;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("pfadd", -2, WRITE | DENYOOM | FAST, (1, 1, 1), pfadd),
    CommandSpec::new("pfcount", -2, READONLY | MAY_REPLICATE, (1, -1, 1), pfcount),
    CommandSpec::new("pfmerge", -2, WRITE | DENYOOM, (1, -1, 1), pfmerge),
    CommandSpec::new("pfdebug", 3, WRITE | DENYOOM | ADMIN, (2, 2, 1), pfdebug),
    CommandSpec::new(
        "pfselftest",
        1,
        ADMIN,
        (0, 0, 0),
        super::pfselftest::pfselftest,
    ),
];

fn not_hll() -> Error {
    Error::coded("WRONGTYPE Key is not a valid HyperLogLog string value.")
}

fn corrupt() -> Error {
    Error::coded("INVALIDOBJ Corrupted HLL object detected")
}

fn sparse_max(ctx: &Ctx) -> usize {
    ctx.srv.config.hll_sparse_max_bytes
}

/// Checks a string is an HLL (Redis's `isHLLObjectOrReply`; the type was
/// checked by the lookup).
fn check(s: &Str) -> Result<(), Error> {
    if s.as_slice().is_some_and(hll::is_valid) {
        Ok(())
    } else {
        Err(not_hll())
    }
}

/// ```text
/// PFADD key [element ...]
/// ```
/// Integer: 1 when a register changed (or the key was created), else 0.
fn pfadd(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let max = sparse_max(ctx);
    let mut updated = 0;
    let b = match ctx
        .db()
        .write_or_create(key, || Str::raw(hll::new_sparse()))?
    {
        (s, true) => {
            updated += 1;
            s.make_raw()
        }
        (s, false) => {
            check(s)?;
            s.make_raw()
        }
    };
    updated += hll::add_all(b, args.from(2), max).map_err(|_| corrupt())?;
    if updated > 0 {
        hll::invalidate_cache(b);
        ctx.modified_by(key, notify::STRING, "pfadd", updated as u64);
    }
    ctx.out().int((updated > 0) as i64);
    Ok(())
}

/// ```text
/// PFCOUNT key [key ...]
/// ```
/// Integer: the estimated cardinality (of the union, for several keys).
fn pfcount(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if args.len() > 2 {
        let mut max = Box::new([0u8; REGISTERS]);
        for k in args.from(1) {
            let Some(s) = ctx.db().read::<Str>(k)? else {
                continue;
            };
            check(s)?;
            hll::merge_into(&mut max, &s.as_bytes()).map_err(|_| corrupt())?;
        }
        let n = hll::estimate(&hll::histogram_raw(&max));
        ctx.out().int(n as i64);
        return Ok(());
    }
    let key = args.at(1);
    // Read, counting a hit or miss; a stale cached cardinality is then
    // refreshed in place, as Redis does.
    let b = match ctx.db().read_mut(key).map(Str::of_mut) {
        None => {
            ctx.out().int(0);
            return Ok(());
        }
        Some(None) => return Err(Error::WrongType),
        Some(Some(s)) => {
            check(s)?;
            s.make_raw()
        }
    };
    let n = match hll::cached(b) {
        Some(n) => n,
        None => {
            let n = hll::estimate(&hll::histogram(b).map_err(|_| corrupt())?);
            hll::set_cache(b, n);
            // Updating the cache changes the value: WATCH sees it, no event.
            ctx.db().touch(key);
            ctx.srv.ks.dirty += 1;
            n
        }
    };
    ctx.out().int(n as i64);
    Ok(())
}

/// ```text
/// PFMERGE destkey [sourcekey ...]
/// ```
/// `OK`; the destination holds the union of every input (itself included).
fn pfmerge(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let dst = args.at(1);
    let mut max = Box::new([0u8; REGISTERS]);
    let mut dense = false;
    for k in args.from(1) {
        let Some(s) = ctx.db().read::<Str>(k)? else {
            continue;
        };
        check(s)?;
        let b = s.as_bytes();
        dense |= hll::is_dense(&b);
        hll::merge_into(&mut max, &b).map_err(|_| corrupt())?;
    }
    let sparse_max = sparse_max(ctx);
    let (s, _) = ctx
        .db()
        .write_or_create(dst, || Str::raw(hll::new_sparse()))?;
    let b = s.make_raw();
    if dense {
        hll::to_dense(b).map_err(|_| corrupt())?;
    }
    hll::store_registers(b, &max, sparse_max);
    hll::invalidate_cache(b);
    ctx.modified(dst, notify::STRING, "pfadd");
    ctx.out().ok();
    Ok(())
}

/// ```text
/// PFDEBUG GETREG | DECODE | ENCODING | TODENSE key
/// ```
/// GETREG: array of the 16384 registers (converting to dense); DECODE: the
/// sparse opcodes as text; ENCODING: `dense` or `sparse`; TODENSE: 1 when converted.
fn pfdebug(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let sub = args.at(1);
    let key = args.at(2);
    let b = match ctx.db().write::<Str>(key)? {
        None => return Err(Error::msg("The specified key does not exist")),
        Some(s) => {
            check(s)?;
            s.make_raw()
        }
    };
    if sub.eq_ignore_ascii_case(b"getreg") || sub.eq_ignore_ascii_case(b"todense") {
        let converted = !hll::is_dense(b);
        if converted {
            hll::to_dense(b).map_err(|_| corrupt())?;
        }
        if sub.eq_ignore_ascii_case(b"getreg") {
            let regs = hll::registers(b);
            let out = ctx.out();
            out.array(REGISTERS);
            for r in regs {
                out.int(r as i64);
            }
        } else {
            ctx.out().int(converted as i64);
        }
        if converted {
            ctx.srv.ks.dirty += 1;
        }
    } else if sub.eq_ignore_ascii_case(b"decode") {
        let text = hll::decode_sparse(b).ok_or_else(|| Error::msg("HLL encoding is not sparse"))?;
        ctx.out().bulk(text.as_bytes());
    } else if sub.eq_ignore_ascii_case(b"encoding") {
        let e = if hll::is_dense(b) { "dense" } else { "sparse" };
        ctx.out().simple(e);
    } else {
        return Err(Error::msg(format!(
            "Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(sub)
        )));
    }
    Ok(())
}
