//! BGREWRITEAOF the Redis 7 way (a new incr file at the start, a new base from the rewrite, the manifest switched atomically at the end), the automatic rewrite, and `appendonly` turned on and off.

use super::feed::Sink;
use super::{load, manifest, now_secs, Aof, State};
use crate::error::{CmdResult, Error};
use crate::persist::child::{self, Exit, Kind};
use crate::server::{Ctx, Server};

/// A rewrite in progress: the child's pid (its temp files are named after it).
pub(super) struct Child {
    pid: i32,
}

/// Consecutive failures before the automatic rewrite backs off
/// (`AOF_REWRITE_LIMITE_THRESHOLD`), and the longest back-off in minutes.
const LIMIT_THRESHOLD: u64 = 3;
const LIMIT_MAX_MINUTES: i64 = 60;

/// ```text
/// BGREWRITEAOF
/// ```
/// A status reply: the rewrite started, or was scheduled (another child
/// runs, or inside MULTI); an error when one already runs or it can't start.
pub fn bgrewriteaof_command(ctx: &mut Ctx) -> CmdResult {
    if ctx.srv.aof.rewriting() {
        return Err(Error::msg(
            "Background append only file rewriting already in progress",
        ));
    }
    if ctx.srv.persist.child.active() || ctx.in_exec {
        ctx.srv.aof.rewrite_scheduled = true;
        // A rewrite asked for by hand runs at once, whatever the back-off.
        ctx.srv.aof.rewrite_failures = 0;
        ctx.out()
            .simple("Background append only file rewriting scheduled");
        return Ok(());
    }
    if rewrite_background(ctx.srv).is_err() {
        return Err(Error::msg("Can't execute an AOF background rewriting. Please check the server logs for more information."));
    }
    ctx.out()
        .simple("Background append only file rewriting started");
    Ok(())
}

/// The AOF's part of the cron: a scheduled or automatic rewrite, a
/// postponed write, a write that failed retried once a second, and the
/// buffer written as before every round's replies.
pub fn cron(srv: &mut Server) {
    if !srv.persist.child.active() && srv.aof.rewrite_scheduled && !limited(&mut srv.aof) {
        let _ = rewrite_background(srv);
    }
    if !srv.persist.child.active() && auto_rewrite_due(srv) {
        let _ = rewrite_background(srv);
    }
    if srv.aof.state == State::Off {
        return;
    }
    let now = now_secs();
    if srv.aof.postponed() || (srv.aof.write_error.is_some() && now > srv.aof.last_retry) {
        srv.aof.last_retry = now;
        super::writer::flush(srv, false);
    }
    super::writer::flush(srv, false);
}

/// `auto-aof-rewrite-percentage` / `-min-size`: the AOF grew by that much
/// since the last rewrite.
fn auto_rewrite_due(srv: &mut Server) -> bool {
    let perc = srv.config.get_i64("auto-aof-rewrite-percentage");
    let min = srv.config.get_i64("auto-aof-rewrite-min-size").max(0) as u64;
    let aof = &mut srv.aof;
    if aof.state != State::On || perc == 0 || aof.current_size <= min {
        return false;
    }
    let base = aof.rewrite_base_size.max(1);
    let growth = (aof.current_size * 100 / base) as i64 - 100;
    if growth < perc || limited(aof) {
        return false;
    }
    crate::log::notice(&format!(
        "Starting automatic rewriting of AOF on {growth}% growth"
    ));
    true
}

/// After repeated failures, automatic rewrites wait 1, 2, 4 ... 60 minutes
/// (Redis's `aofRewriteLimited`); BGREWRITEAOF resets the count.
fn limited(aof: &mut Aof) -> bool {
    if aof.rewrite_failures < LIMIT_THRESHOLD {
        aof.next_delay_minutes = 0;
        aof.next_rewrite_time = 0;
        return false;
    }
    let now = now_secs();
    if aof.next_rewrite_time != 0 {
        if now < aof.next_rewrite_time {
            return true;
        }
        aof.next_rewrite_time = 0;
        return false;
    }
    aof.next_delay_minutes = if aof.next_delay_minutes == 0 {
        1
    } else {
        (aof.next_delay_minutes * 2).min(LIMIT_MAX_MINUTES)
    };
    aof.next_rewrite_time = now + aof.next_delay_minutes * 60;
    crate::log::warning(&format!("Background AOF rewrite has repeatedly failed and triggered the limit, will retry in {} minutes", aof.next_delay_minutes));
    true
}

