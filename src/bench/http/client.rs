//! One plain HTTP/1.1 GET per case before the load, to check both servers answer alike.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::lab::{Error, Result};

/// What a correct answer to a case's path is, checked once before the load.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Expect {
    /// 200 with a body of this many bytes.
    Body(u64),
    /// 302 to this URL.
    Redirect(String),
}

/// One GET with `Connection: close`, checked against what the case expects.
pub(super) fn check_answer(port: u16, path: &str, expect: &Expect, server: &str) -> Result<()> {
    let fail = |what: String| Error(format!("{server} on port {port}, GET {path}: {what}"));
    let (status, location, body) = get(port, path).map_err(|e| fail(e.to_string()))?;
    match expect {
        Expect::Body(bytes) if status == 200 && body as u64 == *bytes => Ok(()),
        Expect::Body(bytes) => Err(fail(format!(
            "expected 200 with {bytes} bytes, got {status} with {body}"
        ))),
        Expect::Redirect(url) if status == 302 && location.as_deref() == Some(url.as_str()) => {
            Ok(())
        }
        Expect::Redirect(url) => Err(fail(format!(
            "expected 302 to {url}, got {status} to {location:?}"
        ))),
    }
}

/// Status, Location and body length of `GET path` on a loopback port.
fn get(port: u16, path: &str) -> std::io::Result<(u16, Option<String>, usize)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    parse_answer(&answer).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not an HTTP/1.1 response with a header block",
        )
    })
}

/// Status, Location and body length of a whole HTTP/1.1 response read to the connection's end.
fn parse_answer(answer: &[u8]) -> Option<(u16, Option<String>, usize)> {
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&answer[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let location = lines.find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_string())
    });
    Some((status, location, answer.len() - end - 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_answers_give_status_location_and_body_length() {
        let redirect =
            b"HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:1/video/100k/seg-00000.ts\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(
            parse_answer(redirect),
            Some((
                302,
                Some("http://127.0.0.1:1/video/100k/seg-00000.ts".into()),
                0
            ))
        );
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(parse_answer(ok), Some((200, None, 5)));
        assert_eq!(parse_answer(b"HTTP/1.1 200 OK\r\n"), None);
    }
}
