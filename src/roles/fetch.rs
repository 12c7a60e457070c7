//! A role's HTTP client, and taking a body from a peer over HTTP without trusting the peer
//! for its size: exactly a size known in advance (a chunk, a replica), at most a limit, or
//! read through and counted (a load generator's answers). What a broken or hostile sender can
//! make a role hold is bounded by each.

use crate::roles::http::describe;
use bytes::{Bytes, BytesMut};

/// The builder of every role's HTTP client: never through a proxy named in the environment
/// (`HTTP_PROXY` and the like, which a lab's processes inherit from the shell that started
/// `cdnlab`), since every address a role asks is a lab node's, which no proxy outside the lab
/// reaches.
pub fn client() -> reqwest::ClientBuilder {
    reqwest::Client::builder().no_proxy()
}

/// The body of `response`, which must be exactly `size` bytes. A `Content-Length` that says
/// otherwise is refused before the body is read, a sender that sends more is cut off there,
/// and one that ends short is an error.
pub async fn exact_body(response: reqwest::Response, size: u64) -> Result<Bytes, String> {
    if let Some(length) = response.content_length().filter(|&l| l != size) {
        return Err(format!("Content-Length {length}, not {size}"));
    }
    let body = body_at_most(response, size).await?;
    if body.len() as u64 != size {
        return Err(format!("{} bytes, not {size}", body.len()));
    }
    Ok(body)
}

/// The `Content-Length` of `response`, if it states one; one above `limit` is an error.
pub fn stated_length_at_most(
    response: &reqwest::Response,
    limit: u64,
) -> Result<Option<u64>, String> {
    match response.content_length() {
        Some(length) if length > limit => Err(format!(
            "Content-Length {length}, above the limit of {limit} bytes"
        )),
        stated => Ok(stated),
    }
}

/// The body of `response` when its size is not known in advance, up to `limit` bytes: a
/// `Content-Length` above it is refused before the body is read, and a sender that sends
/// more is cut off there.
pub async fn body_at_most(response: reqwest::Response, limit: u64) -> Result<Bytes, String> {
    stated_length_at_most(&response, limit)?;
    let mut body = BytesMut::new();
    each_piece(response, |piece| {
        if (body.len() + piece.len()) as u64 > limit {
            return Err(format!("more than {limit} bytes"));
        }
        body.extend_from_slice(&piece);
        Ok(())
    })
    .await?;
    Ok(body.freeze())
}

/// Reads the body of `response` to its end without keeping it (a load generator's or a
/// probe's answer, timed but not used): the bytes it had, with memory bounded by one piece.
pub async fn drain_body(response: reqwest::Response) -> Result<u64, String> {
    let mut total = 0;
    each_piece(response, |piece| {
        total += piece.len() as u64;
        Ok(())
    })
    .await?;
    Ok(total)
}

/// Passes each piece of `response`'s body to `take` as it arrives, stopping at its first
/// error.
async fn each_piece(
    mut response: reqwest::Response,
    mut take: impl FnMut(Bytes) -> Result<(), String>,
) -> Result<(), String> {
    while let Some(piece) = response.chunk().await.map_err(|e| describe(&e))? {
        take(piece)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{body_at_most, drain_body, exact_body};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The response of a loopback server answering once with `raw` (written as is).
    async fn response_of(raw: &'static str) -> Result<reqwest::Response, String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = [0; 1024];
            let _ = stream.read(&mut request).await;
            let _ = stream.write_all(raw.as_bytes()).await;
        });
        super::client()
            .build()
            .unwrap()
            .get(format!("http://{addr}/x"))
            .timeout(std::time::Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| e.to_string())
    }

    /// The body taken from a response `raw`, of `size`.
    async fn body_of(raw: &'static str, size: Size) -> Result<Vec<u8>, String> {
        let response = response_of(raw).await?;
        let body = match size {
            Size::Exact(size) => exact_body(response, size).await,
            Size::AtMost(limit) => body_at_most(response, limit).await,
        };
        body.map(|b| b.to_vec())
    }

    enum Size {
        Exact(u64),
        AtMost(u64),
    }
    use Size::{AtMost, Exact};

    #[tokio::test]
    async fn only_a_body_of_the_exact_size_is_taken() {
        let ok = "HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nabcd";
        assert_eq!(body_of(ok, Exact(4)).await.unwrap(), b"abcd");
        let says_more = "HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\nabcd";
        assert_eq!(
            body_of(says_more, Exact(4)).await.unwrap_err(),
            "Content-Length 1000000, not 4"
        );
        // Without a length, the body is counted as it comes: cut off past the size...
        let sends_more =
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
        assert_eq!(
            body_of(sends_more, Exact(4)).await.unwrap_err(),
            "more than 4 bytes"
        );
        // ...and refused when it ends short.
        let ends_short =
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        assert_eq!(
            body_of(ends_short, Exact(4)).await.unwrap_err(),
            "3 bytes, not 4"
        );
    }

    #[tokio::test]
    async fn a_body_of_unknown_size_is_taken_up_to_its_limit() {
        let ok = "HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nabcd";
        assert_eq!(body_of(ok, AtMost(4)).await.unwrap(), b"abcd");
        let short = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nab";
        assert_eq!(body_of(short, AtMost(4)).await.unwrap(), b"ab");
        let says_more = "HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\nabcd";
        assert_eq!(
            body_of(says_more, AtMost(4)).await.unwrap_err(),
            "Content-Length 1000000, above the limit of 4 bytes"
        );
        let sends_more =
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
        assert_eq!(
            body_of(sends_more, AtMost(4)).await.unwrap_err(),
            "more than 4 bytes"
        );
    }

    #[tokio::test]
    async fn a_drained_body_is_counted_whole() {
        let chunked =
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
        let response = response_of(chunked).await.unwrap();
        assert_eq!(drain_body(response).await.unwrap(), 6);
        let cut = "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc";
        let response = response_of(cut).await.unwrap();
        assert!(drain_body(response).await.is_err(), "a body cut short");
    }
}
