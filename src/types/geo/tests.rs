//! Expected values recorded from redis-server 7.0.15 (ZSCORE, GEOPOS, GEOHASH, GEODIST, GEOSEARCH).

use super::*;
use crate::types::zset::{Limits, ZSet};

/// (name, lon, lat given to GEOADD, ZSCORE, GEOPOS lon, GEOPOS lat, GEOHASH)
const PLACES: &[(&str, f64, f64, u64, &str, &str, &str)] = &[
    (
        "Palermo",
        13.361389,
        38.115556,
        3479099956230698,
        "13.36138933897018433",
        "38.11555639549629859",
        "sqc8b49rny0",
    ),
    (
        "Catania",
        15.087269,
        37.502669,
        3479447370796909,
        "15.08726745843887329",
        "37.50266842333162032",
        "sqdtr74hyu0",
    ),
    (
        "ne",
        180.0,
        85.05112878,
        13510798882111488,
        "180",
        "85.0511287799999991",
        "bp05b5048p0",
    ),
    (
        "sw",
        -180.0,
        -85.05112878,
        0,
        "-179.99999731779098511",
        "-85.05112751263942528",
        "00bh0hbj200",
    ),
    (
        "origin",
        0.0,
        0.0,
        3377699720527872,
        "0.00000268220901489",
        "0.00000126736058093",
        "s0000000000",
    ),
    (
        "greenwich",
        -0.0001,
        51.4778,
        2163546804369574,
        "-0.00009924173355103",
        "51.47780030620258174",
        "gcpuzgpzvt0",
    ),
];

fn text(b: Vec<u8>) -> String {
    String::from_utf8(b).unwrap()
}

#[test]
fn scores_positions_and_hashes_match_redis() {
    for &(name, lon, lat, score, plon, plat, gh) in PLACES {
        assert_eq!(hash::encode_score(lon, lat), Some(score), "{name} score");
        let (dlon, dlat) = hash::decode_score(score as f64);
        assert_eq!(text(fmt::coord(dlon)), plon, "{name} lon");
        assert_eq!(text(fmt::coord(dlat)), plat, "{name} lat");
        assert_eq!(&fmt::geohash(score as f64), gh.as_bytes(), "{name} geohash");
    }
}

#[test]
fn odd_scores_decode_as_redis_converts_them() {
    // ZADD k -5 neg 1e20 big inf pinf, then GEOPOS.
    let (lon, lat) = hash::decode_score(-5.0);
    assert_eq!(
        (text(fmt::coord(lon)), text(fmt::coord(lat))),
        ("180".into(), "85.0511287799999991".into())
    );
    for s in [1e20, f64::INFINITY] {
        let (lon, lat) = hash::decode_score(s);
        assert_eq!(text(fmt::coord(lon)), "-179.99999731779098511");
        assert_eq!(text(fmt::coord(lat)), "-85.05112751263942528");
        assert_eq!(&fmt::geohash(s), b"00bh0hbj200");
    }
}

fn pos(name: &str) -> (f64, f64) {
    let p = PLACES.iter().find(|p| p.0 == name).unwrap();
    hash::decode_score(p.3 as f64)
}

#[test]
fn distances_match_geodist() {
    let d = |a: &str, b: &str, unit: &[u8]| {
        let ((x1, y1), (x2, y2)) = (pos(a), pos(b));
        fmt::distance(dist::distance(x1, y1, x2, y2) / unit_meters(unit).unwrap())
    };
    assert_eq!(d("Palermo", "Catania", b"m"), "166274.1516");
    assert_eq!(d("Palermo", "Catania", b"KM"), "166.2742");
    assert_eq!(d("ne", "sw", b"mi"), "11756.2756");
    assert_eq!(d("origin", "greenwich", b"ft"), "18785056.1655");
    assert_eq!(d("Palermo", "ne", b"m"), "6307362.7206");
    assert_eq!(d("origin", "origin", b"m"), "0.0000");
}

fn sicily() -> ZSet {
    let limits = Limits {
        entries: 128,
        value: 64,
    };
    let mut z = ZSet::with_hint(0, 0, limits);
    for p in PLACES {
        z.insert_new(p.0.as_bytes(), p.3 as f64, limits);
    }
    z
}

#[test]
fn search_by_radius_and_box_as_geosearch() {
    let z = sicily();
    // GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHDIST WITHHASH
    let shape = Shape {
        lon: 15.0,
        lat: 37.0,
        conversion: 1000.0,
        extent: Extent::Radius(200.0),
    };
    let mut found = search::search(&z, &shape, 0);
    search::sort(&mut found, Order::Asc, usize::MAX);
    let got: Vec<_> = found
        .iter()
        .map(|p| (p.member, fmt::distance(p.dist / 1000.0), p.score as u64))
        .collect();
    assert_eq!(
        got,
        vec![
            (&b"Catania"[..], "56.4413".to_string(), 3479447370796909),
            (&b"Palermo"[..], "190.4424".to_string(), 3479099956230698),
        ]
    );
    // GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km DESC WITHDIST
    let (lon, lat) = pos("Palermo");
    let shape = Shape {
        lon,
        lat,
        conversion: 1000.0,
        extent: Extent::Box {
            width: 400.0,
            height: 400.0,
        },
    };
    let mut found = search::search(&z, &shape, 0);
    search::sort(&mut found, Order::Desc, usize::MAX);
    let got: Vec<_> = found
        .iter()
        .map(|p| (p.member, fmt::distance(p.dist / 1000.0)))
        .collect();
    assert_eq!(
        got,
        vec![
            (&b"Catania"[..], "166.2742".to_string()),
            (&b"Palermo"[..], "0.0000".to_string())
        ]
    );
}

#[test]
fn neighbours_wrap_around_the_antimeridian() {
    // The easternmost cell's east neighbour is the westernmost cell.
    let east_edge = hash::encode_wgs84(179.99, 0.0, 4).unwrap();
    let west_edge = hash::encode_wgs84(-179.99, 0.0, 4).unwrap();
    assert_eq!(hash::neighbors(east_edge).east, west_edge);
    assert_eq!(hash::neighbors(west_edge).west, east_edge);
}

#[test]
fn interleave_round_trips() {
    for (a, b) in [
        (0u32, 0u32),
        (1, 0),
        (0, 1),
        (0xdead_beef, 0x1234_5678),
        (u32::MAX, u32::MAX),
    ] {
        assert_eq!(hash::deinterleave(hash::interleave(a, b)), (a, b));
    }
    assert_eq!(hash::interleave(1, 0), 1);
    assert_eq!(hash::interleave(0, 1), 2);
}
