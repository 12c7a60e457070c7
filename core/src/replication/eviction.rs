//! The eviction rules' state and choice (Section V-A): on a loss of c, which available content
//! gives up a slot on an idle server that does not store c.

use super::scheme::Rule;
use rand::seq::SliceRandom;
use rand::{Rng, RngExt};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// Draws RANDOM makes before it gives up on a loss (each draw can hit c itself or a content
/// whose idle servers all store c).
const RANDOM_DRAWS: usize = 16;

/// An eviction rule with what it remembers of past losses.
#[derive(Debug, Clone)]
pub enum Evictor {
    Random,
    Lrl(LrlList),
    Lfl(LflEstimates),
}

impl Evictor {
    /// The rule's state for n contents; ties among contents never lost are broken in a random
    /// order, so no content is the first victim because of its index.
    pub fn new(rule: Rule, n: usize, tau: f64, rng: &mut impl Rng) -> Evictor {
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.shuffle(rng);
        match rule {
            Rule::Random => Evictor::Random,
            Rule::Lrl => Evictor::Lrl(LrlList::new(&order)),
            Rule::Lfl => Evictor::Lfl(LflEstimates::new(&order, tau)),
        }
    }

    /// A (real or virtual) loss of `c` at time `t`.
    pub fn record_loss(&mut self, c: u32, t: f64) {
        match self {
            Evictor::Random => {}
            Evictor::Lrl(list) => list.touch(c),
            Evictor::Lfl(estimates) => estimates.record(c, t),
        }
    }

    /// The victim for a loss of `lost`: the first content in the rule's order among
    /// `available` (the contents with an idle replica) for which `find_slot` finds an idle
    /// slot on a server not storing `lost`; returns (victim, slot). LRL and LFL walk their
    /// order from the least recently / least frequently lost; RANDOM draws from `available`.
    pub fn choose<R: Rng>(
        &self,
        lost: u32,
        available: &[u32],
        is_available: impl Fn(u32) -> bool,
        mut find_slot: impl FnMut(u32, &mut R) -> Option<u32>,
        rng: &mut R,
    ) -> Option<(u32, u32)> {
        let mut try_one = |c: u32, rng: &mut R| {
            if c == lost || !is_available(c) {
                return None;
            }
            find_slot(c, rng).map(|slot| (c, slot))
        };
        match self {
            Evictor::Random => {
                if available.is_empty() {
                    return None;
                }
                (0..RANDOM_DRAWS).find_map(|_| {
                    let c = available[rng.random_range(0..available.len())];
                    try_one(c, rng)
                })
            }
            Evictor::Lrl(list) => list.least_recent().find_map(|c| try_one(c, rng)),
            Evictor::Lfl(estimates) => estimates.least_frequent().find_map(|c| try_one(c, rng)),
        }
    }
}

const NONE: u32 = u32::MAX;

/// The LRL list: contents from the most to the least recently lost, doubly linked so a loss
/// moves its content to the front in O(1).
#[derive(Debug, Clone)]
pub struct LrlList {
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
}

impl LrlList {
    /// The list in `order` (most recently lost first).
    pub fn new(order: &[u32]) -> LrlList {
        let n = order.len();
        let (mut prev, mut next) = (vec![NONE; n], vec![NONE; n]);
        for w in order.windows(2) {
            next[w[0] as usize] = w[1];
            prev[w[1] as usize] = w[0];
        }
        LrlList {
            prev,
            next,
            head: order.first().copied().unwrap_or(NONE),
            tail: order.last().copied().unwrap_or(NONE),
        }
    }

    /// `c` was just lost: to the front.
    pub fn touch(&mut self, c: u32) {
        if self.head == c {
            return;
        }
        let (p, n) = (self.prev[c as usize], self.next[c as usize]);
        // c is not the head, so it has a predecessor.
        self.next[p as usize] = n;
        if n == NONE {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[c as usize] = NONE;
        self.next[c as usize] = self.head;
        self.prev[self.head as usize] = c;
        self.head = c;
    }

    /// Contents from the least recently lost.
    pub fn least_recent(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(self.tail).filter(|&c| c != NONE), |&c| {
            Some(self.prev[c as usize]).filter(|&p| p != NONE)
        })
    }
}

/// LFL's loss-rate estimates: an exponentially weighted moving average with time constant τ,
/// rate_c(t) = (1/τ) Σ_losses e^(−(t − t_i)/τ). Every estimate decays by the same factor, so
/// contents keep their order between losses; each is kept as the time-free key
/// ln Σ_i e^(t_i/τ), ordered in a set (ties among contents never lost by a random rank).
#[derive(Debug, Clone)]
pub struct LflEstimates {
    tau: f64,
    keys: Vec<Key>,
    order: BTreeSet<Key>,
}

#[derive(Debug, Clone, Copy)]
struct Key {
    log_weight: f64,
    rank: u32,
    content: u32,
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> Ordering {
        (self.log_weight.total_cmp(&other.log_weight)).then(self.rank.cmp(&other.rank))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Key {}

impl LflEstimates {
    /// No losses yet; `order` ranks the ties (first: evicted first).
    pub fn new(order: &[u32], tau: f64) -> LflEstimates {
        let mut keys = vec![
            Key {
                log_weight: f64::NEG_INFINITY,
                rank: 0,
                content: 0
            };
            order.len()
        ];
        for (rank, &c) in order.iter().enumerate() {
            keys[c as usize] = Key {
                log_weight: f64::NEG_INFINITY,
                rank: rank as u32,
                content: c,
            };
        }
        let order = keys.iter().copied().collect();
        LflEstimates { tau, keys, order }
    }

    /// A loss of `c` at `t`: key ← ln(e^key + e^(t/τ)).
    pub fn record(&mut self, c: u32, t: f64) {
        let key = &mut self.keys[c as usize];
        self.order.remove(key);
        let (a, b) = (key.log_weight, t / self.tau);
        let (hi, lo) = if a > b { (a, b) } else { (b, a) };
        key.log_weight = hi + (lo - hi).exp().ln_1p();
        self.order.insert(*key);
    }

    /// The estimated loss rate of `c` at `t` (losses per unit time).
    pub fn rate(&self, c: u32, t: f64) -> f64 {
        (self.keys[c as usize].log_weight - t / self.tau).exp() / self.tau
    }

    /// Contents from the smallest estimate.
    pub fn least_frequent(&self) -> impl Iterator<Item = u32> + '_ {
        self.order.iter().map(|k| k.content)
    }
}