/// Starts a rewrite (Redis's `rewriteAppendOnlyFileBackground`): the buffer
/// written, a new incr file opened (and listed in the manifest), then the
/// new base written. Err when it could not start (logged).
pub fn rewrite_background(srv: &mut Server) -> Result<(), ()> {
    if srv.persist.child.active() {
        return Err(());
    }
    if load::create_dir(&srv.aof).is_err() {
        srv.aof.lastbgrewrite_ok = false;
        return Err(());
    }
    // The next command goes to the new incr file after a SELECT.
    srv.prop.forget_aof_selected();
    super::writer::flush(srv, true);
    if open_new_incr(&mut srv.aof).is_err() {
        srv.aof.lastbgrewrite_ok = false;
        return Err(());
    }
    srv.aof.rewrites += 1;
    // The child sees the dataset as of the fork, which is exactly what the
    // new incr file starts after.
    let rdb = srv.config.get("aof-use-rdb-preamble") == Some("yes");
    let spawned = child::spawn(srv, Kind::Aof, move |srv| {
        let tmp = temp_base_name(std::process::id() as i32);
        match super::rewrite::write_base(srv, &srv.aof.workdir.join(&tmp), rdb) {
            Ok(()) => {
                crate::log::notice(&format!(
                    "Successfully created the temporary AOF base file {tmp}"
                ));
                Ok(())
            }
            Err(e) => {
                crate::log::warning(&e);
                Err(crate::persist::Failed)
            }
        }
    });
    let pid = match spawned {
        Ok(pid) => pid,
        Err(e) => {
            srv.aof.lastbgrewrite_ok = false;
            crate::log::warning(&format!(
                "Can't rewrite append only file in background: fork: {}",
                manifest::os(&e)
            ));
            return Err(());
        }
    };
    crate::log::notice(&format!(
        "Background append only file rewriting started by pid {pid}"
    ));
    srv.aof.rewrite_scheduled = false;
    srv.aof.rewrite_time_start = now_secs();
    srv.aof.child = Some(Child { pid });
    if srv.aof.state == State::WaitRewrite {
        start_feeding(srv);
    }
    Ok(())
}

/// The base a rewrite child writes (`temp-rewriteaof-bg-<pid>.aof`).
fn temp_base_name(pid: i32) -> String {
    format!("temp-rewriteaof-bg-{pid}.aof")
}

/// The incr file commands go to from now on (Redis's
/// `openNewIncrAofForAppend`): listed in the manifest at once when the AOF
/// is on; a temp file while waiting for the first base.
fn open_new_incr(aof: &mut Aof) -> Result<(), ()> {
    if aof.state == State::Off {
        return Ok(());
    }
    let mut next = None;
    let name = if aof.state == State::WaitRewrite {
        temp_incr_name(aof)
    } else {
        let mut m = aof.manifest.clone();
        let n = m.new_incr(&aof.filename);
        next = Some(m);
        n
    };
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(aof.path(&name))
        .and_then(|f| f.set_len(0).map(|()| f))
        .map_err(|e| {
            crate::log::warning(&format!(
                "Can't open the append-only file {name}: {}",
                manifest::os(&e)
            ))
        })?;
    if let Some(m) = next.as_mut() {
        m.persist(&aof.dirname, &aof.filename)
            .map_err(|e| crate::log::warning(&e))?;
    }
    crate::log::notice(&format!(
        "Creating AOF incr file {name} on background rewrite"
    ));
    aof.switch_file(file, 0);
    if let Some(m) = next {
        aof.manifest = m;
    }
    Ok(())
}

/// Stops a running rewrite and removes its temp files, without the
/// completion handler (Redis's `killAppendOnlyChild`).
pub(super) fn kill_child(srv: &mut Server) {
    let Some(c) = srv.aof.child.take() else {
        return;
    };
    crate::log::notice(&format!("Killing running AOF rewrite child: {}", c.pid));
    child::kill(srv);
    remove_temp_files(&srv.aof, c.pid);
    srv.aof.rewrite_time_start = -1;
}

/// Redis's `aofRemoveTempFile`.
fn remove_temp_files(aof: &Aof, pid: i32) {
    let _ = std::fs::remove_file(aof.workdir.join(temp_base_name(pid)));
    let _ = std::fs::remove_file(aof.workdir.join(format!("temp-rewriteaof-{pid}.aof")));
}

