//! A least-recently-used map bounded by bytes, not by entries: what a cache of objects of very
//! different sizes needs (the ICN Content Store, a content server's chunk cache). Sans-IO and
//! deterministic: recency is a counter bumped by every lookup and insertion, never a clock.
//!
//! Eviction order is exact LRU (a `BTreeMap` from recency stamp to key gives the oldest in
//! O(log n)); the `lru` crate would give O(1) but counts entries, so the byte accounting would
//! sit beside it anyway.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// Keys of type `K` to values of type `V`, each charged the size given when it was inserted.
#[derive(Debug)]
pub struct ByteLru<K, V> {
    capacity: usize,
    used: usize,
    entries: HashMap<K, Entry<V>>,
    /// Recency stamp → key, oldest first.
    recency: BTreeMap<u64, K>,
    next_stamp: u64,
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    /// What the entry is charged: its size, and at least one byte so that empty values cannot
    /// grow the map without bound.
    charge: usize,
    stamp: u64,
}

/// What an insertion did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insertion {
    /// False when the value is larger than the whole capacity (nothing was evicted for it).
    pub stored: bool,
    /// Entries evicted to make room, least recently used first.
    pub evicted: usize,
}

impl<K: Hash + Eq + Clone, V> ByteLru<K, V> {
    /// At most `capacity` bytes in all; a capacity of 0 stores nothing.
    pub fn new(capacity: usize) -> ByteLru<K, V> {
        ByteLru {
            capacity,
            used: 0,
            entries: HashMap::new(),
            recency: BTreeMap::new(),
            next_stamp: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes charged to the entries held now.
    pub fn used(&self) -> usize {
        self.used
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `key` is held, without making it the most recently used.
    pub fn contains<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.contains_key(key)
    }

    /// The keys held, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.keys()
    }

    /// The least recently used key: the next to be evicted.
    pub fn oldest(&self) -> Option<&K> {
        self.recency.values().next()
    }

    /// The value under `key`, which becomes the most recently used.
    pub fn get<Q>(&mut self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let stamp = self.stamp();
        let entry = self.entries.get_mut(key)?;
        if let Some(key) = self.recency.remove(&entry.stamp) {
            self.recency.insert(stamp, key);
        }
        entry.stamp = stamp;
        Some(&entry.value)
    }

    /// Keeps `value` (of `size` bytes) under `key` as the most recently used entry, replacing
    /// what was there and evicting the least recently used entries until it fits. A value
    /// larger than the capacity is not kept, and evicts nothing.
    pub fn insert(&mut self, key: K, value: V, size: usize) -> Insertion {
        let charge = size.max(1);
        if charge > self.capacity {
            return Insertion {
                stored: false,
                evicted: 0,
            };
        }
        if let Some(old) = self.entries.remove(&key) {
            self.recency.remove(&old.stamp);
            self.used -= old.charge;
        }
        let mut evicted = 0;
        while self.used + charge > self.capacity {
            let Some((_, oldest)) = self.recency.pop_first() else {
                break;
            };
            if let Some(gone) = self.entries.remove(&oldest) {
                self.used -= gone.charge;
                evicted += 1;
            }
        }
        let stamp = self.stamp();
        self.recency.insert(stamp, key.clone());
        self.entries.insert(
            key,
            Entry {
                value,
                charge,
                stamp,
            },
        );
        self.used += charge;
        Insertion {
            stored: true,
            evicted,
        }
    }

    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(lru: &ByteLru<&'static str, u32>) -> Vec<&'static str> {
        lru.recency.values().copied().collect()
    }

    #[test]
    fn the_least_recently_used_goes_first() {
        let mut lru = ByteLru::new(30);
        for (i, key) in ["a", "b", "c"].into_iter().enumerate() {
            assert!(lru.insert(key, i as u32, 10).stored);
        }
        // Reading `a` makes `b` the least recently used.
        assert_eq!(lru.get("a"), Some(&0));
        let made_room = lru.insert("d", 3, 10);
        assert_eq!(
            made_room,
            Insertion {
                stored: true,
                evicted: 1
            }
        );
        assert_eq!(lru.get("b"), None);
        assert_eq!(keys(&lru), ["c", "a", "d"]);
        assert_eq!(lru.used(), 30);
    }

    #[test]
    fn bytes_are_accounted_on_replace_and_evict() {
        let mut lru = ByteLru::new(100);
        lru.insert("a", 1, 40);
        lru.insert("b", 2, 40);
        // Replacing `a` frees its old 40 bytes before charging 30.
        assert_eq!(lru.insert("a", 3, 30).evicted, 0);
        assert_eq!(lru.used(), 70);
        assert_eq!(lru.get("a"), Some(&3));
        // 70 bytes need both others gone (b first, then a).
        assert_eq!(lru.insert("c", 4, 70).evicted, 1);
        assert_eq!(lru.used(), 100);
        assert_eq!(lru.insert("d", 5, 90).evicted, 2);
        assert_eq!((lru.used(), lru.len()), (90, 1));
    }

    #[test]
    fn a_value_larger_than_the_capacity_is_not_kept() {
        let mut lru = ByteLru::new(50);
        lru.insert("a", 1, 50);
        assert_eq!(
            lru.insert("big", 2, 51),
            Insertion {
                stored: false,
                evicted: 0
            }
        );
        assert_eq!(lru.get("a"), Some(&1), "nothing was evicted for it");
        assert_eq!(lru.get("big"), None);
        // Capacity 0 keeps nothing, not even an empty value.
        let mut none = ByteLru::new(0);
        assert!(!none.insert("empty", 1, 0).stored);
        assert!(none.is_empty());
    }

    #[test]
    fn empty_values_still_cost_a_byte() {
        let mut lru = ByteLru::new(3);
        for key in ["a", "b", "c", "d"] {
            lru.insert(key, 0, 0);
        }
        assert_eq!((lru.len(), lru.used()), (3, 3));
        assert_eq!(keys(&lru), ["b", "c", "d"]);
    }
}
