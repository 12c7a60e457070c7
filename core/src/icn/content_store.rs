//! The Content Store (NFD's CS): Data kept by name, least recently used evicted first, bounded
//! by bytes (`crate::lru::ByteLru`), with the counters a router reports. The Data is of the
//! caller's type (bytes, or bytes with the metadata an HTTP answer carries), sized by the
//! caller; cheap clones (`Bytes`, an `Arc`) suit it, as every hit hands out a copy.

use super::name::Name;
use crate::lru::ByteLru;

/// What the Content Store has done since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CsStats {
    pub hits: u64,
    pub misses: u64,
    /// Objects stored (a replaced object counts again).
    pub inserts: u64,
    /// Objects evicted to make room for others.
    pub evictions: u64,
    /// Objects not stored because they are larger than the whole capacity.
    pub too_large: u64,
}

pub struct ContentStore<D> {
    table: ByteLru<Name, D>,
    stats: CsStats,
}

impl<D: Clone> ContentStore<D> {
    /// At most `capacity` bytes of Data; 0 disables caching (every lookup misses).
    pub fn new(capacity: usize) -> ContentStore<D> {
        ContentStore {
            table: ByteLru::new(capacity),
            stats: CsStats::default(),
        }
    }

    /// The Data named `name`, now the most recently used; counts a hit or a miss.
    pub fn get(&mut self, name: &Name) -> Option<D> {
        let found = self.table.get(name).cloned();
        match found {
            Some(_) => self.stats.hits += 1,
            None => self.stats.misses += 1,
        }
        found
    }

    /// Keeps `data` (`size` bytes) under `name`, evicting the least recently used objects until
    /// it fits; false (and nothing evicted) when it is larger than the capacity.
    pub fn insert(&mut self, name: Name, data: D, size: usize) -> bool {
        let done = self.table.insert(name, data, size);
        self.stats.evictions += done.evicted as u64;
        if done.stored {
            self.stats.inserts += 1;
        } else {
            self.stats.too_large += 1;
        }
        done.stored
    }

    pub fn stats(&self) -> CsStats {
        self.stats
    }

    pub fn capacity(&self) -> usize {
        self.table.capacity()
    }

    /// Bytes of Data held now.
    pub fn bytes(&self) -> usize {
        self.table.used()
    }

    /// Objects held now.
    pub fn objects(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::icn::name::name;

    fn data(len: usize, byte: u8) -> Vec<u8> {
        vec![byte; len]
    }

    #[test]
    fn evicts_in_recency_order_and_counts_bytes() {
        let mut cs = ContentStore::<Vec<u8>>::new(1000);
        assert!(cs.insert(name("/a/1"), data(400, 1), 400));
        assert!(cs.insert(name("/a/2"), data(400, 2), 400));
        assert_eq!((cs.bytes(), cs.objects()), (800, 2));
        // Reading /a/1 leaves /a/2 the least recently used: it goes for /a/3.
        assert_eq!(cs.get(&name("/a/1")), Some(data(400, 1)));
        assert!(cs.insert(name("/a/3"), data(300, 3), 300));
        assert_eq!(cs.get(&name("/a/2")), None);
        assert_eq!(cs.get(&name("/a/3")), Some(data(300, 3)));
        assert_eq!((cs.bytes(), cs.objects()), (700, 2));
        // /a/1 was read before /a/3, so it goes first: 500 more bytes need only it out.
        assert!(cs.insert(name("/a/4"), data(500, 4), 500));
        assert_eq!(cs.get(&name("/a/1")), None);
        assert_eq!(cs.get(&name("/a/3")), Some(data(300, 3)));
        assert_eq!((cs.bytes(), cs.objects()), (800, 2));
        assert_eq!(
            cs.stats(),
            CsStats {
                hits: 3,
                misses: 2,
                inserts: 4,
                evictions: 2,
                too_large: 0
            }
        );
    }

    #[test]
    fn an_object_larger_than_the_capacity_is_not_stored() {
        let mut cs = ContentStore::<Vec<u8>>::new(100);
        cs.insert(name("/small"), data(60, 1), 60);
        assert!(!cs.insert(name("/big"), data(101, 2), 101));
        assert_eq!(cs.get(&name("/big")), None);
        assert_eq!(cs.get(&name("/small")), Some(data(60, 1)), "kept");
        assert_eq!(cs.stats().too_large, 1);
        assert_eq!(cs.stats().evictions, 0);
        assert_eq!(cs.bytes(), 60);
    }

    #[test]
    fn capacity_zero_caches_nothing() {
        let mut cs = ContentStore::<Vec<u8>>::new(0);
        assert!(!cs.insert(name("/x"), data(1, 1), 1));
        assert!(!cs.insert(name("/empty"), Vec::new(), 0));
        assert_eq!(cs.get(&name("/x")), None);
        assert_eq!(cs.objects(), 0);
        assert_eq!(cs.capacity(), 0);
    }
}
