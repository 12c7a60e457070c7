//! A fast HTTP/1.1 path for handlers that answer from the request head alone, never reading a
//! request body: the request routers, whose every answer is a 302, a manifest or an error built
//! in memory, and the CDN's content servers, whose chunks are mostly in memory. hyper's
//! per-request machinery (its dispatcher, a body channel per request, a service future, a
//! header-read timer armed per request) cost a 302 about a quarter more CPU than nginx's
//! `return 302`; here a keep-alive GET or HEAD without a body is parsed by `httparse`, answered
//! in place and written with whatever other pipelined answers are ready, in one write (see
//! `writes` for large bodies; answers ready before one that must wait go out first).
//!
//! Anything else hands the connection over, with the bytes read so far, to the hyper server
//! every role uses, which then serves it to its end: an h2c preface, another method, a request
//! with a body or `Expect`, HTTP/1.0, `Connection: close` or an upgrade, a head too large or
//! malformed (hyper answers those with its usual errors).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use bytes::{Buf, Bytes, BytesMut};
use hyper::body::Body as _;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, Uri, Version};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::body::Body;
use super::serve::log_answer;
use super::writes::{rearm, Writer};

/// The most header fields a request handled here may have; more goes to hyper.
const MAX_HEADERS: usize = 32;

/// The most bytes of unanswered requests kept; a head not complete within them goes to hyper
/// (which allows larger heads, and answers 431 past its own limit).
const MAX_PENDING: usize = 16 * 1024;

/// Answers are written once this many bytes of them wait, even mid-batch: a client pipelining
/// many requests for large in-memory answers (manifests) cannot grow a connection's buffer.
const MAX_OUTPUT: usize = 64 * 1024;

/// In-memory bodies up to this size are copied in with their heads (one write for a batch);
/// larger ones are written from where they are.
pub(super) const MAX_COPIED_BODY: usize = 16 * 1024;

/// A handler answering from the head alone: at once (`std::future::ready`, the routers) or
/// after awaiting something (a content server reading a file or asking its origin).
pub trait HeadHandler: Send + Sync + 'static {
    type Answer: Future<Output = Response<Body>> + Send + 'static;

    fn answer(&self, request: Request<()>) -> Self::Answer;
}

impl<H, Fut> HeadHandler for H
where
    H: Fn(Request<()>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response<Body>> + Send + 'static,
{
    type Answer = Fut;

    fn answer(&self, request: Request<()>) -> Fut {
        self(request)
    }
}

/// How a connection served here ended.
pub(super) enum Ended {
    /// Closed: the client left, broke the protocol, stayed idle too long, or shutdown came.
    Closed,
    /// For hyper: the stream and the bytes already read from it, unanswered.
    HandOver(TcpStream, Bytes),
}

/// Shared between a connection's loop and the task that may stop it: whether it holds a
/// request in progress (a partial head or an answer being written), and whether to stop.
#[derive(Default)]
pub(super) struct Flags {
    busy: AtomicBool,
    stopping: AtomicBool,
}

impl Flags {
    pub(super) fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    pub(super) fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
    }
}

