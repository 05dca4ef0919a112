//! Great-circle distances (haversine on a sphere of Redis's radius) and the in-shape tests.

use super::area::{deg_rad, Extent, Shape};

/// Redis's `EARTH_RADIUS_IN_METERS`: the Earth's quadratic mean radius for WGS-84.
pub const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;

/// Distance in metres along a meridian (Redis's `geohashGetLatDistance`).
pub fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Haversine distance in metres between two points (Redis's `geohashGetDistance`).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(lon2) - deg_rad(lon1)) / 2.0).sin();
    // Same longitude: the meridian distance, without the trigonometry.
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// The distance in metres from the shape's centre to `(lon, lat)` when the
/// point is inside the shape (Redis's `geoWithinShape` after decoding).
/// A box is tested on its height along the meridian first, then its width
/// along the point's parallel.
pub fn within(s: &Shape, lon: f64, lat: f64) -> Option<f64> {
    match s.extent {
        Extent::Radius(r) => {
            let d = distance(s.lon, s.lat, lon, lat);
            // Not `<=`: a NaN distance (rounding past the antipode) is inside, as in Redis.
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            let inside = !(d > r * s.conversion);
            inside.then_some(d)
        }
        Extent::Box { width, height } => {
            let (width_m, height_m) = (width * s.conversion, height * s.conversion);
            if lat_distance(lat, s.lat) > height_m / 2.0 {
                return None;
            }
            if distance(lon, lat, s.lon, lat) > width_m / 2.0 {
                return None;
            }
            Some(distance(s.lon, s.lat, lon, lat))
        }
    }
}
