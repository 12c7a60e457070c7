//! `Range` headers (RFC 9110 §14): no value panics the parser, a part is always inside the
//! entity, and a range written as a client writes it reads back as the bytes it names.

use super::damaged;
use crate::roles::http::semantics::{parse_range, RangeRequest};
use proptest::prelude::*;

fn inside(request: RangeRequest, len: u64) -> Result<(), TestCaseError> {
    if let RangeRequest::Part { start, end } = request {
        prop_assert!(start < end && end <= len, "{start}..{end} of {len}");
    }
    Ok(())
}

fn header() -> impl Strategy<Value = String> {
    (any::<u64>(), any::<u64>()).prop_flat_map(|(a, b)| damaged(format!("bytes={a}-{b}")))
}

proptest! {
    #[test]
    fn prop_range_any_value_stays_inside(
        value in prop_oneof![prop::collection::vec(any::<u8>(), 0..40), header().prop_map(String::into_bytes)],
        len in prop_oneof![Just(0u64), 1..10_000u64, any::<u64>()],
    ) {
        inside(parse_range(&value, len), len)?;
    }

    #[test]
    fn prop_range_written_ranges_read_back(first in 0..20_000u64, span in 0..20_000u64, len in 0..10_000u64) {
        let last = first + span;
        let want = if first >= len {
            RangeRequest::Unsatisfiable
        } else {
            RangeRequest::Part { start: first, end: (last + 1).min(len) }
        };
        prop_assert_eq!(parse_range(format!("bytes={first}-{last}").as_bytes(), len), want);
        let open = if first >= len { want } else { RangeRequest::Part { start: first, end: len } };
        prop_assert_eq!(parse_range(format!("bytes={first}-").as_bytes(), len), open);
        let suffix = if span == 0 || len == 0 {
            RangeRequest::Unsatisfiable
        } else {
            RangeRequest::Part { start: len.saturating_sub(span), end: len }
        };
        prop_assert_eq!(parse_range(format!(" Bytes = -{span} ").as_bytes(), len), suffix);
    }
}