fn temp_incr_name(aof: &Aof) -> String {
    format!("temp-{}.incr", aof.filename)
}

/// The rewrite ended (Redis's `backgroundRewriteDoneHandler`): on success
/// the temp base becomes the new base, the incr files it covers become
/// history, and the manifest switches in one rename.
pub fn rewrite_done(srv: &mut Server, exit: Exit) {
    let Some(child) = srv.aof.child.take() else {
        return;
    };
    let tmp = temp_base_name(child.pid);
    if exit == Exit::Ok {
        crate::log::notice("Background AOF rewrite terminated with success");
        let rdb = srv.config.get("aof-use-rdb-preamble") == Some("yes");
        if install(&mut srv.aof, &tmp, rdb).is_ok() {
            srv.aof.lastbgrewrite_ok = true;
            srv.aof.rewrite_failures = 0;
            crate::log::notice("Background AOF rewrite finished successfully");
            if srv.aof.state == State::WaitRewrite {
                srv.aof.state = State::On;
            }
        } else {
            srv.aof.lastbgrewrite_ok = false;
            srv.aof.rewrite_failures += 1;
        }
    } else if let Exit::Killed(sig) = exit {
        // SIGUSR1 is how a rewrite is stopped on purpose: no error.
        if exit.is_failure() {
            srv.aof.lastbgrewrite_ok = false;
            srv.aof.rewrite_failures += 1;
        }
        crate::log::warning(&format!(
            "Background AOF rewrite terminated by signal {sig}"
        ));
    } else {
        srv.aof.lastbgrewrite_ok = false;
        srv.aof.rewrite_failures += 1;
        crate::log::warning("Background AOF rewrite terminated with error");
    }
    remove_temp_files(&srv.aof, child.pid);
    if srv.aof.state == State::WaitRewrite {
        // Nothing of what was collected is kept: the next rewrite starts over.
        if let Some(sink) = srv.prop.aof.as_mut() {
            sink.buf.clear();
        }
        srv.prop.aof = None;
        let name = temp_incr_name(&srv.aof);
        crate::log::notice(&format!(
            "Removing the temp incr aof file {name} in the background"
        ));
        let _ = std::fs::remove_file(srv.aof.path(&name));
        srv.aof.rewrite_scheduled = true;
    }
    let aof = &mut srv.aof;
    aof.rewrite_time_last = now_secs() - aof.rewrite_time_start;
    aof.rewrite_time_start = -1;
}

/// Renames the new base (and, when the AOF was just turned on, the temp
/// incr file) into place and persists the manifest that lists them.
fn install(aof: &mut Aof, tmp: &str, rdb: bool) -> Result<(), ()> {
    let mut m = aof.manifest.clone();
    let base = m.new_base(&aof.filename, rdb);
    let base_path = aof.path(&base);
    if let Err(e) = std::fs::rename(aof.workdir.join(tmp), &base_path) {
        crate::log::warning(&format!(
            "Error trying to rename the temporary AOF base file {tmp} into {}: {}",
            base_path.display(),
            manifest::os(&e)
        ));
        return Err(());
    }
    crate::log::notice(&format!(
        "Successfully renamed the temporary AOF base file {tmp} into {base}"
    ));
    let mut new_incr = None;
    if aof.state == State::WaitRewrite {
        let temp = temp_incr_name(aof);
        let name = m.new_incr(&aof.filename);
        let (from, to) = (aof.path(&temp), aof.path(&name));
        if let Err(e) = std::fs::rename(&from, &to) {
            crate::log::warning(&format!(
                "Error trying to rename the temporary AOF incr file {} into {}: {}",
                from.display(),
                to.display(),
                manifest::os(&e)
            ));
            let _ = std::fs::remove_file(&base_path);
            return Err(());
        }
        crate::log::notice(&format!(
            "Successfully renamed the temporary AOF incr file {temp} into {name}"
        ));
        new_incr = Some(to);
    }
    m.mark_rewritten_incr_as_history(aof.file.is_some());
    if let Err(e) = m.persist(&aof.dirname, &aof.filename) {
        crate::log::warning(&e);
        let _ = std::fs::remove_file(&base_path);
        if let Some(p) = new_incr {
            let _ = std::fs::remove_file(p);
        }
        return Err(());
    }
    aof.manifest = m;
    if aof.state != State::Off {
        let size = super::file_size(aof, &base).unwrap_or(0);
        aof.current_size = size + aof.incr_size();
        aof.rewrite_base_size = aof.current_size;
    }
    delete_history(aof);
    Ok(())
}