/// Serves `stream` until it closes, stays idle for `idle` (waiting for a request head, or
/// for a client to take any of an answer), `flags` says stop, or a request needs hyper.
pub(super) async fn serve<H: HeadHandler>(
    mut stream: TcpStream,
    handler: &H,
    role: &'static str,
    access_log: bool,
    idle: Duration,
    flags: &Flags,
) -> Ended {
    let mut input = BytesMut::with_capacity(4096);
    let mut output = Vec::with_capacity(4096);
    let mut date = DateCache::default();
    // One timer for the connection, moved only when it fires early: waiting for a request,
    // the idle deadline runs from the end of the last batch of answers; writing, from the
    // last write that made progress. That costs clock reads per batch, not a timer re-armed
    // per request.
    let mut since = Instant::now();
    let timer = tokio::time::sleep(idle);
    let mut timer = std::pin::pin!(timer);
    loop {
        let mut answered = false;
        let hand_over = loop {
            if input.is_empty() {
                break false;
            }
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut head = httparse::Request::new(&mut headers);
            let length = match head.parse(&input) {
                Ok(httparse::Status::Complete(length)) => length,
                Ok(httparse::Status::Partial) => break false,
                Err(_) => break true,
            };
            let Some(request) = simple_request(&head) else {
                break true;
            };
            input.advance(length);
            answered = true;
            flags.busy.store(true, Ordering::Release);
            let head_only = request.method() == Method::HEAD;
            let logged = access_log.then(|| (request.method().clone(), request.uri().clone()));
            let mut answer = std::pin::pin!(handler.answer(request));
            let response =
                match std::future::poll_fn(|cx| Poll::Ready(answer.as_mut().poll(cx))).await {
                    Poll::Ready(response) => response,
                    // Answers already made go out while this one is awaited.
                    Poll::Pending => {
                        let flushed = Writer::new(&stream, &mut timer, idle)
                            .flush(&mut output)
                            .await;
                        if flushed.is_err() {
                            return Ended::Closed;
                        }
                        answer.await
                    }
                };
            if let Some((method, uri)) = logged {
                log_answer(role, &method, &uri, &response);
            }
            let body = encode(&mut output, response, head_only, &mut date);
            let mut writer = Writer::new(&stream, &mut timer, idle);
            let sent = match body {
                // Answers waiting past the bound go now.
                None if output.len() >= MAX_OUTPUT => writer.flush(&mut output).await,
                None => Ok(()),
                Some(body) => writer.flush_with(&mut output, body).await,
            };
            if sent.is_err() {
                return Ended::Closed;
            }
        };
        if !output.is_empty() {
            flags.busy.store(true, Ordering::Release);
            if Writer::new(&stream, &mut timer, idle)
                .flush(&mut output)
                .await
                .is_err()
            {
                return Ended::Closed;
            }
        }
        if answered {
            since = Instant::now();
        }
        if output.capacity() > MAX_OUTPUT {
            output = Vec::with_capacity(4096);
        }
        if flags.stopping.load(Ordering::Acquire) {
            return Ended::Closed;
        }
        // The answers before it written, a request for hyper takes the connection there.
        if hand_over || input.len() > MAX_PENDING {
            return Ended::HandOver(stream, input.freeze());
        }
        flags.busy.store(!input.is_empty(), Ordering::Release);
        tokio::select! {
            read = stream.read_buf(&mut input) => match read {
                Ok(0) | Err(_) => return Ended::Closed,
                Ok(_) => {}
            },
            () = timer.as_mut() => {
                if !rearm(&mut timer, since + idle) {
                    return Ended::Closed;
                }
            }
        }
    }
}

/// The head as a `Request` if this path may answer it: GET or HEAD, HTTP/1.1, no body, no
/// `Expect`, `Upgrade` or `Connection: close`, a target and fields `http` accepts.
fn simple_request(head: &httparse::Request) -> Option<Request<()>> {
    let method = match head.method? {
        "GET" => Method::GET,
        "HEAD" => Method::HEAD,
        _ => return None,
    };
    if head.version? != 1 {
        return None;
    }
    let uri = Uri::try_from(head.path?).ok()?;
    let mut request = Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = Version::HTTP_11;
    let fields = request.headers_mut();
    fields.reserve(head.headers.len());
    for field in head.headers.iter() {
        let name = HeaderName::from_bytes(field.name.as_bytes()).ok()?;
        let value = HeaderValue::from_bytes(field.value).ok()?;
        let plain = match name {
            header::CONTENT_LENGTH => value == "0",
            header::CONNECTION => !value
                .to_str()
                .ok()?
                .split(',')
                .any(|token| !token.trim().eq_ignore_ascii_case("keep-alive")),
            header::TRANSFER_ENCODING | header::EXPECT | header::UPGRADE => false,
            _ => true,
        };
        if !plain {
            return None;
        }
        fields.append(name, value);
    }
    Some(request)
}

