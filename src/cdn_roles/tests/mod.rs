//! Tests of the role servers: HTTP semantics and handlers called directly (no sockets), config
//! parsing, the exchange's sans-IO steps, and loopback runs of whole roles with real QUIC.

mod config;
mod content;
mod exchange;
mod http;
mod loopback;
mod segment_cache;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use crate::cdn::{Container, Video};
use crate::roles::http::Body;
use crate::testing::TempDir;

/// The paper's ladder, 2-second chunks: segments of 125 000, 250 000 and 500 000 bytes.
fn video(name: &str, segments: usize) -> Video {
    crate::cdn::paper_video(name, segments, Container::Ts).expect("test video")
}

fn request(method: Method, target: &str, headers: &[(&str, &str)]) -> Request<()> {
    let mut builder = Request::builder().method(method).uri(target);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(()).expect("test request")
}

/// A response with its body read.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
        self.headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    }

    fn content_length(&self) -> Option<u64> {
        self.header("content-length")?.parse().ok()
    }
}

async fn read(response: Response<Body>) -> Answer {
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}
