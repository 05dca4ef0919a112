//! GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and the `_RO` forms (Redis's `georadiusGeneric`).

use super::*;
use crate::cmd::zset::{limits, store_result};
use crate::error::CmdResult;
use crate::server::Ctx;
use crate::types::geo::search::{self, Order, Point};
use crate::types::geo::{Extent, Shape};

/// Which command is running: where the centre comes from and which options it takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// GEORADIUS[_RO] key lon lat radius unit ...
    Coords { nostore: bool },
    /// GEORADIUSBYMEMBER[_RO] key member radius unit ...
    Member { nostore: bool },
    /// GEOSEARCH key ...
    Search,
    /// GEOSEARCHSTORE dst src ...
    SearchStore,
}

impl Variant {
    fn is_search(self) -> bool {
        matches!(self, Variant::Search | Variant::SearchStore)
    }

    /// STORE and STOREDIST take a key (GEORADIUS and GEORADIUSBYMEMBER only).
    fn takes_store_key(self) -> bool {
        matches!(
            self,
            Variant::Coords { nostore: false } | Variant::Member { nostore: false }
        )
    }
}

/// ```text
/// GEORADIUS key longitude latitude radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH]
///     [COUNT count [ANY]] [ASC|DESC] [STORE key | STOREDIST key]
/// ```
/// Array of members (nested arrays with the WITH* fields), or with STORE
/// the number of members stored.
pub fn georadius(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, 1, Variant::Coords { nostore: false })
}

/// ```text
/// GEORADIUS_RO key longitude latitude radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH]
///     [COUNT count [ANY]] [ASC|DESC]
/// ```
/// As GEORADIUS, without STORE.
pub fn georadius_ro(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, 1, Variant::Coords { nostore: true })
}

/// ```text
/// GEORADIUSBYMEMBER key member radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH]
///     [COUNT count [ANY]] [ASC|DESC] [STORE key | STOREDIST key]
/// ```
/// As GEORADIUS, around a member's position.
pub fn georadiusbymember(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, 1, Variant::Member { nostore: false })
}

/// ```text
/// GEORADIUSBYMEMBER_RO key member radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH]
///     [COUNT count [ANY]] [ASC|DESC]
/// ```
/// As GEORADIUSBYMEMBER, without STORE.
pub fn georadiusbymember_ro(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, 1, Variant::Member { nostore: true })
}

/// ```text
/// GEOSEARCH key FROMMEMBER member | FROMLONLAT longitude latitude
///     BYRADIUS radius M|KM|FT|MI | BYBOX width height M|KM|FT|MI
///     [ASC|DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]
/// ```
/// Array of members (nested arrays with the WITH* fields).
pub fn geosearch(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, 1, Variant::Search)
}

/// ```text
/// GEOSEARCHSTORE destination source FROMMEMBER member | FROMLONLAT longitude latitude
///     BYRADIUS radius M|KM|FT|MI | BYBOX width height M|KM|FT|MI
///     [ASC|DESC] [COUNT count [ANY]] [STOREDIST]
/// ```
/// Integer: the number of members stored at `destination`.
pub fn geosearchstore(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    generic(ctx, args, 2, Variant::SearchStore)
}

/// Everything the options say, once parsed.
struct Query<'a> {
    shape: Shape,
    store: Option<&'a [u8]>,
    storedist: bool,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    order: Order,
    any: bool,
    /// 0: no limit.
    count: usize,
}

/// Redis's `georadiusGeneric`. The checks come in Redis's order: the source
/// type, the centre and radius of GEORADIUS*, each option as it is read
/// (FROMMEMBER looks the member up right there), then the combinations.
fn generic(ctx: &mut Ctx, args: &mut Args, src: usize, v: Variant) -> CmdResult {
    let cmd_name = String::from_utf8_lossy(args.at(0)).into_owned();
    let limits = limits(ctx);
    let (db, out) = ctx.db_out();
    let z = db.read::<ZSet>(args.at(src))?;
    let q = parse(args, z, v, &cmd_name)?;
    let Some(z) = z else {
        match q.store {
            Some(dst) => store_result(ctx, dst, ZSet::with_hint(0, 0, limits), store_event(v)),
            None => out.empty_array(),
        }
        return Ok(());
    };
    let mut order = q.order;
    // COUNT without ANY means the closest ones: sort ascending by default.
    if q.count != 0 && order == Order::None && !q.any {
        order = Order::Asc;
    }
    let mut found = search::search(z, &q.shape, if q.any { q.count } else { 0 });
    if found.is_empty() && q.store.is_none() {
        out.empty_array();
        return Ok(());
    }
    let n = if q.count == 0 {
        found.len()
    } else {
        found.len().min(q.count)
    };
    search::sort(&mut found, order, n);
    let found = &found[..n];
    match q.store {
        None => reply(out, &q, found),
        Some(dst) => {
            let mut stored = ZSet::with_hint(0, 0, limits);
            for p in found {
                let score = if q.storedist {
                    p.dist / q.shape.conversion
                } else {
                    p.score
                };
                stored.set(p.member, score, limits);
            }
            store_result(ctx, dst, stored, store_event(v));
            // Redis counts a geo store as one change per member stored.
            ctx.srv.ks.dirty += (n as u64).saturating_sub(1);
        }
    }
    Ok(())
}