/// Appends `response`'s head (and its body, when that is small and in memory) to `output`;
/// returns the body still to be sent after the head, if any. A HEAD answer (`head_only`) is
/// the GET answer's head, `Content-Length` included, without the body (RFC 9110 §9.3.2).
fn encode(
    output: &mut Vec<u8>,
    response: Response<Body>,
    head_only: bool,
    date: &mut DateCache,
) -> Option<Body> {
    let (parts, body) = response.into_parts();
    output.extend_from_slice(b"HTTP/1.1 ");
    output.extend_from_slice(parts.status.as_str().as_bytes());
    output.push(b' ');
    output.extend_from_slice(
        parts
            .status
            .canonical_reason()
            .unwrap_or("Unknown")
            .as_bytes(),
    );
    output.extend_from_slice(b"\r\n");
    let (mut has_length, mut has_date) = (false, false);
    for (name, value) in &parts.headers {
        has_length |= name == header::CONTENT_LENGTH;
        has_date |= name == header::DATE;
        output.extend_from_slice(name.as_str().as_bytes());
        output.extend_from_slice(b": ");
        output.extend_from_slice(value.as_bytes());
        output.extend_from_slice(b"\r\n");
    }
    let bodiless = parts.status.is_informational()
        || parts.status == hyper::StatusCode::NO_CONTENT
        || parts.status == hyper::StatusCode::NOT_MODIFIED;
    if !has_length && !bodiless {
        // Every `Body` knows its length (`Body::size_hint` is always exact).
        let length = body.size_hint().exact().unwrap_or(0);
        output.extend_from_slice(format!("content-length: {length}\r\n").as_bytes());
    }
    if !has_date {
        output.extend_from_slice(b"date: ");
        output.extend_from_slice(date.now());
        output.extend_from_slice(b"\r\n");
    }
    output.extend_from_slice(b"\r\n");
    if head_only || body.is_empty() {
        return None;
    }
    if let Some(bytes) = body.in_memory().filter(|b| b.len() <= MAX_COPIED_BODY) {
        output.extend_from_slice(bytes);
        return None;
    }
    Some(body)
}

/// The `Date` field's value, formatted once per second.
#[derive(Default)]
struct DateCache {
    second: u64,
    text: String,
}

impl DateCache {
    fn now(&mut self) -> &[u8] {
        let now = SystemTime::now();
        let second = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if second != self.second || self.text.is_empty() {
            self.second = second;
            self.text = httpdate::fmt_http_date(now);
        }
        self.text.as_bytes()
    }
}

/// A stream whose first reads return bytes already taken from it: how a connection goes to
/// hyper with the requests this path read but did not answer.
pub(super) struct Prefixed {
    prefix: Bytes,
    stream: TcpStream,
}

impl Prefixed {
    pub(super) fn new(stream: TcpStream, prefix: Bytes) -> Prefixed {
        Prefixed { prefix, stream }
    }
}

