//! Peer caches: the optimal cache distribution (Lemma 2), the plain LRU cache of B chunks that
//! Lemma 3 says reaches it, and what LRU reaches by Che's approximation.

use super::system::System;
use crate::lru::ByteLru;

/// Lemma 2: ρ_j = B·π_j, the share of peers that should cache chunk j.
pub fn optimal_distribution(system: &System) -> Vec<f64> {
    let b = system.cache() as f64;
    system.playing().iter().map(|pi| b * pi).collect()
}

/// What LRU really holds under Lemma 3's independent plays, by Che's approximation (not in the
/// paper; the usual yardstick for LRU): a cache of B chunks keeps chunk j with probability
/// 1 − e^(−q_j·T), q_j = π_j/(1 − π_0) the chance that a play is of j and T, the characteristic
/// time in plays, solving Σ_j (1 − e^(−q_j·T)) = B. Unlike B·π_j it sums to B and stays below 1.
pub fn che_distribution(system: &System) -> Vec<f64> {
    let q: Vec<f64> = (system.playing().iter())
        .map(|pi| pi / (1.0 - system.idle()))
        .collect();
    let b = system.cache() as f64;
    if system.cache() >= q.len() {
        return vec![1.0; q.len()];
    }
    let held = |t: f64| q.iter().map(|qj| 1.0 - (-qj * t).exp()).sum::<f64>();
    let (mut lo, mut hi) = (0.0, 1.0);
    while held(hi) < b {
        hi *= 2.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if held(mid) < b {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    q.iter().map(|qj| 1.0 - (-qj * hi).exp()).collect()
}

/// One peer's cache under Lemma 3's LRU: the chunk being played moves to position 1; a new
/// download evicts the chunk in position B.
#[derive(Debug)]
pub struct PeerCache {
    lru: ByteLru<u32, ()>,
}

impl PeerCache {
    /// An empty cache of `chunks` (B) chunks.
    pub fn new(chunks: usize) -> PeerCache {
        PeerCache {
            lru: ByteLru::new(chunks),
        }
    }

    pub fn holds(&self, chunk: u32) -> bool {
        self.lru.contains(&chunk)
    }

    /// Replays `chunk` if it is cached, making it the most recently used; false (and nothing
    /// changed) when it is not.
    pub fn play_cached(&mut self, chunk: u32) -> bool {
        self.lru.get(&chunk).is_some()
    }

    /// Caches a downloaded `chunk` as the most recently used, evicting the least recently
    /// used if the cache is full; returns the chunk evicted.
    pub fn store(&mut self, chunk: u32) -> Option<u32> {
        let full = self.lru.len() >= self.lru.capacity() && !self.lru.contains(&chunk);
        let evicted = if full {
            self.lru.oldest().copied()
        } else {
            None
        };
        self.lru.insert(chunk, (), 1);
        evicted
    }

    /// The cached chunks, in no particular order.
    pub fn chunks(&self) -> impl Iterator<Item = u32> + '_ {
        self.lru.keys().copied()
    }
}
