//! XTRIM, and the trimming options XADD shares (Redis's `streamParseAddOrTrimArgsOrReply`).

use super::{int_arg, parse_strict};
use crate::command::Args;
use crate::error::{stream as err, CmdResult, Error};
use crate::server::{notify, Ctx};
use crate::types::stream::id::Given;
use crate::types::stream::{Stream, StreamId, Trim, TrimBy};

/// XADD's and XTRIM's parsed options.
pub(crate) struct AddTrim {
    /// XADD's id (None for `*`).
    pub id: Option<(StreamId, Given)>,
    pub nomkstream: bool,
    pub trim: Option<Trim>,
    /// Where the MAXLEN/MINID threshold is (the `~`/`=` is just before it when given).
    pub trim_arg: usize,
    /// Where XADD's id is.
    pub id_pos: usize,
}

/// Parses from argument 2: XADD stops at its id (the fields follow).
/// `node_entries` is `stream-node-max-entries`, for the default LIMIT of `~`.
pub(crate) fn parse(args: &Args, xadd: bool, node_entries: i64) -> Result<AddTrim, Error> {
    let mut p = AddTrim {
        id: None,
        nomkstream: false,
        trim: None,
        trim_arg: 0,
        id_pos: 0,
    };
    let mut by: Option<TrimBy> = None;
    let mut approx = false;
    let mut limit: i64 = 0;
    let mut limit_given = false;
    let argc = args.len();
    let mut i = 2;
    while i < argc {
        let more = argc - 1 - i;
        let opt = args.at(i);
        if xadd && opt == b"*" {
            break;
        } else if (opt.eq_ignore_ascii_case(b"MAXLEN") || opt.eq_ignore_ascii_case(b"MINID"))
            && more > 0
        {
            if by.is_some() {
                return Err(Error::msg(err::MAXLEN_AND_MINID));
            }
            approx = false;
            let next = args.at(i + 1);
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let arg = args.at(i + 1);
            by = Some(if opt.eq_ignore_ascii_case(b"MAXLEN") {
                let n = int_arg(arg)?;
                if n < 0 {
                    return Err(Error::msg(err::MAXLEN_NEGATIVE));
                }
                TrimBy::MaxLen(n as u64)
            } else {
                TrimBy::MinId(parse_strict(arg)?)
            });
            i += 1;
            p.trim_arg = i;
        } else if opt.eq_ignore_ascii_case(b"LIMIT") && more > 0 {
            limit = int_arg(args.at(i + 1))?;
            if limit < 0 {
                return Err(Error::msg(err::LIMIT_NEGATIVE));
            }
            limit_given = true;
            i += 1;
        } else if xadd && opt.eq_ignore_ascii_case(b"NOMKSTREAM") {
            p.nomkstream = true;
        } else if xadd {
            let parsed = StreamId::parse(opt, 0, true, true).ok_or(Error::msg(err::INVALID_ID))?;
            p.id = Some(parsed);
            break;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    p.id_pos = i;
    if limit != 0 && by.is_none() {
        return Err(Error::msg(err::LIMIT_WITHOUT_STRATEGY));
    }
    if !xadd && by.is_none() {
        return Err(Error::msg(err::XTRIM_WITHOUT_STRATEGY));
    }
    if crate::db::loading() {
        // The AOF client (Redis's `mustObeyClient`): the threshold was
        // rewritten to what the trim did, so no work limit applies.
        limit = 0;
    } else if limit_given {
        if !approx {
            return Err(Error::msg(err::LIMIT_WITHOUT_APPROX));
        }
    } else if approx {
        limit = node_entries.saturating_mul(100);
        if limit <= 0 {
            limit = 10000;
        }
        limit = limit.min(1_000_000);
    } else {
        limit = 0;
    }
    p.trim = by.map(|by| Trim {
        by,
        approx,
        limit: limit as u64,
    });
    Ok(p)
}

/// The threshold an approximate trim did in effect, propagated in its
/// place: the length left (MAXLEN) or the first id, tombstones included
/// (MINID).
pub(crate) fn exact_arg(s: &Stream, t: &Trim) -> Vec<u8> {
    match t.by {
        TrimBy::MaxLen(_) => itoa::Buffer::new().format(s.len()).as_bytes().to_vec(),
        TrimBy::MinId(_) => s.edge_id(true, false).to_bytes(),
    }
}

/// ```text
/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
/// ```
/// Integer: entries removed.
pub(crate) fn xtrim(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let key = args.at(1);
    let p = parse(args, false, ctx.srv.config.stream_node_max_entries)?;
    let t = p.trim.expect("XTRIM parses a strategy");
    let Some(s) = ctx.db().write::<Stream>(key)? else {
        ctx.out().int(0);
        return Ok(());
    };
    let deleted = s.trim(&t);
    if deleted > 0 {
        let rewritten = t.approx.then(|| exact_arg(s, &t));
        ctx.modified(key, notify::STREAM, "xtrim");
        ctx.srv.ks.dirty += deleted - 1;
        if let Some(arg) = rewritten {
            if ctx.propagating() {
                let mut argv: Vec<&[u8]> = args.from(0).collect();
                argv[p.trim_arg - 1] = b"=";
                argv[p.trim_arg] = &arg;
                ctx.propagate_as(&argv);
            }
        }
    }
    ctx.out().int(deleted as i64);
    Ok(())
}
