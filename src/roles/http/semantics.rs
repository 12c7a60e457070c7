//! HTTP semantics every role shares (RFC 9110): which methods are served, conditional requests
//! (`If-None-Match` → 304), single byte ranges (`Range` → 206 or 416, `If-Range`), and the
//! headers each answer carries. Pure functions over `hyper`'s types, so they are tested without
//! sockets.

use std::fmt;

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Response, StatusCode, Uri};

use super::body::Body;

/// A representation the server can send: its size, strong validator and media type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    pub len: u64,
    /// A strong entity tag including its double quotes, e.g. `"video/500k/3/125000"`.
    pub etag: String,
    pub content_type: &'static str,
}

/// What a `Range` header asks of an entity of a given length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeRequest {
    /// No usable single range (absent, another unit, malformed, or several ranges): the whole
    /// entity, as RFC 9110 §14.2 lets a server ignore any Range it does not handle.
    Whole,
    /// Bytes `start .. end` (end exclusive, `start < end ≤ len`).
    Part { start: u64, end: u64 },
    /// A well-formed range that selects nothing of this entity: 416.
    Unsatisfiable,
}

/// Parses `Range: bytes=FIRST-[LAST]` or `bytes=-SUFFIX` against an entity of `len` bytes.
pub fn parse_range(value: &[u8], len: u64) -> RangeRequest {
    let Ok(text) = std::str::from_utf8(value) else {
        return RangeRequest::Whole;
    };
    let Some((unit, set)) = text.trim().split_once('=') else {
        return RangeRequest::Whole;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") || set.contains(',') {
        return RangeRequest::Whole;
    }
    let Some((first, last)) = set.trim().split_once('-') else {
        return RangeRequest::Whole;
    };
    let (first, last) = (first.trim(), last.trim());
    match (digits(first), digits(last)) {
        // `-N`: the last N bytes.
        (None, Some(suffix)) if first.is_empty() => {
            if suffix == 0 || len == 0 {
                RangeRequest::Unsatisfiable
            } else {
                RangeRequest::Part {
                    start: len.saturating_sub(suffix),
                    end: len,
                }
            }
        }
        (Some(start), last_pos) if last.is_empty() || last_pos.is_some() => {
            if let Some(last_pos) = last_pos {
                if last_pos < start {
                    // Invalid, not unsatisfiable (§14.1.1): ignored.
                    return RangeRequest::Whole;
                }
            }
            if start >= len {
                return RangeRequest::Unsatisfiable;
            }
            let end = last_pos.map_or(len, |last| last.saturating_add(1).min(len));
            RangeRequest::Part { start, end }
        }
        _ => RangeRequest::Whole,
    }
}

/// A non-empty run of ASCII digits as a number (saturating: positions beyond any entity behave
/// alike), or `None`.
fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.bytes().fold(0u64, |n, b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    }))
}

/// The entity tags of an `If-None-Match` value, with `W/` prefixes dropped (the header uses
/// weak comparison); `None` for `*`. Stops at the first malformed tag.
fn entity_tags(value: &str) -> Option<Vec<&str>> {
    let value = value.trim();
    if value == "*" {
        return None;
    }
    let mut tags = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            break;
        }
        let unweak = rest.strip_prefix("W/").unwrap_or(rest);
        let Some(open) = unweak.strip_prefix('"') else {
            break;
        };
        let Some(close) = open.find('"') else {
            break;
        };
        // The tag with its quotes, as `Entity::etag` holds it.
        tags.push(&unweak[..close + 2]);
        rest = &open[close + 1..];
    }
    Some(tags)
}

/// True when an `If-None-Match` header matches `etag`: the client's copy is current.
pub fn none_match_hits(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| match entity_tags(v) {
            None => true,
            Some(tags) => tags.contains(&etag),
        })
}

/// The answer for `entity` to a GET or HEAD with `headers`: 304 when `If-None-Match` matches,
/// else 206 or 416 for a GET's single range (honoured only when `If-Range`, if sent, is this
/// entity's strong tag), else 200. `body(offset, length)` makes the bytes when some are sent.
pub fn respond(
    method: &Method,
    headers: &HeaderMap,
    entity: &Entity,
    body: impl FnOnce(u64, u64) -> Body,
) -> Response<Body> {
    if none_match_hits(headers, &entity.etag) {
        let mut response = Response::new(Body::Empty);
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        set(&mut response, header::ETAG, &entity.etag);
        return response;
    }
    let range = match headers.get(header::RANGE) {
        Some(value) if method == Method::GET && if_range_allows(headers, &entity.etag) => {
            parse_range(value.as_bytes(), entity.len)
        }
        _ => RangeRequest::Whole,
    };
    let (status, start, end) = match range {
        RangeRequest::Whole => (StatusCode::OK, 0, entity.len),
        RangeRequest::Part { start, end } => (StatusCode::PARTIAL_CONTENT, start, end),
        RangeRequest::Unsatisfiable => {
            let mut response = with_length(StatusCode::RANGE_NOT_SATISFIABLE, Body::Empty, 0);
            set(
                &mut response,
                header::CONTENT_RANGE,
                &format!("bytes */{}", entity.len),
            );
            return response;
        }
    };
    let length = end - start;
    let body = if method == Method::HEAD || length == 0 {
        Body::Empty
    } else {
        body(start, length)
    };
    let mut response = with_length(status, body, length);
    set(&mut response, header::CONTENT_TYPE, entity.content_type);
    set(&mut response, header::ETAG, &entity.etag);
    set(&mut response, header::ACCEPT_RANGES, "bytes");
    if status == StatusCode::PARTIAL_CONTENT {
        let range = format!("bytes {start}-{}/{}", end - 1, entity.len);
        set(&mut response, header::CONTENT_RANGE, &range);
    }
    response
}

