//! DEBUG subcommands that set a knob or answer at once: ERROR, LEAK, CHANGE-REPL-ID, STRINGMATCH-TEST, REPLICATE, QUICKLIST-PACKED-THRESHOLD, REPLYBUFFER, DROP-CLUSTER-PACKET-FILTER, CLUSTERLINK, CONFIG-REWRITE-FORCE-ALL.

use crate::command::Args;
use crate::error::{text, CmdResult, Error};
use crate::server::Ctx;

/// Redis's `packed_threshold` default: 1 GiB.
const PACKED_DEFAULT: u64 = 1 << 30;
/// Redis's `REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME`: 5 seconds.
const PEAK_RESET_DEFAULT_MS: i64 = 5000;

/// The state these subcommands keep (`Server::debug`).
#[derive(Debug)]
pub struct Knobs {
    /// QUICKLIST-PACKED-THRESHOLD, in bytes (kept and reported; Oxidis's
    /// lists have no plain nodes, see KNOWN_DIFFS).
    pub packed_threshold: u64,
    /// REPLYBUFFER PEAK-RESET-TIME in milliseconds, -1 for NEVER.
    pub peak_reset_ms: i64,
    /// DROP-CLUSTER-PACKET-FILTER (no cluster bus here: only kept).
    pub drop_packet_filter: i64,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            packed_threshold: PACKED_DEFAULT,
            peak_reset_ms: PEAK_RESET_DEFAULT_MS,
            drop_packet_filter: -1,
        }
    }
}

/// Runs `DEBUG <sub> ...` when `sub` is one of these; None otherwise.
pub fn run(ctx: &mut Ctx, sub: &[u8], args: &Args) -> Option<CmdResult> {
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    let n = args.len();
    if is("error") && n == 3 {
        // The text as given, newlines made spaces, with no code added.
        let mut line = Vec::with_capacity(args.at(2).len() + 3);
        line.push(b'-');
        line.extend(args.at(2).iter().map(|&b| match b {
            b'\r' | b'\n' => b' ',
            b => b,
        }));
        line.extend_from_slice(b"\r\n");
        ctx.out().raw(&line);
        return Some(Ok(()));
    }
    if is("leak") && n == 3 {
        // A real leak, as Redis's sdsdup with the copy dropped.
        std::mem::forget(args.at(2).to_vec());
    } else if is("change-repl-id") && n == 2 {
        crate::log::warning("Changing replication IDs after receiving DEBUG change-repl-id");
        let srv = &mut *ctx.srv;
        srv.repl.new_history(&mut srv.rng);
    } else if is("stringmatch-test") && n == 2 {
        stringmatch_fuzz(&mut ctx.srv.rng);
        ctx.out()
            .simple("Apparently Redis did not crash: test passed");
        return Some(Ok(()));
    } else if is("replicate") && n >= 3 {
        // The words go to the replicas only (not the AOF), as Redis feeds them.
        let argv: Vec<&[u8]> = (2..n).map(|i| args.at(i)).collect();
        ctx.srv.prop.feed_replicas_only(&argv);
    } else if is("quicklist-packed-threshold") && n == 3 {
        let arg = String::from_utf8_lossy(args.at(2));
        let size = crate::config::parse_memory(&arg).filter(|&v| v >= 0);
        match size {
            Some(v) if v as u64 <= (1u64 << 32) - (1 << 20) => {
                let v = v as u64;
                ctx.srv.debug.packed_threshold = if v == 0 { PACKED_DEFAULT } else { v };
            }
            _ => return Some(Err(Error::msg(text::DEBUG_PACKED_THRESHOLD))),
        }
    } else if is("replybuffer") && n == 4 {
        let (what, val) = (args.at(2), args.at(3));
        if what.eq_ignore_ascii_case(b"peak-reset-time") {
            ctx.srv.debug.peak_reset_ms = if val.eq_ignore_ascii_case(b"never") {
                -1
            } else if val.eq_ignore_ascii_case(b"reset") {
                PEAK_RESET_DEFAULT_MS
            } else {
                match crate::types::number::parse_i64(val) {
                    Some(v) => v,
                    None => return Some(Err(Error::NotInteger)),
                }
            };
        } else if what.eq_ignore_ascii_case(b"resizing") {
            ctx.srv.reply_buffer_resizing = super::debug_more::atoi(val) != 0;
        } else {
            return Some(Err(sub_syntax(args)));
        }
    } else if is("drop-cluster-packet-filter") && n == 3 {
        match crate::types::number::parse_i64(args.at(2)) {
            Some(v) => ctx.srv.debug.drop_packet_filter = v,
            None => return Some(Err(Error::NotInteger)),
        }
    } else if is("clusterlink") && n == 5 && args.at(2).eq_ignore_ascii_case(b"kill") {
        let Some(c) = ctx.srv.cluster.as_deref_mut() else {
            return Some(Err(Error::msg(text::DEBUG_CLUSTER_ONLY)));
        };
        if let Err(e) = crate::cluster::bus::kill_links(c, args.at(3), args.at(4)) {
            return Some(Err(Error::Msg(e.into())));
        }
    } else if is("config-rewrite-force-all") && n == 2 {
        return Some(rewrite_force_all(ctx));
    } else {
        return None;
    }
    ctx.out().ok();
    Some(Ok(()))
}

/// Redis's `addReplySubcommandSyntaxError`: names the subcommand as typed.
fn sub_syntax(args: &Args) -> Error {
    super::wrong_sub_args(args, "DEBUG")
}

/// DEBUG CONFIG-REWRITE-FORCE-ALL: CONFIG REWRITE writing every parameter.
fn rewrite_force_all(ctx: &mut Ctx) -> CmdResult {
    // Redis's rewriteConfig(NULL) fails with EFAULT: no config file.
    let Some(path) = ctx.srv.config.config_file.clone() else {
        return Err(Error::msg(format!(
            "{}Bad address",
            text::DEBUG_REWRITE_FAILED
        )));
    };
    let users = super::config::acl_user_lines(ctx.srv);
    match crate::config::rewrite::rewrite_all(&ctx.srv.config, &path, &users) {
        Ok(()) => {
            ctx.out().ok();
            Ok(())
        }
        Err(e) => Err(Error::msg(format!("{}{e}", text::DEBUG_REWRITE_FAILED))),
    }
}

/// DEBUG STRINGMATCH-TEST: random patterns against random strings through
/// the glob matcher (Redis's `stringmatchlen_fuzz_test`); surviving is the test.
fn stringmatch_fuzz(rng: &mut crate::server::Rng) {
    let mut pat = [0u8; 32];
    let mut s = [0u8; 32];
    for _ in 0..1000 {
        let plen = (rng.next_u64() % pat.len() as u64) as usize;
        let slen = (rng.next_u64() % s.len() as u64) as usize;
        pat[..plen]
            .iter_mut()
            .for_each(|b| *b = rng.next_u64() as u8);
        s[..slen].iter_mut().for_each(|b| *b = rng.next_u64() as u8);
        let _ = crate::types::glob::matches(&pat[..plen], &s[..slen], false);
        let _ = crate::types::glob::matches(&pat[..plen], &s[..slen], true);
    }
}
