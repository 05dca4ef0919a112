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

/// Redis's `sort_gp_asc` as an int comparator (what its partial sort branches on).
fn asc(a: &Point, b: &Point) -> i32 {
    if a.dist > b.dist {
        1
    } else if a.dist == b.dist {
        0
    } else {
        -1
    }
}

/// Sorts by distance so that the first `keep` points are in order. When
/// every point is kept, equal distances keep the scan order (glibc's `qsort`
/// is a merge sort); otherwise Redis's partial quicksort (`pqsort`) runs,
/// whose order among equal distances is reproduced by [`partial_sort`].
pub fn sort(points: &mut [Point], order: Order, keep: usize) {
    let desc = |a: &Point, b: &Point| -asc(a, b);
    match order {
        Order::None => {}
        Order::Asc if keep >= points.len() => points.sort_by(by_dist),
        Order::Desc if keep >= points.len() => points.sort_by(|a, b| by_dist(b, a)),
        Order::Asc => partial_sort(points, 0, points.len(), &asc, keep.saturating_sub(1)),
        Order::Desc => partial_sort(points, 0, points.len(), &desc, keep.saturating_sub(1)),
    }
}

type Cmp<'c> = &'c dyn Fn(&Point, &Point) -> i32;

/// Median of three positions (Bentley & McIlroy).
fn med3(v: &[Point], a: usize, b: usize, c: usize, cmp: Cmp) -> usize {
    if cmp(&v[a], &v[b]) < 0 {
        if cmp(&v[b], &v[c]) < 0 {
            b
        } else if cmp(&v[a], &v[c]) < 0 {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) > 0 {
        b
    } else if cmp(&v[a], &v[c]) < 0 {
        a
    } else {
        c
    }
}

fn vecswap(v: &mut [Point], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// True unless positions `[s, s + k)` lie wholly before or after `[0, last]`.
fn overlaps(s: usize, k: usize, last: usize) -> bool {
    let (l, r) = (0, last);
    !((l < s && r < s) || (l >= s + k && r >= s + k))
}

/// Redis's `pqsort` (Bentley & McIlroy's quicksort with three-way
/// partitioning, skipping partitions outside positions `0..=last`) over
/// `v[a..a + n]`, step for step so equal elements end where Redis puts them.
fn partial_sort(v: &mut [Point], mut a: usize, mut n: usize, cmp: Cmp, last: usize) {
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]) > 0 {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let c = cmp(&v[pb], &v[a]);
                if c > 0 {
                    break;
                }
                if c == 0 {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&v[pc], &v[a]);
                if c < 0 {
                    break;
                }
                if c == 0 {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        vecswap(v, a, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && overlaps(a, r, last) {
            partial_sort(v, a, r, cmp, last);
        }
        let r = pd - pc;
        if r <= 1 {
            return;
        }
        a = pn - r;
        n = r;
        if !overlaps(a, n, last) {
            return;
        }
    }
}