fn store_event(v: Variant) -> &'static str {
    if v.is_search() {
        "geosearchstore"
    } else {
        "georadiusstore"
    }
}

/// Reads the centre, the extent and the options. With no source set,
/// GEORADIUSBYMEMBER's radius and a FROMMEMBER member go unchecked, as in
/// Redis (the reply is empty anyway).
fn parse<'a>(
    args: &Args<'a>,
    z: Option<&ZSet>,
    v: Variant,
    cmd_name: &str,
) -> Result<Query<'a>, Error> {
    let mut q = Query {
        shape: Shape {
            lon: 0.0,
            lat: 0.0,
            conversion: 1.0,
            extent: Extent::Radius(0.0),
        },
        store: None,
        storedist: false,
        withdist: false,
        withhash: false,
        withcoord: false,
        order: Order::None,
        any: false,
        count: 0,
    };
    let base = match v {
        Variant::Coords { .. } => {
            (q.shape.lon, q.shape.lat) = parse_lonlat(args.at(2), args.at(3))?;
            let (r, conv) = parse_radius(args.at(4), args.at(5))?;
            (q.shape.extent, q.shape.conversion) = (Extent::Radius(r), conv);
            6
        }
        Variant::Member { .. } => {
            if let Some(z) = z {
                (q.shape.lon, q.shape.lat) =
                    member_pos(z, args.at(2)).ok_or(Error::msg(text::NO_MEMBER))?;
                let (r, conv) = parse_radius(args.at(3), args.at(4))?;
                (q.shape.extent, q.shape.conversion) = (Extent::Radius(r), conv);
            }
            5
        }
        Variant::Search => 2,
        Variant::SearchStore => {
            q.store = Some(args.at(1));
            3
        }
    };
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let search = v.is_search();
    let mut i = base;
    let argc = args.len();
    // `has(n)`: n more arguments follow the option at `i`.
    let has = |i: usize, n: usize| i + n < argc;
    while i < argc {
        let a = args.at(i);
        let is = |w: &str| a.eq_ignore_ascii_case(w.as_bytes());
        if is("withdist") {
            q.withdist = true;
        } else if is("withhash") {
            q.withhash = true;
        } else if is("withcoord") {
            q.withcoord = true;
        } else if is("any") {
            q.any = true;
        } else if is("asc") {
            q.order = Order::Asc;
        } else if is("desc") {
            q.order = Order::Desc;
        } else if is("count") && has(i, 1) {
            let n = number::parse_i64(args.at(i + 1)).ok_or(Error::NotInteger)?;
            if n <= 0 {
                return Err(Error::msg(text::COUNT_POSITIVE));
            }
            q.count = n as usize;
            i += 1;
        } else if (is("store") || is("storedist")) && has(i, 1) && v.takes_store_key() {
            q.store = Some(args.at(i + 1));
            q.storedist = is("storedist");
            i += 1;
        } else if is("storedist") && v == Variant::SearchStore {
            q.storedist = true;
        } else if is("frommember") && has(i, 1) && search && !fromloc {
            if let Some(z) = z {
                (q.shape.lon, q.shape.lat) =
                    member_pos(z, args.at(i + 1)).ok_or(Error::msg(text::NO_MEMBER))?;
            }
            frommember = true;
            i += 1;
        } else if is("fromlonlat") && has(i, 2) && search && !frommember {
            (q.shape.lon, q.shape.lat) = parse_lonlat(args.at(i + 1), args.at(i + 2))?;
            fromloc = true;
            i += 2;
        } else if is("byradius") && has(i, 2) && search && !bybox {
            let (r, conv) = parse_radius(args.at(i + 1), args.at(i + 2))?;
            (q.shape.extent, q.shape.conversion) = (Extent::Radius(r), conv);
            byradius = true;
            i += 2;
        } else if is("bybox") && has(i, 3) && search && !byradius {
            let (width, height, conv) = parse_box(args.at(i + 1), args.at(i + 2), args.at(i + 3))?;
            (q.shape.extent, q.shape.conversion) = (Extent::Box { width, height }, conv);
            bybox = true;
            i += 3;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    if q.store.is_some() && (q.withdist || q.withhash || q.withcoord) {
        return Err(text::store_with(v == Variant::SearchStore));
    }
    if search && !(frommember || fromloc) {
        return Err(text::need_from(cmd_name));
    }
    if search && !(byradius || bybox) {
        return Err(text::need_by(cmd_name));
    }
    if q.any && q.count == 0 {
        return Err(Error::msg(text::ANY_NEEDS_COUNT));
    }
    Ok(q)
}

/// The found members, each alone or as `[member, dist?, hash?, [lon, lat]?]`.
fn reply(out: &mut Reply, q: &Query, found: &[Point]) {
    let extra = q.withdist as usize + q.withhash as usize + q.withcoord as usize;
    out.array(found.len());
    for p in found {
        if extra > 0 {
            out.array(extra + 1);
        }
        out.bulk(p.member);
        if q.withdist {
            out.bulk(fmt::distance(p.dist / q.shape.conversion).as_bytes());
        }
        if q.withhash {
            out.int(p.score as i64);
        }
        if q.withcoord {
            reply_pos(out, (p.lon, p.lat));
        }
    }
}