/// `If-Range` absent, or equal to the entity's strong tag. We send no `Last-Modified`, so a
/// date never matches and the whole entity is sent (§13.1.5).
fn if_range_allows(headers: &HeaderMap, etag: &str) -> bool {
    match headers.get(header::IF_RANGE) {
        None => true,
        Some(value) => value.as_bytes() == etag.as_bytes(),
    }
}

/// A response whose `Content-Length` is `length` (set explicitly so HEAD answers carry it too).
fn with_length(status: StatusCode, body: Body, length: u64) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let length = match length {
        0 => HeaderValue::from_static("0"),
        _ => HeaderValue::from(length),
    };
    response
        .headers_mut()
        .insert(header::CONTENT_LENGTH, length);
    response
}

/// Sets a header whose value we built; a value that is not a valid header (it cannot happen for
/// the ASCII we write) is left out rather than panicking on a request path.
fn set(response: &mut Response<Body>, name: header::HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
}

/// A short `text/plain` answer explaining an error status.
pub fn error(status: StatusCode, message: impl fmt::Display) -> Response<Body> {
    let text = format!("{message}\n");
    let len = text.len() as u64;
    let mut response = with_length(status, Body::bytes(text), len);
    set(
        &mut response,
        header::CONTENT_TYPE,
        "text/plain; charset=utf-8",
    );
    response
}

/// 200 with `value` as `application/json`.
pub fn json(value: &serde_json::Value) -> Response<Body> {
    let text = value.to_string();
    let len = text.len() as u64;
    let mut response = with_length(StatusCode::OK, Body::bytes(text), len);
    set(&mut response, header::CONTENT_TYPE, "application/json");
    response
}

/// 200 with `length` bytes of a synthetic payload as `application/octet-stream`.
pub fn payload(payload: crate::cdn::Payload, length: u64) -> Response<Body> {
    let mut response = with_length(StatusCode::OK, Body::synthetic(payload, 0, length), length);
    set(
        &mut response,
        header::CONTENT_TYPE,
        "application/octet-stream",
    );
    response
}

/// 302 to `location`, an absolute URL.
pub fn redirect(location: String) -> Response<Body> {
    let mut response = with_length(StatusCode::FOUND, Body::Empty, 0);
    // Validated as `from_str` would (visible ASCII), without copying the URL again.
    let valid = location.is_ascii();
    match HeaderValue::from_maybe_shared(bytes::Bytes::from(location))
        .ok()
        .filter(|_| valid)
    {
        Some(value) => {
            response.headers_mut().insert(header::LOCATION, value);
            response
        }
        None => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the redirect target is not a valid header value",
        ),
    }
}

/// 503 with `Retry-After: 1`, for a server not ready to route yet.
pub fn unavailable(message: impl fmt::Display) -> Response<Body> {
    let mut response = error(StatusCode::SERVICE_UNAVAILABLE, message);
    set(&mut response, header::RETRY_AFTER, "1");
    response
}

/// 405 for anything but GET and HEAD (the roles serve read-only resources); `None` for those.
pub fn refuse_method(method: &Method) -> Option<Response<Body>> {
    if method == Method::GET || method == Method::HEAD {
        return None;
    }
    let mut response = error(
        StatusCode::METHOD_NOT_ALLOWED,
        format_args!("method {method} is not allowed; use GET or HEAD"),
    );
    set(&mut response, header::ALLOW, "GET, HEAD");
    Some(response)
}

/// The request target (path and query) whatever form the request line used: origin-form,
/// absolute-form (proxies) or HTTP/2's `:path`.
pub fn target(uri: &Uri) -> &str {
    uri.path_and_query().map_or("", |p| p.as_str())
}

/// The value of `key` in a query string (`a=1&b=2`), as written (no percent-decoding: the
/// roles' own parameters are plain numbers and names); the first if it repeats.
pub fn query_value<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query.split('&').find_map(|kv| {
        kv.split_once('=')
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| v)
    })
}

/// A HEAD answer carries a GET's headers and no body (RFC 9110 §9.3.2); the explicit
/// `Content-Length` every response here has is kept.
pub fn strip_for_head<B: Default>(method: &Method, response: Response<B>) -> Response<B> {
    if method != Method::HEAD {
        return response;
    }
    let (parts, _) = response.into_parts();
    Response::from_parts(parts, B::default())
}

#[cfg(test)]
mod query_tests {
    use super::query_value;

    #[test]
    fn a_query_value_is_found_by_its_whole_key() {
        assert_eq!(query_value("fb=1,2&pb=3,4", "pb"), Some("3,4"));
        assert_eq!(query_value("xfb=1&fb=2", "fb"), Some("2"));
        assert_eq!(query_value("fb=1&fb=2", "fb"), Some("1"));
        assert_eq!(query_value("fb&pb=", "fb"), None);
        assert_eq!(query_value("fb&pb=", "pb"), Some(""));
        assert_eq!(query_value("", "fb"), None);
    }
}
