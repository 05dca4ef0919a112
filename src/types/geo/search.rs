//! Finding the members of a sorted set inside a shape: the score ranges of the nine covering cells, filtered by distance.

use std::cmp::Ordering;

use super::area::{self, Shape};
use super::dist;
use super::hash::{self, HashBits};
use crate::types::zset::{ScoreRange, ZSet};

/// A member found inside the shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point<'a> {
    pub member: &'a [u8],
    /// The stored score (the 52-bit cell).
    pub score: f64,
    pub lon: f64,
    pub lat: f64,
    /// Metres from the shape's centre.
    pub dist: f64,
}

/// The members inside `shape` in the order Redis finds them: cell by cell
/// (centre, N, S, E, W, NE, NW, SE, SW), by score within a cell. With a
/// `limit` (COUNT .. ANY) the scan stops once that many were found.
pub fn search<'a>(z: &'a ZSet, shape: &Shape, limit: usize) -> Vec<Point<'a>> {
    let cells = area::cover(shape).cells();
    let mut found = Vec::new();
    // Huge radii can make neighbours equal: a cell equal to the previous one
    // scanned is skipped, except after the centre (index 0), as in Redis.
    let mut last = 0;
    for (i, &cell) in cells.iter().enumerate() {
        if cell.is_zero() || (last != 0 && cell == cells[last]) {
            continue;
        }
        if full(&found, limit) {
            break;
        }
        points_in_cell(z, cell, shape, &mut found, limit);
        last = i;
    }
    found
}

fn full(found: &[Point], limit: usize) -> bool {
    limit != 0 && found.len() >= limit
}

/// Appends the members whose score lies in the cell (`min <= score < max`)
/// and whose position is inside the shape.
fn points_in_cell<'a>(
    z: &'a ZSet,
    cell: HashBits,
    shape: &Shape,
    found: &mut Vec<Point<'a>>,
    limit: usize,
) {
    let next = HashBits {
        bits: cell.bits + 1,
        step: cell.step,
    };
    let range = ScoreRange {
        min: cell.align52() as f64,
        max: next.align52() as f64,
        minex: false,
        maxex: true,
    };
    let (start, end) = z.score_ranks(&range);
    for (member, score) in z.iter_from(start).take(end - start) {
        let (lon, lat) = hash::decode_score(score);
        if let Some(dist) = dist::within(shape, lon, lat) {
            found.push(Point {
                member,
                score,
                lon,
                lat,
                dist,
            });
        }
        if full(found, limit) {
            break;
        }
    }
}

/// Result order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    None,
    Asc,
    Desc,
}

fn by_dist(a: &Point, b: &Point) -> Ordering {
    a.dist.partial_cmp(&b.dist).unwrap_or(Ordering::Equal)
}

/// Sorts by distance. Equal distances keep the scan order (glibc's `qsort`
/// is a merge sort, so Redis's order is the same).
pub fn sort(points: &mut [Point], order: Order) {
    match order {
        Order::None => {}
        Order::Asc => points.sort_by(by_dist),
        Order::Desc => points.sort_by(|a, b| by_dist(b, a)),
    }
}
