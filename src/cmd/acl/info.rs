//! ACL CAT, GENPASS, LOG and DRYRUN: what the ACL says without changing it.

use crate::acl::categories::{self, NAMES};
use crate::acl::check::{self, Denied};
use crate::command::gate::c_str;
use crate::command::names::Names;
use crate::command::table::table;
use crate::command::{Args, Argv};
use crate::error::{CmdResult, Error};
use crate::server::Ctx;
use crate::types::number::parse_i64;

/// ```text
/// ACL CAT [category]
/// ```
/// Array: the category names, or the commands (and subcommands) in one.
pub fn cat(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if args.len() > 3 {
        return Err(crate::cmd::server::wrong_sub_args(args, "ACL"));
    }
    let out = &mut ctx.client.reply;
    if args.len() == 2 {
        out.array(NAMES.len());
        for n in NAMES {
            out.bulk(n.as_bytes());
        }
        return Ok(());
    }
    let Some(bit) = categories::by_name(args.at(2)) else {
        return Err(Error::Msg(
            format!("Unknown category '{}'", c_str(args.at(2), 128)).into(),
        ));
    };
    let cats = categories::of_all();
    let names: Vec<&str> = table()
        .all
        .iter()
        .enumerate()
        .filter(|(id, _)| cats[*id] & bit != 0)
        .map(|(_, s)| s.name)
        .collect();
    out.array(names.len());
    for n in names {
        out.bulk(n.as_bytes());
    }
    Ok(())
}

/// Most bits ACL GENPASS gives.
const GENPASS_MAX_BITS: i64 = 4096;

/// ```text
/// ACL GENPASS [bits]
/// ```
/// Bulk string: `bits` (256) random bits as hex digits.
pub fn genpass(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if args.len() > 3 {
        return Err(crate::cmd::server::wrong_sub_args(args, "ACL"));
    }
    let mut bits = 256;
    if args.len() == 3 {
        bits = parse_i64(args.at(2)).ok_or(Error::NotInteger)?;
    }
    if bits <= 0 || bits > GENPASS_MAX_BITS {
        return Err(Error::Msg(format!("ACL GENPASS argument must be the number of bits for the output password, a positive number up to {GENPASS_MAX_BITS}").into()));
    }
    let chars = (bits as usize).div_ceil(4);
    let mut raw = vec![0u8; chars.div_ceil(2)];
    random_bytes(&mut raw);
    let mut hex = Vec::with_capacity(chars);
    for b in raw {
        hex.push(b"0123456789abcdef"[(b >> 4) as usize]);
        hex.push(b"0123456789abcdef"[(b & 15) as usize]);
    }
    hex.truncate(chars);
    ctx.out().bulk(&hex);
    Ok(())
}

/// Fills `buf` from the OS's random source.
fn random_bytes(buf: &mut [u8]) {
    use std::io::Read;
    let ok = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(buf));
    if ok.is_err() {
        // No /dev/urandom: the clock and the process mixed by SHA-256 (as
        // Redis falls back when it cannot read it).
        use sha2::{Digest, Sha256};
        let mut seed = Sha256::digest(
            format!("{}:{}", crate::clock::real_now_us(), std::process::id()).as_bytes(),
        );
        for chunk in buf.chunks_mut(32) {
            chunk.copy_from_slice(&seed[..chunk.len()]);
            seed = Sha256::digest(seed);
        }
    }
}

/// ```text
/// ACL LOG [count | RESET]
/// ```
/// Array of maps (count, reason, context, object, username, age-seconds,
/// client-info), newest first; `OK` for RESET.
pub fn log(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    if args.len() > 3 {
        return Err(crate::cmd::server::wrong_sub_args(args, "ACL"));
    }
    let mut count = 10;
    if args.len() == 3 {
        if args.at(2).eq_ignore_ascii_case(b"reset") {
            ctx.srv.acl.log.borrow_mut().entries.clear();
            ctx.out().ok();
            return Ok(());
        }
        count = parse_i64(args.at(2)).ok_or(Error::NotInteger)?.max(0);
    }
    let log = ctx.srv.acl.log.borrow();
    let n = (count as usize).min(log.entries.len());
    let now_ms = crate::clock::real_now_us() / 1000;
    let out = &mut ctx.client.reply;
    out.array(n);
    for e in log.entries.iter().take(n) {
        out.map(7);
        out.bulk(b"count");
        out.int(e.count as i64);
        out.bulk(b"reason");
        out.bulk(e.reason.name().as_bytes());
        out.bulk(b"context");
        out.bulk(e.context.name().as_bytes());
        out.bulk(b"object");
        out.bulk(&e.object);
        out.bulk(b"username");
        out.bulk(&e.username);
        out.bulk(b"age-seconds");
        out.double((now_ms - e.ctime_ms) as f64 / 1000.0);
        out.bulk(b"client-info");
        out.bulk(e.client_info.as_bytes());
    }
    Ok(())
}

/// ```text
/// ACL DRYRUN username command [arg ...]
/// ```
/// `OK` when the user could run the command; else a bulk string saying why.
pub fn dryrun(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let Some(u) = ctx.srv.acl.get(args.at(2)) else {
        return Err(Error::Msg(
            format!("User '{}' not found", String::from_utf8_lossy(args.at(2))).into(),
        ));
    };
    // The command by the names `rename-command` left (Redis's lookupCommand).
    let name = args.at(3);
    let cmd = match ctx.srv.config.names.lookup(name) {
        Some(c) if !c.spec.subcommands.is_empty() && args.len() > 4 => Names::sub(c, args.at(4)),
        c => c,
    };
    let Some(cmd) = cmd else {
        return Err(Error::Msg(
            format!("Command '{}' not found", String::from_utf8_lossy(name)).into(),
        ));
    };
    let argv = Argv::from_slices(args.from(3));
    let inner = argv.args();
    if !cmd.spec.arity_ok(inner.len()) {
        return Err(Error::Arity(cmd.spec.name.into()));
    }
    let why = match check::check(u, cmd, &inner) {
        Ok(()) => {
            ctx.out().ok();
            return Ok(());
        }
        Err(Denied::Command) => format!(
            "This user has no permissions to run the '{}' command",
            cmd.spec.name
        ),
        Err(Denied::Key(i)) => format!(
            "This user has no permissions to access the '{}' key",
            String::from_utf8_lossy(inner.at(i))
        ),
        Err(Denied::Channel(i)) => format!(
            "This user has no permissions to access the '{}' channel",
            String::from_utf8_lossy(inner.at(i))
        ),
    };
    ctx.out().bulk(why.as_bytes());
    Ok(())
}
