//! The daemon's control protocol (one JSON line per request and response): no line panics the
//! parser, a refusal quotes the line, and every request and response reads back as written.

use crate::daemon_control::{parse_request, Request, Response};
use crate::params::{Distribution, Impairments};
use proptest::prelude::*;

fn impairments() -> impl Strategy<Value = Impairments> {
    (
        (any::<u64>(), any::<u64>(), 0.0..=1.0f64),
        prop::option::of(prop::sample::select(Distribution::ALL.to_vec())),
        (0.0..=1.0f64, 0.0..=1.0f64),
        prop::option::of(any::<u64>()),
        any::<u32>(),
    )
        .prop_map(
            |(
                (delay_ns, jitter_ns, delay_correlation),
                distribution,
                (loss, loss_correlation),
                rate_bps,
                limit,
            )| Impairments {
                delay_ns,
                jitter_ns,
                delay_correlation,
                distribution,
                loss,
                loss_correlation,
                rate_bps,
                limit,
            },
        )
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        Just(Request::Ping),
        Just(Request::Show),
        (any::<String>(), impairments())
            .prop_map(|(id, impairments)| Request::Set { id, impairments }),
    ]
}

/// A valid request line with one of its characters replaced, or cut short.
fn damaged_line() -> impl Strategy<Value = String> {
    (
        request(),
        any::<prop::sample::Index>(),
        any::<char>(),
        any::<bool>(),
    )
        .prop_map(|(r, at, c, cut)| {
            let line: Vec<char> = serde_json::to_string(&r)
                .unwrap_or_default()
                .chars()
                .collect();
            let at = at.index(line.len().max(1)).min(line.len());
            let mut chars = line[..at].to_vec();
            if !cut {
                chars.push(c);
                chars.extend_from_slice(line.get(at + 1..).unwrap_or_default());
            }
            chars.into_iter().collect()
        })
}

proptest! {
    #[test]
    fn prop_control_requests_refusals_quote_the_line(line in prop_oneof![any::<String>(), damaged_line()]) {
        if let Err(e) = parse_request(&line) {
            prop_assert!(e.starts_with(&format!("bad request `{}`: ", line.trim())), "{e}");
        }
    }

    #[test]
    fn prop_control_requests_round_trip(r in request()) {
        let line = serde_json::to_string(&r).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(parse_request(&line), Ok(r));
    }

    #[test]
    fn prop_control_responses_round_trip(error in prop::option::of(any::<String>())) {
        let response = match error {
            Some(e) => Response::error(e),
            None => Response::ok(),
        };
        let line = response.to_line();
        prop_assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'), "one line: {line:?}");
        let back: Response = serde_json::from_str(&line).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, response);
    }
}
