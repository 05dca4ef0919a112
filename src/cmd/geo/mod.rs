//! Geo commands (Redis's geo.c): positions stored as 52-bit geohash scores in sorted sets.
//!
//! - `add`: GEOADD (ZADD with the scores computed, and propagated as that ZADD)
//! - `read`: GEODIST, GEOHASH, GEOPOS
//! - `search`: GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and the `_RO` forms

mod add;
mod read;
mod search;

use crate::command::flags::*;
use crate::command::{Args, CommandSpec};
use crate::error::{geo as text, Error};
use crate::resp::encode::Reply;
use crate::types::geo::{self, fmt, hash};
use crate::types::number;
use crate::types::zset::ZSet;

pub static SPECS: &[CommandSpec] = &[
    CommandSpec::new("geoadd", -5, WRITE | DENYOOM, (1, 1, 1), add::geoadd),
    CommandSpec::new("geodist", -4, READONLY, (1, 1, 1), read::geodist),
    CommandSpec::new("geohash", -2, READONLY, (1, 1, 1), read::geohash),
    CommandSpec::new("geopos", -2, READONLY, (1, 1, 1), read::geopos),
    CommandSpec::new(
        "georadius",
        -6,
        WRITE | DENYOOM,
        (1, 1, 1),
        search::georadius,
    )
    .with_keys_fn(radius_keys),
    CommandSpec::new(
        "georadius_ro",
        -6,
        READONLY,
        (1, 1, 1),
        search::georadius_ro,
    ),
    CommandSpec::new(
        "georadiusbymember",
        -5,
        WRITE | DENYOOM,
        (1, 1, 1),
        search::georadiusbymember,
    )
    .with_keys_fn(radius_keys),
    CommandSpec::new(
        "georadiusbymember_ro",
        -5,
        READONLY,
        (1, 1, 1),
        search::georadiusbymember_ro,
    ),
    CommandSpec::new("geosearch", -7, READONLY, (1, 1, 1), search::geosearch),
    CommandSpec::new(
        "geosearchstore",
        -8,
        WRITE | DENYOOM,
        (1, 2, 1),
        search::geosearchstore,
    ),
];

/// GEORADIUS* keys (Redis's `georadiusGetKeys`): the source, then the
/// last STORE/STOREDIST destination found from argument 5 on.
fn radius_keys(args: &Args) -> Vec<usize> {
    let mut stored = None;
    let mut i = 5;
    while i < args.len() {
        let a = args.at(i);
        if (a.eq_ignore_ascii_case(b"store") || a.eq_ignore_ascii_case(b"storedist"))
            && i + 1 < args.len()
        {
            stored = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    let mut keys = vec![1];
    keys.extend(stored);
    keys
}

/// `lon lat` (Redis's `extractLongLatOrReply`): two doubles inside the limits.
fn parse_lonlat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Error> {
    let lon = number::parse_f64(lon).ok_or(Error::NotFloat)?;
    let lat = number::parse_f64(lat).ok_or(Error::NotFloat)?;
    if !geo::valid_lonlat(lon, lat) {
        return Err(text::invalid_lonlat(lon, lat));
    }
    Ok((lon, lat))
}

/// A unit name: metres per unit.
fn parse_unit(unit: &[u8]) -> Result<f64, Error> {
    geo::unit_meters(unit).ok_or(Error::msg(text::UNIT))
}

/// `radius unit`: the radius and metres per unit.
fn parse_radius(radius: &[u8], unit: &[u8]) -> Result<(f64, f64), Error> {
    let r = number::parse_f64(radius).ok_or(Error::msg(text::NEED_RADIUS))?;
    if r < 0.0 {
        return Err(Error::msg(text::RADIUS_NEGATIVE));
    }
    Ok((r, parse_unit(unit)?))
}

/// `width height unit`: the box and metres per unit.
fn parse_box(width: &[u8], height: &[u8], unit: &[u8]) -> Result<(f64, f64, f64), Error> {
    let w = number::parse_f64(width).ok_or(Error::msg(text::NEED_WIDTH))?;
    let h = number::parse_f64(height).ok_or(Error::msg(text::NEED_HEIGHT))?;
    if h < 0.0 || w < 0.0 {
        return Err(Error::msg(text::BOX_NEGATIVE));
    }
    Ok((w, h, parse_unit(unit)?))
}

/// A member's stored position `(lon, lat)`.
fn member_pos(z: &ZSet, member: &[u8]) -> Option<(f64, f64)> {
    z.score(member).map(hash::decode_score)
}

/// A coordinate as Redis's `addReplyHumanLongDouble`: a bulk string in
/// RESP2, a double (`,`) in RESP3, both with the `%.17Lf` digits trimmed.
fn reply_coord(out: &mut Reply, x: f64) {
    let t = fmt::coord(x);
    if out.resp3() {
        out.raw(b",");
        out.raw(&t);
        out.raw(b"\r\n");
    } else {
        out.bulk(&t);
    }
}

/// `[lon, lat]`.
fn reply_pos(out: &mut Reply, (lon, lat): (f64, f64)) {
    out.array(2);
    reply_coord(out, lon);
    reply_coord(out, lat);
}
