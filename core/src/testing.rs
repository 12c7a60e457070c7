//! Helpers the tests share: the proptest strategies that damage a valid text or byte string
//! (the parsers' property tests, RELIABILITY.md, in this crate and the main one), and an origin
//! instant. Built for this crate's tests and, with the `testing` feature, for the main crate's.

use proptest::prelude::*;
use std::time::Instant;

/// Characters that mean something to TOML, HLS, XML or a URL, so that damage hits syntax.
const SYNTAX: &[char] = &[
    '"', '\'', '=', '[', ']', '{', '}', ',', '\n', '#', '$', '<', '>', '/', ':', '0', '9', '-',
    '.', ' ', '@', '%', '&', ';', '\\', '\r', 'é', '\u{0}',
];

/// One edit of a text or byte string, at a position given as a fraction of its length.
#[derive(Debug, Clone)]
enum Edit<T> {
    Replace(f64, T),
    Insert(f64, T),
    Delete(f64),
    /// Repeats a slice (a line, a tag, a table) somewhere else.
    Copy {
        from: f64,
        len: usize,
        to: f64,
    },
    Cut(f64),
}

fn edits<T: Clone + std::fmt::Debug + 'static>(
    item: impl Strategy<Value = T> + Clone + 'static,
) -> impl Strategy<Value = Vec<Edit<T>>> {
    let edit = prop_oneof![
        4 => (0.0..1.0f64, item.clone()).prop_map(|(at, c)| Edit::Replace(at, c)),
        3 => (0.0..1.0f64, item).prop_map(|(at, c)| Edit::Insert(at, c)),
        3 => (0.0..1.0f64).prop_map(Edit::Delete),
        1 => (0.0..1.0f64, 1..40usize, 0.0..1.0f64).prop_map(|(from, len, to)| Edit::Copy { from, len, to }),
        1 => (0.0..1.0f64).prop_map(Edit::Cut),
    ];
    prop::collection::vec(edit, 1..8)
}

fn apply<T: Clone>(mut items: Vec<T>, edits: Vec<Edit<T>>) -> Vec<T> {
    let at = |fraction: f64, len: usize| ((len as f64 * fraction) as usize).min(len);
    for edit in edits {
        let len = items.len();
        match edit {
            Edit::Replace(f, c) if len > 0 => items[at(f, len - 1)] = c,
            Edit::Insert(f, c) => items.insert(at(f, len), c),
            Edit::Delete(f) if len > 0 => {
                items.remove(at(f, len - 1));
            }
            Edit::Copy { from, len: n, to } => {
                let start = at(from, len);
                let slice = items[start..(start + n).min(len)].to_vec();
                let to = at(to, len);
                items.splice(to..to, slice);
            }
            Edit::Cut(f) => items.truncate(at(f, len)),
            _ => {}
        }
    }
    items
}

/// `base` with a few edits: near-valid text that gets past a parser's first checks.
pub fn damaged(base: String) -> impl Strategy<Value = String> {
    let char = prop_oneof![3 => prop::sample::select(SYNTAX), 1 => any::<char>()];
    edits(char).prop_map(move |edits| apply(base.chars().collect(), edits).into_iter().collect())
}

/// One of `bases`, damaged.
pub fn damaged_one_of(bases: Vec<String>) -> impl Strategy<Value = String> {
    prop::sample::select(bases).prop_flat_map(damaged)
}

/// `base` with a few byte edits.
pub fn damaged_bytes(base: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    edits(any::<u8>()).prop_map(move |edits| apply(base.clone(), edits))
}

/// An instant to count test times from: the one clock read the core allows itself, since an
/// `Instant` can only come from the clock.
#[allow(clippy::disallowed_methods)]
pub fn origin() -> Instant {
    Instant::now()
}
