//! Snapshot commands: SAVE, BGSAVE, LASTSAVE (the work is in `persist::snapshot`).

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{CmdResult, Error, BGSAVE_IN_PROGRESS, BGSAVE_OTHER_CHILD};
use crate::persist::child::Kind;
use crate::persist::snapshot;
use crate::server::Ctx;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "save",
        1,
        NO_ASYNC_LOADING | ADMIN | NOSCRIPT | NO_MULTI,
        (0, 0, 0),
        save,
    ),
    CommandSpec::new(
        "bgsave",
        -1,
        NO_ASYNC_LOADING | ADMIN | NOSCRIPT,
        (0, 0, 0),
        bgsave,
    ),
    CommandSpec::new("lastsave", 1, LOADING | STALE | FAST, (0, 0, 0), lastsave),
];

/// ```text
/// SAVE
/// ```
/// `OK` once the dataset is on disk; `ERR` alone when the save failed (the
/// log says why), as Redis.
fn save(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    if ctx.srv.persist.child.is(Kind::Rdb) {
        return Err(Error::msg(BGSAVE_IN_PROGRESS));
    }
    ctx.srv.persist.snapshot.saves += 1;
    snapshot::save(ctx.srv).map_err(|_| Error::Bare)?;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// BGSAVE [SCHEDULE]
/// ```
/// `Background saving started`; `Background saving scheduled` when another
/// child runs and SCHEDULE was given, or inside MULTI/EXEC (the cron starts
/// it later).
fn bgsave(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let schedule = match args.len() {
        1 => false,
        2 if args.at(1).eq_ignore_ascii_case(b"schedule") => true,
        _ => return Err(Error::Syntax),
    };
    let child = &ctx.srv.persist.child;
    if child.is(Kind::Rdb) {
        return Err(Error::msg(BGSAVE_IN_PROGRESS));
    }
    if child.active() || ctx.in_exec {
        if !(schedule || ctx.in_exec) {
            return Err(Error::msg(BGSAVE_OTHER_CHILD));
        }
        ctx.srv.persist.snapshot.scheduled = true;
        ctx.out().simple("Background saving scheduled");
        return Ok(());
    }
    snapshot::bgsave(ctx.srv).map_err(|_| Error::Bare)?;
    ctx.out().simple("Background saving started");
    Ok(())
}

/// ```text
/// LASTSAVE
/// ```
/// Integer: unix time of the last successful save (start-up time when none).
fn lastsave(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let t = ctx.srv.last_save_unix;
    ctx.out().int(t);
    Ok(())
}

/// ```text
/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]
/// ```
/// Saves the dataset (unless NOSAVE) and loads it back in place: `OK`;
/// `ERR` alone when the save failed, `Error trying to load the RDB dump`
/// when the load did. The load replaces the dataset and the functions;
/// NOFLUSH loads over them (a key or library already there fails the load,
/// leaving what was loaded until then), and MERGE lets the file's copy
/// replace it, as Redis's `RDBFLAGS_ALLOW_DUP`.
pub fn debug_reload(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mut save = true;
    let mut opts = crate::persist::rdb::LoadOptions::default();
    for opt in args.by_ref() {
        if opt.eq_ignore_ascii_case(b"nosave") {
            save = false;
        } else if opt.eq_ignore_ascii_case(b"merge") {
            opts.allow_dup = true;
        } else if opt.eq_ignore_ascii_case(b"noflush") {
            opts.keep = true;
        } else {
            return Err(Error::msg(
                "DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    if save {
        snapshot::save(ctx.srv).map_err(|_| Error::Bare)?;
    }
    let data = std::fs::read(snapshot::rdb_path(ctx.srv))
        .map_err(|_| Error::msg("Error trying to load the RDB dump"))?;
    // Other clients are served meanwhile, answered LOADING (as Redis).
    crate::persist::loading::start(ctx.srv, data.len() as u64);
    let loaded = crate::persist::rdb::load_dataset_with(ctx.srv, &data, &opts);
    crate::persist::loading::stop(ctx.srv);
    match loaded {
        Ok(info) => {
            ctx.srv.persist.snapshot.last_load_keys = info.keys;
            ctx.srv.persist.snapshot.last_load_expired = info.expired_skipped;
        }
        Err(e) => {
            crate::log::warning(&e.message);
            return Err(Error::msg("Error trying to load the RDB dump"));
        }
    }
    crate::log::warning("DB reloaded by DEBUG RELOAD");
    ctx.out().ok();
    Ok(())
}
