//! GEODIST, GEOHASH, GEOPOS: reading stored positions.

use super::*;
use crate::error::CmdResult;
use crate::server::Ctx;

/// ```text
/// GEODIST key member1 member2 [M | KM | FT | MI]
/// ```
/// Bulk string: the distance with four decimals; null when the key or a
/// member is missing.
pub fn geodist(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let to_meters = match args.len() {
        5 => parse_unit(args.at(4))?,
        n if n > 5 => return Err(Error::Syntax),
        _ => 1.0,
    };
    let (db, out) = ctx.db_out();
    let Some(z) = db.read::<ZSet>(args.at(1))? else {
        out.null();
        return Ok(());
    };
    match (member_pos(z, args.at(2)), member_pos(z, args.at(3))) {
        (Some((lon1, lat1)), Some((lon2, lat2))) => {
            let d = geo::dist::distance(lon1, lat1, lon2, lat2) / to_meters;
            out.bulk(fmt::distance(d).as_bytes());
        }
        _ => out.null(),
    }
    Ok(())
}

/// ```text
/// GEOHASH key [member [member ...]]
/// ```
/// Array: an 11-character geohash string per member, null when missing.
pub fn geohash(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let z = db.read::<ZSet>(args.at(1))?;
    out.array(args.len() - 2);
    for m in args.from(2) {
        match z.and_then(|z| z.score(m)) {
            Some(score) => out.bulk(&fmt::geohash(score)),
            None => out.null(),
        }
    }
    Ok(())
}

/// ```text
/// GEOPOS key [member [member ...]]
/// ```
/// Array: `[longitude, latitude]` per member, a null array when missing.
pub fn geopos(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let (db, out) = ctx.db_out();
    let z = db.read::<ZSet>(args.at(1))?;
    out.array(args.len() - 2);
    for m in args.from(2) {
        match z.and_then(|z| member_pos(z, m)) {
            Some(pos) => reply_pos(out, pos),
            None => out.null_array(),
        }
    }
    Ok(())
}
