//! Property test: the index against a sorted Vec model over random operations.

use super::*;

struct Prng(u64);
impl Prng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const BIG: Limits = Limits {
    entries: 0,
    value: 0,
};

fn check(z: &ZSet, model: &[(f64, Vec<u8>)]) {
    assert_eq!(z.len(), model.len());
    let got: Vec<(f64, Vec<u8>)> = z.iter().map(|(m, s)| (s, m.to_vec())).collect();
    assert_eq!(got, model);
    let rev: Vec<(f64, Vec<u8>)> = if z.is_empty() {
        vec![]
    } else {
        z.iter_rev_from(z.len() - 1)
            .map(|(m, s)| (s, m.to_vec()))
            .collect()
    };
    let mut m2 = model.to_vec();
    m2.reverse();
    assert_eq!(rev, m2);
}

#[test]
fn index_matches_sorted_vec_model() {
    for (seed, limits) in [
        (1u64, BIG),
        (
            7,
            Limits {
                entries: 128,
                value: 64,
            },
        ),
        (99, BIG),
    ] {
        let mut rng = Prng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut z = ZSet::with_hint(0, 0, limits);
        let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
        for step in 0..6000 {
            let op = rng.next() % 10;
            let key = format!("m{}", rng.next() % 1500).into_bytes();
            let score = (rng.next() % 50) as f64 - 25.0;
            match op {
                0..=4 => {
                    let old = z.set(&key, score, limits);
                    let pos = model.iter().position(|(_, m)| *m == key);
                    assert_eq!(old, pos.map(|p| model[p].0));
                    if let Some(p) = pos {
                        model.remove(p);
                    }
                    let at = model.partition_point(|(s, m)| (*s, m) < (score, &key));
                    model.insert(at, (score, key));
                }
                5 | 6 => {
                    let got = z.remove(&key);
                    let pos = model.iter().position(|(_, m)| *m == key);
                    assert_eq!(got, pos.map(|p| model[p].0));
                    if let Some(p) = pos {
                        model.remove(p);
                    }
                }
                7 => {
                    let pos = model.iter().position(|(_, m)| *m == key);
                    assert_eq!(z.rank(&key), pos);
                    if !model.is_empty() {
                        let r = (rng.next() as usize) % model.len();
                        let (m, s) = z.at(r);
                        assert_eq!((s, m.to_vec()), model[r]);
                    }
                }
                8 => {
                    let r = ScoreRange {
                        min: score,
                        max: score + (rng.next() % 10) as f64,
                        minex: rng.next().is_multiple_of(2),
                        maxex: rng.next().is_multiple_of(2),
                    };
                    let (a, b) = z.score_ranks(&r);
                    let expect: Vec<usize> = (0..model.len())
                        .filter(|&i| {
                            let s = model[i].0;
                            (if r.minex { s > r.min } else { s >= r.min })
                                && (if r.maxex { s < r.max } else { s <= r.max })
                        })
                        .collect();
                    assert_eq!((a..b).collect::<Vec<_>>(), expect, "step {step}");
                }
                _ => {
                    if !model.is_empty() && rng.next().is_multiple_of(4) {
                        let a = (rng.next() as usize) % model.len();
                        let n = (rng.next() as usize) % 300;
                        let b = (a + n).min(model.len());
                        assert_eq!(z.remove_ranks(a, b), b - a);
                        model.drain(a..b);
                    } else if !model.is_empty() {
                        let max = rng.next().is_multiple_of(2);
                        let (m, s) = z.pop(max).unwrap();
                        let (ms, mm) = if max {
                            model.pop().unwrap()
                        } else {
                            model.remove(0)
                        };
                        assert_eq!((s, m), (ms, mm));
                    }
                }
            }
            if step % 500 == 0 {
                check(&z, &model);
            }
        }
        check(&z, &model);
        let c = z.clone();
        check(&c, &model);
    }
}

#[test]
fn lex_ranges() {
    let l = Limits {
        entries: 128,
        value: 64,
    };
    let mut z = ZSet::with_hint(0, 0, l);
    for m in ["a", "b", "c", "d"] {
        z.set(m.as_bytes(), 0.0, l);
    }
    let r = LexRange {
        min: LexBound::Excl(b"a".to_vec()),
        max: LexBound::Incl(b"c".to_vec()),
    };
    assert_eq!(z.lex_ranks(&r), (1, 3));
    let r = LexRange {
        min: LexBound::NegInf,
        max: LexBound::PosInf,
    };
    assert_eq!(z.lex_ranks(&r), (0, 4));
    assert_eq!(z.encoding(), "listpack");
    z.set(&[b'x'; 65], 1.0, l);
    assert_eq!(z.encoding(), "skiplist");
}
