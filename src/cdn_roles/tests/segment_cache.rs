//! The synthetic-chunk cache: hits without remaking, its byte bound, and oversized chunks.

use std::cell::Cell;

use crate::cdn_roles::segment_cache::SegmentCache;

/// A maker that counts its calls and fills `n` bytes of `byte`.
fn maker(calls: &Cell<usize>, byte: u8) -> impl FnOnce(usize) -> Vec<u8> + '_ {
    move |n| {
        calls.set(calls.get() + 1);
        vec![byte; n]
    }
}

#[test]
fn a_hit_returns_the_kept_bytes_without_making_them_again() {
    let cache = SegmentCache::new(1000, 1000);
    let calls = Cell::new(0);
    let first = cache.get_or_make("a", 10, maker(&calls, 1)).expect("fits");
    let second = cache.get_or_make("a", 10, maker(&calls, 2)).expect("fits");
    assert_eq!(calls.get(), 1);
    assert_eq!(&first.bytes()[..], &[1; 10]);
    assert_eq!(&second.bytes()[..], &[1; 10]);
    // The same memory, not a copy.
    assert_eq!(first.bytes().as_ptr(), second.bytes().as_ptr());
    assert_eq!(cache.used(), 10);
}

#[test]
fn the_least_recently_used_entries_go_when_the_budget_is_full() {
    let cache = SegmentCache::new(100, 100);
    let calls = Cell::new(0);
    cache.get_or_make("a", 40, maker(&calls, 1));
    cache.get_or_make("b", 40, maker(&calls, 2));
    assert_eq!(cache.used(), 80);
    cache.get_or_make("c", 40, maker(&calls, 3));
    assert_eq!(cache.used(), 80, "a was evicted to make room for c");
    assert_eq!(calls.get(), 3);
    // b and c are still held; a is made again (evicting b, read before c).
    cache.get_or_make("b", 40, maker(&calls, 9));
    cache.get_or_make("c", 40, maker(&calls, 9));
    assert_eq!(calls.get(), 3);
    let a = cache.get_or_make("a", 40, maker(&calls, 4)).expect("fits");
    assert_eq!(calls.get(), 4);
    assert_eq!(&a.bytes()[..], &[4; 40]);
    assert!(cache.used() <= 100);
}

#[test]
fn chunks_above_the_entry_bound_are_not_made_or_kept() {
    let cache = SegmentCache::new(100, 50);
    let calls = Cell::new(0);
    assert!(cache.get_or_make("big", 51, maker(&calls, 1)).is_none());
    assert_eq!(calls.get(), 0);
    assert_eq!(cache.used(), 0);
    // The entry bound never exceeds the budget.
    let small = SegmentCache::new(30, 50);
    assert!(small.get_or_make("x", 31, maker(&calls, 1)).is_none());
    assert!(small.get_or_make("x", 30, maker(&calls, 1)).is_some());
    assert_eq!(small.used(), 30);
}

#[test]
fn the_budget_counts_the_whole_pages_a_chunk_takes() {
    let cache = SegmentCache::new(1 << 20, 1 << 20);
    let calls = Cell::new(0);
    // 20 000 bytes: sent by `sendfile`, so kept in a file of five 4 KiB pages (a memfd, or
    // folios that fit within it).
    let chunk = cache
        .get_or_make("a", 20_000, maker(&calls, 3))
        .expect("fits");
    assert_eq!(chunk.len(), 20_000);
    let pages = if chunk.file().is_some() {
        5 * 4096
    } else {
        20_000
    };
    assert_eq!(cache.used(), pages);
}
