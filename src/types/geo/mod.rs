//! Geospatial indexes on sorted sets: Redis's 52-bit geohash scores, covering cells, distances and reply texts.
//!
//! - `hash`: encoding and decoding cells, neighbours, scores
//! - `area`: search shapes, bounding boxes, the nine cells that cover one
//! - `dist`: haversine distance, inside-the-shape tests
//! - `search`: the members of a sorted set inside a shape
//! - `fmt`: distances, coordinates and geohash strings as Redis writes them

pub mod area;
pub mod dist;
pub mod fmt;
pub mod hash;
pub mod search;

pub use area::{Extent, Shape};
pub use search::{Order, Point};

/// Metres per unit for a unit name (`m`, `km`, `ft`, `mi`, any case).
pub fn unit_meters(unit: &[u8]) -> Option<f64> {
    if unit.eq_ignore_ascii_case(b"m") {
        Some(1.0)
    } else if unit.eq_ignore_ascii_case(b"km") {
        Some(1000.0)
    } else if unit.eq_ignore_ascii_case(b"ft") {
        Some(0.3048)
    } else if unit.eq_ignore_ascii_case(b"mi") {
        Some(1609.34)
    } else {
        None
    }
}

/// True when the position can be stored (longitude ±180, latitude within
/// the Mercator limits).
pub fn valid_lonlat(lon: f64, lat: f64) -> bool {
    (hash::LON_MIN..=hash::LON_MAX).contains(&lon) && (hash::LAT_MIN..=hash::LAT_MAX).contains(&lat)
}

#[cfg(test)]
mod tests;
