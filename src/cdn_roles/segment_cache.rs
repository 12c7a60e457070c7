//! A bounded in-memory copy of the chunks a content server has served.
//!
//! Synthetic payloads are deterministic, so a chunk generated once can be sent again and again
//! from one immutable copy: no byte generation and no fresh buffers per response (generating
//! and zero-filling them was most of a content server's CPU under load). A copy the HTTP/1.1 fast
//! path may send by `sendfile` is kept in a read-only file of large folios or a sealed memfd
//! (`roles::http::sealed`), so that it is not copied into each connection's socket. Media files
//! are kept likewise, so hot segments skip the blocking pool's per-read thread hops. Entries are
//! keyed by what names exactly their bytes: a synthetic chunk's strong ETag, a file's path with
//! its length and modification time (a changed file is a new key; its old copy ages out). The cache
//! holds at most `budget` bytes of memory, a chunk counted by what it takes (its file's
//! blocks, whole pages); when a new chunk does not fit, the least recently used entries
//! go first (`crate::lru`, the ICN Content Store's table too). Chunks above `max_entry` are
//! never kept: the caller streams those as before, so one huge chunk never stalls a runtime
//! thread while it is generated whole.

use std::sync::Mutex;

use crate::lru::ByteLru;
use crate::roles::http::sealed::Sealed;

/// The default bound on cached bytes per content server: the whole catalogue of a typical lab
/// (hundreds of chunks of ≤ 1 MB) fits, and a lab of a dozen servers still fits in a few GiB.
pub const DEFAULT_BUDGET: usize = 256 * 1024 * 1024;
/// The largest chunk cached: generating it takes a few milliseconds on the calling thread.
pub const DEFAULT_MAX_ENTRY: usize = 16 * 1024 * 1024;

pub struct SegmentCache {
    max_entry: usize,
    /// Held only to look up or insert, never while generating.
    state: Mutex<ByteLru<String, Sealed>>,
}

impl Default for SegmentCache {
    fn default() -> SegmentCache {
        SegmentCache::new(DEFAULT_BUDGET, DEFAULT_MAX_ENTRY)
    }
}

impl SegmentCache {
    /// At most `budget` bytes in all, and no entry above `max_entry` (nor above `budget`).
    pub fn new(budget: usize, max_entry: usize) -> SegmentCache {
        SegmentCache {
            max_entry: max_entry.min(budget),
            state: Mutex::new(ByteLru::new(budget)),
        }
    }

    /// The `len` bytes named by `key`, made by `make` on a miss and kept; `None` (and `make` not
    /// called) when `len` is above the entry bound. Concurrent misses for one key may both
    /// call `make`: the bytes are deterministic, so whichever copy is kept is right.
    pub fn get_or_make(
        &self,
        key: &str,
        len: u64,
        make: impl FnOnce(usize) -> Vec<u8>,
    ) -> Option<Sealed> {
        let len = self.admits(len)?;
        if let Some(bytes) = self.get(key) {
            return Some(bytes);
        }
        Some(self.insert(key, Sealed::new(make(len))))
    }

    /// `len` as a usize when an entry of `len` bytes may be kept.
    pub fn admits(&self, len: u64) -> Option<usize> {
        usize::try_from(len).ok().filter(|&n| n <= self.max_entry)
    }

    /// The bytes kept under `key`.
    pub fn get(&self, key: &str) -> Option<Sealed> {
        self.lock().get(key).cloned()
    }

    /// Keeps `bytes` under `key`, evicting the least recently used entries to make room, and
    /// returns what is kept there (the earlier copy if another caller inserted one first). Bytes
    /// above the entry bound are returned without being kept.
    pub fn insert(&self, key: &str, bytes: Sealed) -> Sealed {
        if bytes.len() > self.max_entry {
            return bytes;
        }
        let mut state = self.lock();
        if let Some(kept) = state.get(key) {
            return kept.clone();
        }
        // What it takes in memory (whole pages or folios), so the budget bounds memory.
        let size = bytes.footprint();
        state.insert(key.to_string(), bytes.clone(), size);
        bytes
    }

    /// Memory held now: the chunks' footprints (`Sealed::footprint`).
    pub fn used(&self) -> usize {
        self.lock().used()
    }

    /// A poisoned lock only means another thread panicked between two consistent states (every
    /// update above completes before its guard drops), so its data is still usable.
    fn lock(&self) -> std::sync::MutexGuard<'_, ByteLru<String, Sealed>> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
