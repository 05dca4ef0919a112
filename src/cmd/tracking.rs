//! Client-side caching commands: CLIENT TRACKING, CLIENT CACHING, CLIENT
//! GETREDIR, CLIENT TRACKINGINFO (the state lives in `server::tracking`).
//!
//! CLIENT is the server family's container (`cmd::server::client`); its
//! subcommand table points at the handlers here.

use crate::command::Args;
use crate::error::{CmdResult, Error};
use crate::server::tracking::{self, Options};
use crate::server::Ctx;

/// Redis's `stringCheckPrefix`: one is a prefix of the other.
fn overlaps(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// ```text
/// CLIENT TRACKING <ON | OFF> [REDIRECT client-id] [PREFIX prefix
///     [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]
/// ```
/// `OK`.
pub fn client_tracking(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let mode = args.at(2);
    args.set_pos(3);
    let mut o = Options {
        redirect: 0,
        bcast: false,
        optin: false,
        optout: false,
        noloop: false,
        prefixes: Vec::new(),
    };
    while let Some(a) = args.next() {
        let more = args.has_more();
        if a.eq_ignore_ascii_case(b"redirect") && more {
            if o.redirect != 0 {
                return Err(Error::msg(
                    "A client can only redirect to a single other client",
                ));
            }
            let id = args.next_i64()?;
            if id <= 0
                || !(ctx.srv.clients.contains_key(&(id as u64)) || ctx.client.id == id as u64)
            {
                return Err(Error::msg(
                    "The client ID you want redirect to does not exist",
                ));
            }
            o.redirect = id as u64;
        } else if a.eq_ignore_ascii_case(b"bcast") {
            o.bcast = true;
        } else if a.eq_ignore_ascii_case(b"optin") {
            o.optin = true;
        } else if a.eq_ignore_ascii_case(b"optout") {
            o.optout = true;
        } else if a.eq_ignore_ascii_case(b"noloop") {
            o.noloop = true;
        } else if a.eq_ignore_ascii_case(b"prefix") && more {
            o.prefixes.push(args.next_or_syntax()?.to_vec());
        } else {
            return Err(Error::Syntax);
        }
    }
    if mode.eq_ignore_ascii_case(b"off") {
        tracking::disable(ctx.srv, ctx.client);
        ctx.out().ok();
        return Ok(());
    }
    if !mode.eq_ignore_ascii_case(b"on") {
        return Err(Error::Syntax);
    }
    if !o.bcast && !o.prefixes.is_empty() {
        return Err(Error::msg(
            "PREFIX option requires BCAST mode to be enabled",
        ));
    }
    let cur = ctx.client.tracking.as_deref();
    if cur.is_some_and(|t| t.bcast != o.bcast) {
        return Err(Error::msg("You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    if o.bcast && (o.optin || o.optout) {
        return Err(Error::msg("OPTIN and OPTOUT are not compatible with BCAST"));
    }
    if o.optin && o.optout {
        return Err(Error::msg(
            "You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if cur.is_some_and(|t| (o.optin && t.optout) || (o.optout && t.optin)) {
        return Err(Error::msg("You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    if o.bcast {
        let empty = Default::default();
        let existing = cur.map_or(&empty, |t| &t.prefixes);
        for (i, p) in o.prefixes.iter().enumerate() {
            if let Some(e) = existing.iter().find(|e| overlaps(e, p)) {
                return Err(Error::msg(format!(
                    "Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                    String::from_utf8_lossy(p),
                    String::from_utf8_lossy(e)
                )));
            }
            if let Some(q) = o.prefixes[i + 1..].iter().find(|q| overlaps(p, q)) {
                let msg = format!(
                    "Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                    String::from_utf8_lossy(p),
                    String::from_utf8_lossy(q)
                );
                if i == 0 {
                    return Err(Error::msg(msg));
                }
                // Redis 7.0 reports this clash but, past the first prefix,
                // goes on to enable tracking and answer OK as well
                // (`checkPrefixCollisionsOrReply` returns the index).
                ctx.out().error_line(&Error::msg(msg).text());
                break;
            }
        }
    }
    tracking::enable(ctx.srv, ctx.client, o);
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLIENT CACHING <YES | NO>
/// ```
/// `OK`: the next command's reads are tracked (OPTIN) or not (OPTOUT).
pub fn client_caching(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let Some(t) = ctx.client.tracking.as_deref_mut() else {
        return Err(Error::msg("CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"));
    };
    let opt = args.at(2);
    if opt.eq_ignore_ascii_case(b"yes") {
        if !t.optin {
            return Err(Error::msg(
                "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if opt.eq_ignore_ascii_case(b"no") {
        if !t.optout {
            return Err(Error::msg(
                "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(Error::Syntax);
    }
    t.caching = true;
    ctx.out().ok();
    Ok(())
}

/// ```text
/// CLIENT GETREDIR
/// ```
/// Integer: the redirect client id, 0 without redirect, -1 when not tracking.
pub fn client_getredir(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let r = ctx
        .client
        .tracking
        .as_deref()
        .map_or(-1, |t| t.redirect as i64);
    ctx.out().int(r);
    Ok(())
}

/// ```text
/// CLIENT TRACKINGINFO
/// ```
/// Map: `flags` (set), `redirect` (integer), `prefixes` (array).
pub fn client_trackinginfo(ctx: &mut Ctx, _: &mut Args) -> CmdResult {
    let t = ctx.client.tracking.as_deref();
    let mut flags: Vec<&str> = vec![if t.is_some() { "on" } else { "off" }];
    if let Some(t) = t {
        if t.bcast {
            flags.push("bcast");
        }
        if t.optin {
            flags.push("optin");
            if t.caching {
                flags.push("caching-yes");
            }
        }
        if t.optout {
            flags.push("optout");
            if t.caching {
                flags.push("caching-no");
            }
        }
        if t.noloop {
            flags.push("noloop");
        }
        if t.broken_redir {
            flags.push("broken_redirect");
        }
    }
    let redirect = t.map_or(-1, |t| t.redirect as i64);
    let prefixes: Vec<Vec<u8>> = t.map_or(Vec::new(), |t| t.prefixes.iter().cloned().collect());
    let out = ctx.out();
    out.map(3);
    out.bulk(b"flags");
    out.set(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"redirect");
    out.int(redirect);
    out.bulk(b"prefixes");
    out.array(prefixes.len());
    for p in &prefixes {
        out.bulk(p);
    }
    Ok(())
}
