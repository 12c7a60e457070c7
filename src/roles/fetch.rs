//! Taking a body from a peer over HTTP when its size is known in advance (a chunk, a
//! replica): the only way to bound what a broken or hostile sender can make a role read.

use bytes::{Bytes, BytesMut};

/// The body of `response`, which must be exactly `size` bytes. A `Content-Length` that says
/// otherwise is refused before the body is read, a sender that sends more is cut off there,
/// and one that ends short is an error.
pub async fn exact_body(mut response: reqwest::Response, size: u64) -> Result<Bytes, String> {
    if let Some(length) = response.content_length().filter(|&l| l != size) {
        return Err(format!("Content-Length {length}, not {size}"));
    }
    let mut body = BytesMut::new();
    while let Some(piece) = response.chunk().await.map_err(|e| e.to_string())? {
        if (body.len() + piece.len()) as u64 > size {
            return Err(format!("more than {size} bytes"));
        }
        body.extend_from_slice(&piece);
    }
    if body.len() as u64 != size {
        return Err(format!("{} bytes, not {size}", body.len()));
    }
    Ok(body.freeze())
}

#[cfg(test)]
mod tests {
    use super::exact_body;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The body a loopback server answering once with `response` (written as is) gives.
    async fn body_of(response: &'static str, size: u64) -> Result<Vec<u8>, String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = [0; 1024];
            let _ = stream.read(&mut request).await;
            let _ = stream.write_all(response.as_bytes()).await;
        });
        let got = reqwest::Client::new()
            .get(format!("http://{addr}/x"))
            .timeout(std::time::Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let body = exact_body(got, size).await.map(|b| b.to_vec());
        server.abort();
        body
    }

    #[tokio::test]
    async fn only_a_body_of_the_exact_size_is_taken() {
        let ok = "HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nabcd";
        assert_eq!(body_of(ok, 4).await.unwrap(), b"abcd");
        let says_more = "HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\nabcd";
        assert_eq!(
            body_of(says_more, 4).await.unwrap_err(),
            "Content-Length 1000000, not 4"
        );
        // Without a length, the body is counted as it comes: cut off past the size...
        let sends_more =
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
        assert_eq!(
            body_of(sends_more, 4).await.unwrap_err(),
            "more than 4 bytes"
        );
        // ...and refused when it ends short.
        let ends_short =
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        assert_eq!(body_of(ends_short, 4).await.unwrap_err(), "3 bytes, not 4");
    }
}
