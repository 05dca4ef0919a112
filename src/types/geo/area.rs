//! The search shape, its bounding box, and the nine cells that cover it (Redis's geohash_helper.c).

use super::dist::EARTH_RADIUS_IN_METERS;
use super::hash::{self, Area, HashBits, Neighbors, LAT_RANGE, LON_RANGE};

/// Redis's `MERCATOR_MAX`: half the Earth's circumference in Mercator metres.
const MERCATOR_MAX: f64 = 20037726.37;

/// Degrees to radians as Redis's `deg_rad` (`ang * (M_PI / 180.0)`).
#[inline]
pub fn deg_rad(ang: f64) -> f64 {
    ang * (std::f64::consts::PI / 180.0)
}

/// Radians to degrees as Redis's `rad_deg`.
#[inline]
pub fn rad_deg(ang: f64) -> f64 {
    ang / (std::f64::consts::PI / 180.0)
}

/// What a search covers, in the unit the client gave (`conversion` metres each).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extent {
    /// BYRADIUS (and GEORADIUS*).
    Radius(f64),
    /// BYBOX: full width and height, centred on the point.
    Box { width: f64, height: f64 },
}

/// A search: centre, extent, unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub lon: f64,
    pub lat: f64,
    /// Metres per unit (m 1, km 1000, ft 0.3048, mi 1609.34).
    pub conversion: f64,
    pub extent: Extent,
}

/// The cell at the centre and its eight neighbours, zeroed where useless.
#[derive(Clone, Copy, Debug)]
pub struct Cover {
    pub hash: HashBits,
    pub neighbors: Neighbors,
    pub area: Area,
}

impl Cover {
    /// The nine cells in the order Redis scans them: centre, N, S, E, W,
    /// NE, NW, SE, SW.
    pub fn cells(&self) -> [HashBits; 9] {
        let n = &self.neighbors;
        [
            self.hash,
            n.north,
            n.south,
            n.east,
            n.west,
            n.north_east,
            n.north_west,
            n.south_east,
            n.south_west,
        ]
    }
}

/// The step (bits per axis) of the nine cells for a radius in metres
/// around a latitude (Redis's `geohashEstimateStepsByRadius`).
pub fn estimate_steps(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range = range_meters;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2; // Make sure the range is included in most base cases.
               // Cells get narrower towards the poles.
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// `[min_lon, min_lat, max_lon, max_lat]` around the shape. The longitude
/// span is taken at the latitude edge nearer the pole, where it is widest.
pub fn bounding_box(s: &Shape) -> [f64; 4] {
    let (height, width) = match s.extent {
        Extent::Radius(r) => (s.conversion * r, s.conversion * r),
        Extent::Box { width, height } => {
            (s.conversion * (height / 2.0), s.conversion * (width / 2.0))
        }
    };
    let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
    let lon_delta_top = rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(s.lat + lat_delta).cos());
    let lon_delta_bottom =
        rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(s.lat - lat_delta).cos());
    let lon_delta = if s.lat < 0.0 {
        lon_delta_bottom
    } else {
        lon_delta_top
    };
    [
        s.lon - lon_delta,
        s.lat - lat_delta,
        s.lon + lon_delta,
        s.lat + lat_delta,
    ]
}

/// The radius in metres the cell size is chosen by: the radius, or the
/// half-diagonal of a box.
fn reach_meters(s: &Shape) -> f64 {
    let r = match s.extent {
        Extent::Radius(r) => r,
        Extent::Box { width, height } => {
            ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
        }
    };
    r * s.conversion
}

fn cell_at(s: &Shape, step: u8) -> (HashBits, Neighbors, Area) {
    // The centre is always inside the limits (checked when parsed, or
    // decoded from a stored score), so both calls succeed.
    let h = hash::encode(LON_RANGE, LAT_RANGE, s.lon, s.lat, step).unwrap_or_default();
    let n = hash::neighbors(h);
    let a = hash::decode(LON_RANGE, LAT_RANGE, h).unwrap_or_default();
    (h, n, a)
}

/// The cells covering the shape (Redis's `geohashCalculateAreasByShapeWGS84`):
/// a step from the reach, one step coarser when a side neighbour does not
/// reach the bounding box, then the neighbours on sides the centre cell
/// already covers are zeroed.
pub fn cover(s: &Shape) -> Cover {
    let [min_lon, min_lat, max_lon, max_lat] = bounding_box(s);
    let mut steps = estimate_steps(reach_meters(s), s.lat);
    let (mut h, mut n, mut area) = cell_at(s, steps);

    let bounds = |c: HashBits| hash::decode(LON_RANGE, LAT_RANGE, c).unwrap_or_default();
    let decrease = bounds(n.north).lat.max < max_lat
        || bounds(n.south).lat.min > min_lat
        || bounds(n.east).lon.max < max_lon
        || bounds(n.west).lon.min > min_lon;
    if steps > 1 && decrease {
        steps -= 1;
        (h, n, area) = cell_at(s, steps);
    }

    if steps >= 2 {
        let z = HashBits::ZERO;
        if area.lat.min < min_lat {
            (n.south, n.south_west, n.south_east) = (z, z, z);
        }
        if area.lat.max > max_lat {
            (n.north, n.north_east, n.north_west) = (z, z, z);
        }
        if area.lon.min < min_lon {
            (n.west, n.south_west, n.north_west) = (z, z, z);
        }
        if area.lon.max > max_lon {
            (n.east, n.south_east, n.north_east) = (z, z, z);
        }
    }
    Cover {
        hash: h,
        neighbors: n,
        area,
    }
}