impl AsyncRead for Prefixed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.prefix.is_empty() {
            return Pin::new(&mut self.stream).poll_read(cx, buf);
        }
        let n = self.prefix.len().min(buf.remaining());
        buf.put_slice(&self.prefix.split_to(n));
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use hyper::StatusCode;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::oneshot;

    use std::sync::Arc;

    use super::*;
    use crate::roles::http::sealed::Sealed;
    use crate::roles::http::semantics::{redirect, refuse_method, target};
    use crate::roles::http::serve::serve_head_only_idle;
    use crate::roles::http::test_clients::{
        bytes_until_closed, closed_within, set_congestion_control, trickle_until_closed,
    };
    use crate::roles::http::ServeOptions;

    const IDLE: Duration = Duration::from_millis(400);

    /// 400 000 bytes of a pattern (`i % 251`), in a file (a size sent by `sendfile`).
    static SEALED: std::sync::LazyLock<Sealed> =
        std::sync::LazyLock::new(|| Sealed::new(pattern(400_000)));

    /// 2 000 000 bytes of the pattern: in a file of large folios as root (else on the heap),
    /// sent by `sendfile` or copied as the connection's congestion control decides.
    static LARGE: std::sync::LazyLock<Sealed> =
        std::sync::LazyLock::new(|| Sealed::new(pattern(2_000_000)));

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    /// What the test server answers: 302 to `http://up/` + the target; `/big` a 200 KB
    /// synthetic body (not in memory); `/bytes` a 100 KB body in memory; `/sealed` 200 KB of
    /// `SEALED` from byte 1000 (sent by `sendfile`), `/sealed-small` 10 KB of it from byte 5
    /// (copied in with its head), `/sealed-large` all of `LARGE`; other methods 405.
    fn answer(request: &Request<()>) -> Response<Body> {
        if let Some(refused) = refuse_method(request.method()) {
            return refused;
        }
        let body = match request.uri().path() {
            "/big" => Body::synthetic(cdnlab_core::cdn::Payload::numbered(7), 0, 200_000),
            "/bytes" => Body::bytes(vec![7u8; 100_000]),
            "/sealed" => Body::sealed(SEALED.slice(1000, 200_000)),
            "/sealed-small" => Body::sealed(SEALED.slice(5, 10_000)),
            "/sealed-large" => Body::sealed(LARGE.clone()),
            _ => return redirect(format!("http://up{}", target(request.uri()))),
        };
        let mut response = Response::new(body);
        let length = HeaderValue::from(response.body().len());
        response
            .headers_mut()
            .insert(header::CONTENT_LENGTH, length);
        response
    }

    /// A test server answering as `answer` does, `/slow...` only after 50 ms and `/stalled`
    /// after 3 s. Returns its
    /// address and what stops it.
    async fn server() -> (
        SocketAddr,
        oneshot::Sender<()>,
        tokio::task::JoinHandle<io::Result<()>>,
    ) {
        server_with(TcpListener::bind("127.0.0.1:0").await.unwrap())
    }

    /// The test server on `listener`.
    fn server_with(
        listener: TcpListener,
    ) -> (
        SocketAddr,
        oneshot::Sender<()>,
        tokio::task::JoinHandle<io::Result<()>>,
    ) {
        let addr = listener.local_addr().unwrap();
        let handler = Arc::new(|request: Request<()>| async move {
            if request.uri().path().starts_with("/slow") {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if request.uri().path() == "/stalled" {
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
            answer(&request)
        });
        let options = ServeOptions {
            role: "test",
            access_log: true,
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(serve_head_only_idle(
            listener,
            handler,
            options,
            IDLE,
            async {
                let _ = stopped.await;
            },
        ));
        (addr, stop, server)
    }

    /// One answer as read: its head as text and its body.
    #[derive(Debug)]
    struct Answer {
        head: String,
        body: Vec<u8>,
    }

    /// Reads until `count` whole answers (heads and the bodies their `content-length` gives)
    /// have arrived, the connection closes, or 5 s pass; returns those that arrived whole.
    async fn read_answers(stream: &mut TcpStream, count: usize) -> Vec<Answer> {
        let mut read = Vec::new();
        let mut buffer = [0u8; 65536];
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while split_answers(&read).len() < count {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => read.extend_from_slice(&buffer[..n]),
                }
            }
        })
        .await;
        split_answers(&read)
    }

    /// The complete answers `bytes` begins with.
    fn split_answers(mut bytes: &[u8]) -> Vec<Answer> {
        let mut answers = Vec::new();
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut answer = httparse::Response::new(&mut headers);
            let Ok(httparse::Status::Complete(head)) = answer.parse(bytes) else {
                return answers;
            };
            let length = answer
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.parse::<usize>().ok())
                .unwrap_or(0);
            if bytes.len() < head + length {
                return answers;
            }
            answers.push(Answer {
                head: String::from_utf8_lossy(&bytes[..head]).into_owned(),
                body: bytes[head..head + length].to_vec(),
            });
            bytes = &bytes[head + length..];
        }
    }

    /// Sends `requests` on a new connection to `addr` in one write; the connection and the
    /// first `count` answers (fewer if they do not come).
    async fn ask(addr: SocketAddr, requests: &[u8], count: usize) -> (TcpStream, Vec<Answer>) {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(requests).await.unwrap();
        let answers = read_answers(&mut stream, count).await;
        (stream, answers)
    }

    /// A connection to `addr` that has had one GET answered with a 302.
    async fn answered_connection(addr: SocketAddr) -> TcpStream {
        let (stream, answers) = ask(addr, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1).await;
        assert!(answers[0].head.contains(" 302 "), "{answers:?}");
        stream
    }

    #[tokio::test]
    async fn pipelined_gets_and_heads_are_answered_in_order_on_one_connection() {
        let (addr, _stop, _server) = server().await;
        let (mut stream, answers) = ask(
            addr,
            b"GET /a/1.ts HTTP/1.1\r\nHost: x\r\n\r\n\
              HEAD /b?q=2 HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n\
              GET /big HTTP/1.1\r\nHost: x\r\n\r\n\
              GET /slow/d HTTP/1.1\r\nHost: x\r\n\r\n\
              GET /bytes HTTP/1.1\r\nHost: x\r\n\r\n\
              GET /e HTTP/1.1\r\nHost: x\r\n\r\n",
            6,
        )
        .await;
        assert_eq!(answers.len(), 6, "{answers:?}");
        let first = &answers[0].head;
        assert!(first.starts_with("HTTP/1.1 302 Found\r\n"), "{first}");
        assert!(first.contains("location: http://up/a/1.ts\r\n"), "{first}");
        assert!(first.contains("content-length: 0\r\n"), "{first}");
        assert!(first.contains(" GMT\r\n"), "a date field: {first}");
        assert!(answers[1].head.contains("location: http://up/b?q=2\r\n"));
        assert!(answers[2].head.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(answers[2].head.contains("content-length: 200000\r\n"));
        let mut expected = vec![0u8; 200_000];
        cdnlab_core::cdn::Payload::numbered(7).fill(0, &mut expected);
        assert!(
            answers[2].body == expected,
            "the streamed body arrives whole"
        );
        // An answer that waits holds back those after it; a body in memory arrives whole.
        assert!(answers[3].head.contains("location: http://up/slow/d\r\n"));
        assert!(answers[4].head.contains("content-length: 100000\r\n"));
        assert!(answers[4].body == vec![7u8; 100_000]);
        assert!(answers[5].head.contains("location: http://up/e\r\n"));
        // The connection stays open for the next request.
        stream
            .write_all(b"GET /c HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let answers = read_answers(&mut stream, 1).await;
        assert!(answers[0].head.contains("location: http://up/c\r\n"));
    }

    #[tokio::test]
    async fn answers_ready_before_one_that_waits_are_not_held_back() {
        let (addr, _stop, _server) = server().await;
        let asked = Instant::now();
        let (_stream, answers) = ask(
            addr,
            b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n\
              GET /b HTTP/1.1\r\nHost: x\r\n\r\n\
              GET /stalled HTTP/1.1\r\nHost: x\r\n\r\n",
            2,
        )
        .await;
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "the ready answers waited {:?} for the stalled one",
            asked.elapsed()
        );
    }

    /// Under reno and (where the kernel lets the test choose it) BBR, whose connections copy
    /// what others send by `sendfile` from a file of large folios.
    #[tokio::test]
    async fn sealed_bodies_arrive_whole_and_in_order_whether_sent_by_sendfile_or_copied() {
        assert!(
            SEALED.file().is_some(),
            "this kernel makes sealed memfds at least, so `/sealed` takes `sendfile`"
        );
        for congestion in ["reno", "bbr"] {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            // Accepted connections take the listener's congestion control.
            if set_congestion_control(&listener, congestion).is_err() {
                assert_eq!(congestion, "bbr", "reno is always allowed");
                continue;
            }
            let (addr, _stop, _server) = server_with(listener);
            let (mut stream, answers) = ask(
                addr,
                b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n\
                  GET /sealed HTTP/1.1\r\nHost: x\r\n\r\n\
                  GET /b HTTP/1.1\r\nHost: x\r\n\r\n\
                  GET /sealed-large HTTP/1.1\r\nHost: x\r\n\r\n\
                  GET /sealed-small HTTP/1.1\r\nHost: x\r\n\r\n\
                  GET /sealed HTTP/1.1\r\nHost: x\r\n\r\n",
                6,
            )
            .await;
            assert_eq!(answers.len(), 6, "{congestion}: {answers:?}");
            let whole = pattern(2_000_000);
            assert!(answers[0].head.contains("location: http://up/a\r\n"));
            assert!(answers[1].head.contains("content-length: 200000\r\n"));
            assert!(
                answers[1].body == whole[1000..201_000],
                "{congestion}: the slice from byte 1000"
            );
            assert!(answers[2].head.contains("location: http://up/b\r\n"));
            assert!(answers[3].body == whole, "{congestion}: the large body");
            assert!(answers[4].body == whole[5..10_005], "the small slice");
            assert!(answers[5].body == whole[1000..201_000]);
            // Nothing more came.
            let mut more = [0u8; 1];
            let extra =
                tokio::time::timeout(Duration::from_millis(200), stream.read(&mut more)).await;
            assert!(
                extra.is_err(),
                "{congestion}: bytes after the last answer: {extra:?}"
            );
        }
    }

    #[tokio::test]
    async fn other_requests_go_to_hyper_with_what_was_read() {
        let (addr, _stop, _server) = server().await;
        // A POST with a body, then a GET in the same write: hyper answers both.
        let (_, answers) = ask(
            addr,
            b"GET /first HTTP/1.1\r\nHost: x\r\n\r\n\
              POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\
              GET /after HTTP/1.1\r\nHost: x\r\n\r\n",
            3,
        )
        .await;
        assert_eq!(answers.len(), 3, "{answers:?}");
        assert!(answers[0].head.contains("location: http://up/first\r\n"));
        assert!(answers[1].head.starts_with("HTTP/1.1 405 "), "{answers:?}");
        assert!(answers[2].head.contains("location: http://up/after\r\n"));

        // HTTP/1.0 and Connection: close: answered, then closed.
        for request in [
            &b"GET /old HTTP/1.0\r\n\r\n"[..],
            b"GET /bye HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        ] {
            let (mut stream, answers) = ask(addr, request, 1).await;
            assert!(answers[0].head.contains(" 302 Found\r\n"), "{answers:?}");
            assert!(closed_within(&mut stream, Duration::from_secs(2)).await);
        }

        // A malformed head gets hyper's 400.
        let (_, answers) = ask(addr, b"GET / HTTP/1.1\r\nBad Field\r\n\r\n", 1).await;
        assert!(answers[0].head.starts_with("HTTP/1.1 400 "), "{answers:?}");
    }

    /// `serve` itself on one connection with `requests` sent in one write: how it ended (with
    /// the bytes it handed over) and the bytes the client had received by then.
    async fn serve_directly(requests: &'static [u8]) -> (Option<Bytes>, Vec<u8>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.write_all(requests).await.unwrap();
            stream
        });
        let (accepted, _) = listener.accept().await.unwrap();
        let mut client = client.await.unwrap();
        let handler = |request: Request<()>| {
            std::future::ready(redirect(format!("http://up{}", request.uri())))
        };
        let flags = Flags::default();
        let serving = serve(accepted, &handler, "test", false, IDLE, &flags);
        let ended = tokio::time::timeout(Duration::from_secs(5), serving).await;
        let handed_over = match ended.expect("serve returns") {
            Ended::HandOver(_, read) => Some(read),
            Ended::Closed => None,
        };
        let mut received = vec![0u8; 65536];
        let n = tokio::time::timeout(Duration::from_secs(1), client.read(&mut received))
            .await
            .map_or(0, |read| read.unwrap_or(0));
        received.truncate(n);
        (handed_over, received)
    }

    #[tokio::test]
    async fn the_fast_path_answers_what_it_can_and_hands_over_the_rest_unread() {
        let rest = b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\
                     GET /after HTTP/1.1\r\nHost: x\r\n\r\n";
        let (handed_over, received) = serve_directly(
            b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n\
              GET /b HTTP/1.1\r\nHost: x\r\n\r\n\
              POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\
              GET /after HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .await;
        assert_eq!(handed_over.as_deref(), Some(&rest[..]));
        let answers = split_answers(&received);
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert!(answers[0].head.contains("location: http://up/a\r\n"));
        assert!(answers[1].head.contains("location: http://up/b\r\n"));

        // An unfinished head is not handed over: the connection closes after the idle time.
        let (handed_over, received) =
            serve_directly(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nX: ").await;
        assert_eq!(handed_over, None, "nothing handed over");
        assert_eq!(split_answers(&received).len(), 1);
    }

    #[tokio::test]
    async fn a_head_answer_keeps_the_length_and_sends_no_body() {
        let (addr, _stop, _server) = server().await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"HEAD /big HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut read = Vec::new();
        let mut buffer = [0u8; 4096];
        while !String::from_utf8_lossy(&read).contains("location: http://up/a\r\n") {
            let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer))
                .await
                .expect("both answers within 5 s")
                .unwrap();
            assert!(n > 0, "closed: {:?}", String::from_utf8_lossy(&read));
            read.extend_from_slice(&buffer[..n]);
        }
        let text = String::from_utf8_lossy(&read);
        let (first, second) = text.split_at(text.find("\r\n\r\n").unwrap() + 4);
        assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{text:?}");
        assert!(first.contains("content-length: 200000\r\n"), "{text:?}");
        assert!(
            second.starts_with("HTTP/1.1 302 Found\r\n"),
            "a body came: {text:?}"
        );
    }

    #[tokio::test]
    async fn heads_too_large_for_the_fast_path_are_answered_by_hyper() {
        let (addr, _stop, _server) = server().await;
        let many: String = (0..40).map(|i| format!("X-{i}: {i}\r\n")).collect();
        let long = format!("X-Long: {}\r\n", "a".repeat(20 * 1024));
        for fields in [many, long] {
            let request = format!("GET /big-head HTTP/1.1\r\nHost: x\r\n{fields}\r\n");
            let (_, answers) = ask(addr, request.as_bytes(), 1).await;
            assert_eq!(answers.len(), 1);
            assert!(answers[0].head.contains("location: http://up/big-head\r\n"));
        }
    }

    #[tokio::test]
    async fn an_h2c_client_is_served_by_hyper() {
        let (addr, _stop, _server) = server().await;
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(connection);
        let request = Request::get(format!("http://{addr}/h2/seg.ts"))
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::FOUND);
        assert_eq!(response.headers()[header::LOCATION], "http://up/h2/seg.ts");
    }

    #[tokio::test]
    async fn idle_and_trickling_connections_are_closed_after_the_idle_time() {
        let (addr, _stop, _server) = server().await;
        let mut idle_client = answered_connection(addr).await;
        let answered = Instant::now();
        assert!(closed_within(&mut idle_client, Duration::from_secs(5)).await);
        assert!(answered.elapsed() >= IDLE - Duration::from_millis(50));

        // A head trickling in: closed after the idle time however it trickles.
        let kept = trickle_until_closed(addr)
            .await
            .expect("a trickling head kept its connection for 10 s");
        assert!(kept >= IDLE - Duration::from_millis(50), "{kept:?}");
        assert!(kept < IDLE * 4, "{kept:?}");
    }

    #[tokio::test]
    async fn a_client_that_reads_no_answers_is_closed_after_the_idle_time() {
        let (addr, _stop, _server) = server().await;
        // Bodies sent frame by frame, by `sendfile` and from memory.
        for (path, len) in [("/big", 200_000), ("/sealed", 200_000), ("/bytes", 100_000)] {
            // 25 MB of answers: more than the socket buffers hold, so the server's writes stall.
            let count = 25_000_000 / len;
            let requests = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").repeat(count);
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.write_all(requests.as_bytes()).await.unwrap();
            tokio::time::sleep(IDLE * 3).await;
            let ended = bytes_until_closed(&mut stream, Duration::from_secs(5)).await;
            let received = ended.unwrap_or_else(|| panic!("{path}: the connection stayed open"));
            assert!(
                received < count * len,
                "{path}: {received} bytes: every answer came"
            );
        }
    }

    #[tokio::test]
    async fn shutdown_closes_idle_connections_at_once() {
        let (addr, stop, server) = server().await;
        let mut stream = answered_connection(addr).await;
        let asked = Instant::now();
        stop.send(()).unwrap();
        assert!(closed_within(&mut stream, Duration::from_secs(1)).await);
        tokio::time::timeout(Duration::from_secs(1), server)
            .await
            .expect("the server ends without waiting out its grace")
            .unwrap()
            .unwrap();
        assert!(asked.elapsed() < Duration::from_millis(500));
    }

    #[test]
    fn only_plain_keep_alive_gets_and_heads_are_simple() {
        fn simple(head: &[u8]) -> bool {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut request = httparse::Request::new(&mut headers);
            assert!(request.parse(head).unwrap().is_complete());
            simple_request(&request).is_some()
        }
        assert!(simple(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"));
        assert!(simple(b"HEAD /a HTTP/1.1\r\nContent-Length: 0\r\n\r\n"));
        assert!(simple(b"GET /a HTTP/1.1\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(!simple(b"GET /a HTTP/1.0\r\n\r\n"));
        assert!(!simple(b"POST /a HTTP/1.1\r\n\r\n"));
        assert!(!simple(b"GET /a HTTP/1.1\r\nContent-Length: 5\r\n\r\n"));
        assert!(!simple(
            b"GET /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        ));
        assert!(!simple(b"GET /a HTTP/1.1\r\nExpect: 100-continue\r\n\r\n"));
        assert!(!simple(
            b"GET /a HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n"
        ));
        assert!(!simple(b"GET /a HTTP/1.1\r\nUpgrade: h2c\r\n\r\n"));
        assert!(!simple(b"GET http://[bad HTTP/1.1\r\n\r\n"));
    }
}