/// Removes history files (unless `aof-disable-auto-gc`), then persists the
/// manifest without them (Redis's `aofDelHistoryFiles`).
pub(super) fn delete_history(aof: &mut Aof) {
    if aof.disable_auto_gc || aof.manifest.history.is_empty() {
        return;
    }
    for f in std::mem::take(&mut aof.manifest.history) {
        crate::log::notice(&format!(
            "Removing the history file {} in the background",
            f.name
        ));
        let _ = std::fs::remove_file(aof.path(&f.name));
    }
    aof.manifest.dirty = true;
    if let Err(e) = aof.manifest.persist(&aof.dirname, &aof.filename) {
        crate::log::warning(&e);
    }
}

/// Propagation starts appending to the AOF buffer, after a SELECT.
pub(super) fn start_feeding(srv: &mut Server) {
    if srv.prop.aof.is_none() {
        srv.prop.aof = Some(Sink {
            timestamps: srv.config.get("aof-timestamp-enabled") == Some("yes"),
            ..Default::default()
        });
    }
    srv.prop.forget_aof_selected();
}

/// CONFIG SET appendonly yes (Redis's `startAppendOnly`): a rewrite writes
/// the first base; commands go to a temp incr file meanwhile.
pub(crate) fn start_append_only(srv: &mut Server, in_exec: bool) -> Result<(), ()> {
    srv.aof.state = State::WaitRewrite;
    if srv.persist.child.active() && !srv.persist.child.is(Kind::Aof) {
        srv.aof.rewrite_scheduled = true;
        crate::log::warning("AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible.");
    } else if in_exec {
        srv.aof.rewrite_scheduled = true;
        crate::log::warning("AOF was enabled during a transaction. An AOF background was scheduled to start when possible.");
    } else {
        if srv.persist.child.is(Kind::Aof) {
            crate::log::warning("AOF was enabled but there is already an AOF rewriting in background. Stopping background AOF and starting a rewrite now.");
            kill_child(srv);
        }
        if rewrite_background(srv).is_err() {
            srv.aof.state = State::Off;
            crate::log::warning("Redis needs to enable the AOF but can't trigger a background AOF rewrite operation. Check the above logs for more info about the error.");
            return Err(());
        }
    }
    srv.aof.last_fsync = now_secs();
    srv.aof.clear_errors();
    Ok(())
}

/// CONFIG SET appendonly no (Redis's `stopAppendOnly`).
pub(crate) fn stop_append_only(srv: &mut Server) {
    super::writer::flush(srv, true);
    srv.aof.close_file();
    srv.aof.state = State::Off;
    srv.aof.rewrite_scheduled = false;
    kill_child(srv);
    srv.prop.aof = None;
    srv.prop.forget_aof_selected();
}

/// CONFIG SET of an AOF parameter took effect; the error is what CONFIG
/// SET answers (the configuration is then restored by the caller).
pub fn config_changed(
    srv: &mut Server,
    before: &crate::config::Config,
    in_exec: bool,
) -> Result<(), String> {
    let changed = |n: &str| srv.config.get_bytes(n) != before.get_bytes(n);
    if changed("appendfsync") {
        srv.aof.fsync = super::Fsync::from_config(&srv.config);
    }
    if changed("aof-timestamp-enabled") {
        let on = srv.config.get("aof-timestamp-enabled") == Some("yes");
        if let Some(sink) = srv.prop.aof.as_mut() {
            sink.timestamps = on;
        }
    }
    if changed("aof-disable-auto-gc") {
        srv.aof.disable_auto_gc = srv.config.get("aof-disable-auto-gc") == Some("yes");
        if !srv.aof.disable_auto_gc {
            delete_history(&mut srv.aof);
        }
    }
    if changed("appendonly") {
        let on = srv.config.get("appendonly") == Some("yes");
        if !on && srv.aof.state != State::Off {
            stop_append_only(srv);
        } else if on && srv.aof.state == State::Off && start_append_only(srv, in_exec).is_err() {
            return Err("Unable to turn on AOF. Check server logs.".into());
        }
    }
    Ok(())
}
