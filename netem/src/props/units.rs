//! tc's units: no text panics, an error quotes the text it refuses, and what the `format_*`
//! functions write reads back as the same value.

use crate::params::MAX_LIMIT;
use crate::units::*;
use proptest::prelude::*;

/// Text shaped like a tc value: sign, digits, decimals, spaces and a unit, valid or not.
fn near_valid() -> impl Strategy<Value = String> {
    "[ ]?[+-]?[0-9]{0,24}(\\.[0-9]{0,30})?[ ]?(s|ms|us|ns|sec|msecs|bit|kbit|mbit|gbit|tbit|kibit|tibit|bps|mbps|tbps|%|%%|x)?"
}

/// Any text, or text shaped like a value.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), near_valid()]
}

proptest! {
    #[test]
    fn prop_units_errors_quote_the_text(text in any_text()) {
        let quoted = format!("`{}`", text.trim());
        for result in [
            parse_duration_ns(&text).map(|_| ()),
            parse_rate_bps(&text).map(|_| ()),
            parse_percent(&text).map(|_| ()),
        ] {
            if let Err(e) = result {
                prop_assert!(e.0.contains(&quoted), "{:?} does not quote {quoted}", e.0);
            }
        }
    }

    #[test]
    fn prop_units_limit_is_a_whole_number_in_range(text in prop_oneof![any_text(), "[ ]?[+-]?[0-9]{1,7}[ ]?"]) {
        match (parse_limit(&text), text.trim().parse::<u32>()) {
            (Ok(limit), Ok(n)) => prop_assert!(limit == n && (1..=MAX_LIMIT).contains(&n)),
            (Ok(limit), Err(_)) => prop_assert!(false, "{text:?} read as {limit}"),
            (Err(e), Ok(0)) => prop_assert!(e.0.contains("at least 1"), "{}", e.0),
            (Err(e), Ok(n)) => prop_assert!(
                n > MAX_LIMIT && e.0.contains(&n.to_string()) && e.0.contains(&MAX_LIMIT.to_string()),
                "{n}: {}", e.0
            ),
            (Err(e), Err(_)) => prop_assert!(e.0.contains(&format!("`{text}`")), "{}", e.0),
        }
    }

    #[test]
    fn prop_units_durations_round_trip(ns in prop_oneof![0..=u64::MAX / 2, 0..10_000_000_000u64]) {
        prop_assert_eq!(parse_duration_ns(&format_duration_ns(ns)), Ok(ns), "{}", format_duration_ns(ns));
    }

    #[test]
    fn prop_units_rates_round_trip(bps in prop_oneof![1..=u64::MAX / 2, 1..10_000_000_000u64]) {
        prop_assert_eq!(parse_rate_bps(&format_rate_bps(bps)), Ok(bps), "{}", format_rate_bps(bps));
    }

    #[test]
    fn prop_units_percentages_round_trip(p in prop_oneof![0.0..=1.0f64, Just(0.0), Just(1.0)]) {
        let text = format_percent(p);
        let back = parse_percent(&text).map_err(|e| TestCaseError::fail(e.0))?;
        // Written to nine decimals of a percent: 5·10⁻¹² of a probability at most.
        prop_assert!((back - p).abs() <= 5.1e-12, "{p} → {text} → {back}");
    }

    #[test]
    fn prop_units_values_are_in_range(text in near_valid()) {
        if let Ok(ns) = parse_duration_ns(&text) {
            prop_assert!(ns <= u64::MAX / 2);
        }
        if let Ok(bps) = parse_rate_bps(&text) {
            prop_assert!((1..=u64::MAX / 2).contains(&bps));
        }
        if let Ok(p) = parse_percent(&text) {
            prop_assert!((0.0..=1.0).contains(&p));
        }
    }
}
