//! A tiny in-process HTTP server (hyper, HTTP/1.1 and h2c) whose answers a test scripts per
//! request: redirects, bodies of a given size, error statuses, or a body that stops halfway
//! while the whole server dies (listener and every connection closed).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{CONTENT_LENGTH, CONTENT_RANGE, LOCATION, RANGE};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};

/// A request as the handler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub path: String,
    pub range: Option<String>,
    pub version: Version,
}

/// What to answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `status` (a 3xx) with this Location.
    Redirect(u16, String),
    /// 200 with `n` zero bytes.
    Bytes(usize),
    /// `status` with a text body.
    Text(u16, String),
    /// 206 with `len` bytes and this `Content-Range`, if any.
    Part {
        content_range: Option<String>,
        len: usize,
    },
    /// Headers for `len` bytes, the first `sent` of them, then the server dies.
    Die { len: usize, sent: usize },
}

pub type Handler = Arc<dyn Fn(&Seen) -> (Duration, Reply) + Send + Sync>;

/// A running server; dropping it stops it.
pub struct TestServer {
    /// TCP connections accepted.
    pub connections: Arc<AtomicUsize>,
    /// Every request, in order of arrival.
    pub seen: Arc<Mutex<Vec<Seen>>>,
    task: JoinHandle<()>,
}

/// A listener on a free loopback port.
pub async fn bind() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

impl TestServer {
    pub fn serve(listener: TcpListener, handler: Handler) -> TestServer {
        let connections = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let die = Arc::new(Notify::new());
        let task = tokio::spawn(accept_loop(
            listener,
            handler,
            connections.clone(),
            seen.clone(),
            die,
        ));
        TestServer {
            connections,
            seen,
            task,
        }
    }

    /// How many requests named `path`.
    pub fn requests_for(&self, path: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path == path)
            .count()
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Accepts until a handler answers [`Reply::Die`]; returning drops the listener and aborts every
/// connection task, which closes their sockets.
async fn accept_loop(
    listener: TcpListener,
    handler: Handler,
    connections: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Seen>>>,
    die: Arc<Notify>,
) {
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                connections.fetch_add(1, Ordering::SeqCst);
                let (handler, seen, die) = (handler.clone(), seen.clone(), die.clone());
                tasks.spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        answer(request, handler.clone(), seen.clone(), die.clone())
                    });
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            () = die.notified() => {
                // Let the half body leave before everything closes.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return;
            }
        }
    }
}

async fn answer(
    request: Request<Incoming>,
    handler: Handler,
    seen: Arc<Mutex<Vec<Seen>>>,
    die: Arc<Notify>,
) -> Result<Response<TestBody>, Infallible> {
    let request = Seen {
        path: request
            .uri()
            .path_and_query()
            .map_or("/".to_string(), |p| p.to_string()),
        range: request
            .headers()
            .get(RANGE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        version: request.version(),
    };
    seen.lock().unwrap().push(request.clone());
    let (delay, reply) = handler(&request);
    tokio::time::sleep(delay).await;
    let response = Response::builder();
    Ok(match reply {
        Reply::Redirect(status, location) => response
            .status(status)
            .header(LOCATION, location)
            .header(CONTENT_LENGTH, 0)
            .body(TestBody::full(Bytes::new())),
        Reply::Bytes(n) => response
            .status(StatusCode::OK)
            .header(CONTENT_LENGTH, n)
            .body(TestBody::full(Bytes::from(vec![0u8; n]))),
        Reply::Text(status, text) => response
            .status(status)
            .header(CONTENT_LENGTH, text.len())
            .body(TestBody::full(Bytes::from(text))),
        Reply::Part { content_range, len } => {
            let response = response
                .status(StatusCode::PARTIAL_CONTENT)
                .header(CONTENT_LENGTH, len);
            match content_range {
                Some(value) => response.header(CONTENT_RANGE, value),
                None => response,
            }
            .body(TestBody::full(Bytes::from(vec![b'r'; len])))
        }
        Reply::Die { len, sent } => {
            die.notify_one();
            response
                .status(StatusCode::OK)
                .header(CONTENT_LENGTH, len)
                .body(TestBody {
                    data: Some(Bytes::from(vec![0u8; sent])),
                    stuck: true,
                    len: len as u64,
                })
        }
    }
    .unwrap())
}

/// A body that sends its data in one frame, then ends — or, `stuck`, never ends.
pub struct TestBody {
    data: Option<Bytes>,
    stuck: bool,
    len: u64,
}

impl TestBody {
    fn full(data: Bytes) -> TestBody {
        TestBody {
            len: data.len() as u64,
            data: Some(data),
            stuck: false,
        }
    }
}

impl hyper::body::Body for TestBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.data.take() {
            Some(data) if !data.is_empty() => Poll::Ready(Some(Ok(Frame::data(data)))),
            _ if self.stuck => Poll::Pending,
            _ => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        !self.stuck && self.data.as_ref().is_none_or(Bytes::is_empty)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len)
    }
}
