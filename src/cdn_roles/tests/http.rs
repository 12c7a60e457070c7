//! Range, conditional and HEAD handling of `http::respond`, and the shared error answers.

use hyper::header::HeaderMap;
use hyper::{Method, StatusCode};

use super::{read, Answer};
use crate::roles::http::body::Body;
use crate::roles::http::semantics::{
    none_match_hits, parse_range, redirect, refuse_method, respond, strip_for_head, Entity,
    RangeRequest,
};

#[test]
fn ranges() {
    use RangeRequest::*;
    let part = |start, end| Part { start, end };
    let cases: &[(&str, u64, RangeRequest)] = &[
        ("bytes=0-99", 1000, part(0, 100)),
        ("bytes=100-", 1000, part(100, 1000)),
        ("bytes=-100", 1000, part(900, 1000)),
        ("bytes=-5000", 1000, part(0, 1000)),
        ("bytes=990-5000", 1000, part(990, 1000)),
        ("bytes=999-999", 1000, part(999, 1000)),
        ("BYTES = 1-2", 1000, part(1, 3)),
        ("bytes=1000-", 1000, Unsatisfiable),
        ("bytes=5000-6000", 1000, Unsatisfiable),
        ("bytes=-0", 1000, Unsatisfiable),
        ("bytes=0-", 0, Unsatisfiable),
        ("bytes=99999999999999999999999-", 1000, Unsatisfiable),
        // Ignored: invalid, another unit, several ranges.
        ("bytes=5-1", 1000, Whole),
        ("items=0-1", 1000, Whole),
        ("bytes=0-1,5-6", 1000, Whole),
        ("bytes=a-b", 1000, Whole),
        ("bytes=-", 1000, Whole),
        ("bytes 0-1", 1000, Whole),
        ("bytes=+1-2", 1000, Whole),
    ];
    for (header, len, expected) in cases {
        assert_eq!(
            parse_range(header.as_bytes(), *len),
            *expected,
            "{header} of {len} bytes"
        );
    }
}

fn entity() -> Entity {
    Entity {
        len: 10,
        etag: "\"v/500k/0/10\"".into(),
        content_type: "video/mp2t",
    }
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            hyper::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    map
}

async fn answer(method: Method, pairs: &[(&str, &str)]) -> Answer {
    let response = respond(&method, &headers(pairs), &entity(), |offset, length| {
        let bytes: Vec<u8> = (offset..offset + length).map(|b| b as u8 + b'a').collect();
        Body::bytes(bytes)
    });
    read(strip_for_head(&method, response)).await
}

#[tokio::test]
async fn whole_entity_has_its_headers() {
    let a = answer(Method::GET, &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(&a.body[..], b"abcdefghij");
    assert_eq!(a.content_length(), Some(10));
    assert_eq!(a.header("etag"), Some("\"v/500k/0/10\""));
    assert_eq!(a.header("content-type"), Some("video/mp2t"));
    assert_eq!(a.header("accept-ranges"), Some("bytes"));
    assert_eq!(a.header("content-range"), None);
}

#[tokio::test]
async fn range_gives_206_with_content_range() {
    let a = answer(Method::GET, &[("range", "bytes=2-4")]).await;
    assert_eq!(a.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(&a.body[..], b"cde");
    assert_eq!(a.content_length(), Some(3));
    assert_eq!(a.header("content-range"), Some("bytes 2-4/10"));
    let suffix = answer(Method::GET, &[("range", "bytes=-3")]).await;
    assert_eq!(&suffix.body[..], b"hij");
    assert_eq!(suffix.header("content-range"), Some("bytes 7-9/10"));
}

#[tokio::test]
async fn unsatisfiable_range_gives_416() {
    let a = answer(Method::GET, &[("range", "bytes=10-")]).await;
    assert_eq!(a.status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(a.header("content-range"), Some("bytes */10"));
    assert!(a.body.is_empty());
}

#[tokio::test]
async fn if_range_mismatch_sends_the_whole_entity() {
    let stale = answer(
        Method::GET,
        &[("range", "bytes=2-4"), ("if-range", "\"old\"")],
    )
    .await;
    assert_eq!(stale.status, StatusCode::OK);
    assert_eq!(stale.body.len(), 10);
    let current = answer(
        Method::GET,
        &[("range", "bytes=2-4"), ("if-range", "\"v/500k/0/10\"")],
    )
    .await;
    assert_eq!(current.status, StatusCode::PARTIAL_CONTENT);
}

#[tokio::test]
async fn matching_if_none_match_gives_304() {
    for value in [
        "\"v/500k/0/10\"",
        "W/\"v/500k/0/10\"",
        "\"x\", \"v/500k/0/10\"",
        "*",
    ] {
        let a = answer(
            Method::GET,
            &[("if-none-match", value), ("range", "bytes=0-1")],
        )
        .await;
        assert_eq!(a.status, StatusCode::NOT_MODIFIED, "{value}");
        assert_eq!(a.header("etag"), Some("\"v/500k/0/10\""));
        assert!(a.body.is_empty());
    }
    let other = answer(Method::GET, &[("if-none-match", "\"v/500k/0/11\"")]).await;
    assert_eq!(other.status, StatusCode::OK);
    // A comma inside a tag is part of the tag, not a separator.
    let tags = headers(&[("if-none-match", "\"a,\"v/500k/0/10\"\"")]);
    assert!(!none_match_hits(&tags, "\"v/500k/0/10\""));
}

#[tokio::test]
async fn head_has_get_headers_and_no_body() {
    let a = answer(Method::HEAD, &[("range", "bytes=2-4")]).await;
    // Range is defined for GET only: HEAD describes the whole entity.
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.content_length(), Some(10));
    assert_eq!(a.header("etag"), Some("\"v/500k/0/10\""));
    assert!(a.body.is_empty());
}

#[tokio::test]
async fn shared_answers() {
    assert!(refuse_method(&Method::GET).is_none());
    assert!(refuse_method(&Method::HEAD).is_none());
    let refused = read(refuse_method(&Method::POST).expect("POST refused")).await;
    assert_eq!(refused.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(refused.header("allow"), Some("GET, HEAD"));
    let moved = read(redirect("http://dcs1/v/500k/seg-00000.ts".into())).await;
    assert_eq!(moved.status, StatusCode::FOUND);
    assert_eq!(
        moved.header("location"),
        Some("http://dcs1/v/500k/seg-00000.ts")
    );
    assert_eq!(moved.content_length(), Some(0));
}
