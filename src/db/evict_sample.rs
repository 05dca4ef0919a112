//! What eviction asks of a database: sampled candidates with their score, a random key, ghost checks.

use super::Db;

/// How a sampled key is scored for eviction (higher: evicted sooner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Score {
    /// Seconds since the last access (Redis's `estimateObjectIdleTime`).
    Idle,
    /// 255 minus the decayed LFU counter: rarely used keys go first.
    Rare,
    /// The sooner the key expires, the higher.
    NearExpiry,
}

impl Db {
    /// How many keys eviction chooses from: all keys, or (`volatile`) those
    /// with a TTL.
    pub fn eviction_population(&self, volatile: bool) -> usize {
        if volatile {
            self.expires.len()
        } else {
            self.keys.len()
        }
    }

    /// Samples up to `count` keys (from those with a TTL when `volatile`)
    /// and hands each to `f` with its score. O(count): the sample is
    /// Redis's `dictGetSomeKeys` walk, each key then found in O(1).
    pub fn eviction_sample(
        &self,
        volatile: bool,
        count: usize,
        score: Score,
        rand: impl FnMut() -> u64,
        mut f: impl FnMut(&[u8], u64),
    ) {
        let scored = |e: &super::Entry| match score {
            Score::Idle => e.idle_secs(),
            Score::Rare => 255 - e.freq() as u64,
            Score::NearExpiry => 0,
        };
        if !volatile {
            self.keys.sample(count, rand, |k, e| f(k, scored(e)));
            return;
        }
        self.expires.sample(count, rand, |k, &at| {
            let s = match score {
                Score::NearExpiry => u64::MAX - at as u64,
                _ => match self.keys.get(k) {
                    Some(e) => scored(e),
                    None => return,
                },
            };
            f(k, s)
        });
    }

    /// A random key (with a TTL when `volatile`), for the random policies.
    pub fn eviction_random(&self, volatile: bool, rand: impl FnMut() -> u64) -> Option<Box<[u8]>> {
        if volatile {
            self.expires.random(rand).map(|(k, _)| k.into())
        } else {
            self.keys.random(rand).map(|(k, _)| k.into())
        }
    }

    /// True when a key the eviction pool remembers is still a candidate
    /// (it may have been deleted, or lost its TTL, since it was sampled).
    pub fn eviction_candidate(&self, key: &[u8], volatile: bool) -> bool {
        if volatile {
            self.expires.contains_key(key)
        } else {
            self.keys.contains_key(key)
        }
    }
}
