//! Property tests of the parsers that read outside input (RELIABILITY.md). Every test is named
//! `prop_…`, so `-E 'test(/prop_/)'` selects them all (with netem's, `control::props` and
//! the core crate's); each runs proptest's 256 cases unless `PROPTEST_CASES` asks for more. The
//! strategies they share are the core crate's (`cdnlab_core::testing`).

mod configs;
mod http_range;
mod topology;

pub(crate) use cdnlab_core::testing::{damaged, damaged_bytes, damaged_one_of};
