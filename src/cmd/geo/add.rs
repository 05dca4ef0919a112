//! GEOADD: ZADD with each position turned into its 52-bit score.

use super::*;
use crate::command::Argv;
use crate::error::CmdResult;
use crate::server::Ctx;

/// ```text
/// GEOADD key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]
/// ```
/// Integer: members added (added + updated with CH). Runs and propagates
/// as `ZADD key [options] score member ...`, as Redis does, so its
/// keyspace events are ZADD's.
pub fn geoadd(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (mut nx, mut xx) = (false, false);
    let mut first = 2;
    while first < args.len() {
        let a = args.at(first);
        if a.eq_ignore_ascii_case(b"nx") {
            nx = true;
        } else if a.eq_ignore_ascii_case(b"xx") {
            xx = true;
        } else if !a.eq_ignore_ascii_case(b"ch") {
            break;
        }
        first += 1;
    }
    if !(args.len() - first).is_multiple_of(3) || (xx && nx) {
        return Err(Error::Syntax);
    }
    let mut zadd = Argv::default();
    zadd.push(b"zadd");
    for a in args.from(1).take(first - 1) {
        zadd.push(a);
    }
    let mut digits = itoa::Buffer::new();
    for t in (first..args.len()).step_by(3) {
        let (lon, lat) = parse_lonlat(args.at(t), args.at(t + 1))?;
        let score = hash::encode_score(lon, lat).expect("a checked position encodes");
        zadd.push(digits.format(score).as_bytes());
        zadd.push(args.at(t + 2));
    }
    crate::cmd::zset::zadd(ctx, &mut zadd.args())?;
    if ctx.propagating() {
        let argv: Vec<&[u8]> = (0..zadd.len()).map(|i| zadd.at(i)).collect();
        ctx.propagate_as(&argv);
    }
    Ok(())
}
