//! The HTTP accept loop every role uses: HTTP/1.1 with keep-alive and HTTP/2 over cleartext
//! (prior knowledge) on one port (hyper-util's auto builder tells them apart by the preface),
//! an optional access log, and graceful shutdown: stop accepting, let in-flight requests finish
//! for a bounded time, close idle keep-alive connections. Handlers that answer from the request
//! head alone (the CDN's request routers and content servers) have `serve_head_only`, which
//! puts `head_only`'s fast path in front of the same server.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use super::activity::{Activity, Timed, Working};
use super::head_only::{self, HeadHandler};
use super::semantics::{strip_for_head, target};

/// A body the accept loop can send: the roles' [`super::Body`], or any other whose `Default` is
/// empty (what a HEAD answer sends).
pub trait ResponseBody:
    hyper::body::Body<Data = bytes::Bytes, Error: std::error::Error + Send + Sync + 'static>
    + Default
    + Send
    + 'static
{
}

impl<B> ResponseBody for B where
    B: hyper::body::Body<Data = bytes::Bytes, Error: std::error::Error + Send + Sync + 'static>
        + Default
        + Send
        + 'static
{
}

/// How long in-flight requests may take to finish after shutdown is asked; below the 3 s
/// `cdnlab down` waits before SIGKILL, so logs are flushed by an orderly exit.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How long a connection with no request in progress stays open: waiting for its next request
/// head, or for the rest of one (see `serve_http_idle`), HTTP/2 included.
pub const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(75);

/// The most connections a role's server holds at once (each a descriptor and its buffers);
/// past it a new connection waits in the listen backlog until one ends. nginx's default is
/// 512 a worker; `cdnlab bench http` configures it with 4096.
pub const MAX_CONNECTIONS: usize = 16_384;

/// How often an HTTP/2 connection pings its client, and how long the pong may take: a client
/// gone without closing (a dead host, a black-holed path) loses its connection in a bounded
/// time even while a request waits.
const HTTP2_PING: Duration = Duration::from_secs(20);

/// How a role's HTTP server behaves besides its handler.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The role's name, prefixed to log lines.
    pub role: &'static str,
    /// One line per request on stderr (the node's log): method, target, status, body bytes.
    pub access_log: bool,
}

/// Serves `handler` on `listener`, at most `max_connections` connections at once (roles:
/// [`MAX_CONNECTIONS`]), until `shutdown` resolves, then drains connections for at most
/// `SHUTDOWN_GRACE`. A HEAD answer is the GET answer without its body.
pub async fn serve_http<H, Fut, B>(
    listener: TcpListener,
    handler: H,
    options: ServeOptions,
    max_connections: usize,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()>
where
    H: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: ResponseBody,
{
    let bounds = (KEEP_ALIVE_TIMEOUT, max_connections);
    serve_http_idle(listener, handler, options, bounds, shutdown).await
}

/// `serve_http` holding at most `max_connections` at once, and closing a connection
/// (gracefully) once it has had no request in progress for `idle`: an idle keep-alive
/// connection, one whose client trickles a request head (hyper's header-read timeout), and an
/// HTTP/2 connection whose client answers pings but asks nothing. nginx's default keep-alive timeout is 75 s (hyper's 30 s), so a HAS client
/// pausing with a full buffer keeps its connection as it would with nginx.
pub(crate) async fn serve_http_idle<H, Fut, B>(
    listener: TcpListener,
    handler: H,
    options: ServeOptions,
    (idle, max_connections): (Duration, usize),
    shutdown: impl Future<Output = ()>,
) -> io::Result<()>
where
    H: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: ResponseBody,
{
    let builder = Arc::new(hyper_builder(idle));
    let options = Arc::new(options);
    let role = options.role;
    let served = (role, max_connections);
    accept_loop(listener, served, shutdown, move |stream, stop| {
        let builder = builder.clone();
        let handler = handler.clone();
        let options = options.clone();
        async move { serve_hyper(stream, &builder, handler, options, idle, stop).await }
    })
    .await
}

/// `serve_http` for a handler that answers from the request head alone (the CDN's routers and
/// content servers):
/// keep-alive GETs and HEADs without a body take `head_only`'s fast path, everything else
/// (h2c, bodies, other methods) hyper, as in `serve_http`.
pub async fn serve_head_only<H: HeadHandler>(
    listener: TcpListener,
    handler: Arc<H>,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    serve_head_only_idle(listener, handler, options, KEEP_ALIVE_TIMEOUT, shutdown).await
}

/// `serve_head_only` with `serve_http_idle`'s idle time.
pub(super) async fn serve_head_only_idle<H: HeadHandler>(
    listener: TcpListener,
    handler: Arc<H>,
    options: ServeOptions,
    idle: Duration,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let builder = Arc::new(hyper_builder(idle));
    let options = Arc::new(options);
    let role = options.role;
    let served = (role, MAX_CONNECTIONS);
    accept_loop(listener, served, shutdown, move |stream, mut stop| {
        let builder = builder.clone();
        let handler = handler.clone();
        let options = options.clone();
        async move {
            let ended = {
                let flags = head_only::Flags::default();
                let fast = head_only::serve(
                    stream,
                    &*handler,
                    options.role,
                    options.access_log,
                    idle,
                    &flags,
                );
                let mut fast = std::pin::pin!(fast);
                tokio::select! {
                    ended = fast.as_mut() => ended,
                    () = stopped(&mut stop) => {
                        // An idle connection closes at once; one with a request in progress
                        // has the grace to finish it.
                        flags.stop();
                        if !flags.busy() {
                            return;
                        }
                        match tokio::time::timeout(SHUTDOWN_GRACE, fast).await {
                            Ok(ended) => ended,
                            Err(_) => return,
                        }
                    }
                }
            };
            if let head_only::Ended::HandOver(stream, read) = ended {
                let io = head_only::Prefixed::new(stream, read);
                let handler = move |request: Request<Incoming>| handler.answer(request.map(|_| ()));
                serve_hyper(io, &builder, handler, options, idle, stop).await;
            }
        }
    })
    .await
}

/// hyper's HTTP/1.1 and h2c server as every role runs it.
fn hyper_builder(idle: Duration) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // A limit on waiting for a request head, so a client trickling one cannot hold a
    // connection: the connection's idle timer below cannot close it (hyper's graceful shutdown
    // waits for a head it has begun to read). Without it hyper would arm no timer per request,
    // but 302s were only ~2% faster so (7 alternating 5 s wrk rounds; the rounds spread 20%).
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(idle);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(HTTP2_PING)
        .keep_alive_timeout(HTTP2_PING);
    builder
}

/// Accepts connections until `shutdown` resolves and serves each with `connection` in its own
/// task (given the stream and a receiver that turns true at shutdown), at most
/// `max_connections` at once (the next is accepted once one ends); then waits at most
/// `SHUTDOWN_GRACE` for them to finish.
async fn accept_loop<C, Fut>(
    listener: TcpListener,
    (role, max_connections): (&'static str, usize),
    shutdown: impl Future<Output = ()>,
    connection: C,
) -> io::Result<()>
where
    C: Fn(TcpStream, watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (stop_tx, stop_rx) = watch::channel(false);
    // Each connection task holds a sender; `recv` returns `None` once all have finished.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    let room = Arc::new(tokio::sync::Semaphore::new(max_connections));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let place = tokio::select! {
            place = room.clone().acquire_owned() => place,
            () = &mut shutdown => break,
        };
        // The semaphore is never closed.
        let Ok(place) = place else { break };
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors or a connection reset before accept: keep serving
                    // the connections we have and try again shortly.
                    tracing::warn!("{role}: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small responses (302s) must not wait for Nagle.
        let _ = stream.set_nodelay(true);
        let served = connection(stream, stop_rx.clone());
        let alive = alive_tx.clone();
        tokio::spawn(async move {
            served.await;
            drop((alive, place));
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(alive_tx);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, alive_rx.recv()).await;
    Ok(())
}

/// One connection served by hyper until it ends, shutdown comes (then at most
/// `SHUTDOWN_GRACE` more), or it has had no request in progress for `idle` (then it ends once
/// the answers being sent are, or once no write has taken a byte of them for `idle`: a client
/// that stopped reading).
async fn serve_hyper<I, H, Fut, B>(
    io: I,
    builder: &auto::Builder<TokioExecutor>,
    handler: H,
    options: Arc<ServeOptions>,
    idle: Duration,
    mut stop: watch::Receiver<bool>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    H: Fn(Request<Incoming>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: ResponseBody,
{
    let activity = Arc::new(Activity::new());
    let watched = activity.clone();
    let service = service_fn(move |request: Request<Incoming>| {
        let working = Working::new(activity.clone());
        let method = request.method().clone();
        let logged = options
            .access_log
            .then(|| (request.uri().clone(), options.role));
        let answer = handler(request);
        async move {
            let _working = working;
            let response = strip_for_head(&method, answer.await);
            if let Some((uri, role)) = logged {
                log_answer(role, &method, &uri, &response);
            }
            Ok::<_, Infallible>(response)
        }
    });
    let io = TokioIo::new(Timed::new(io, watched.clone()));
    let connection = builder.serve_connection(io, service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        () = stopped(&mut stop) => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, connection).await;
        }
        () = watched.idle_for(idle) => {
            // Lets a response still being sent finish, then closes; but not one its client
            // stopped taking (hyper has no write timeout).
            connection.as_mut().graceful_shutdown();
            tokio::select! {
                _ = connection.as_mut() => {}
                () = watched.stalled_for(idle) => {}
                () = stopped(&mut stop) => {
                    let _ = tokio::time::timeout(SHUTDOWN_GRACE, connection).await;
                }
            }
        }
    }
}

/// The access log's line for one answer: role, method, target, status, body bytes.
pub(super) fn log_answer<B>(role: &str, method: &Method, uri: &Uri, response: &Response<B>) {
    let bytes = response
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    tracing::info!(
        "{role}: {method} {} {} {bytes}",
        target(uri),
        response.status().as_u16()
    );
}

/// Resolves once shutdown is asked (or the loop is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is dropped here, not held across an await.
    let _ = stop.wait_for(|stopping| *stopping).await.map(|_| ());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::http::test_clients::{
        bytes_until_closed, closed_within, trickle_until_closed,
    };
    use crate::roles::http::Body;
    use hyper_util::rt::TokioExecutor;
    use std::net::SocketAddr;

    /// The length of `/big`'s body: more than loopback's socket buffers hold.
    const BIG: usize = 25_000_000;

    /// A test server that closes connections idle for `idle` (returned), its slow path
    /// `/slow` taking 900 ms, `/big` answering `BIG` bytes.
    async fn idle_test_server(
        idle: Duration,
    ) -> (
        SocketAddr,
        Duration,
        tokio::task::JoinHandle<io::Result<()>>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handler = |request: Request<Incoming>| async move {
            match request.uri().path() {
                "/slow" => tokio::time::sleep(Duration::from_millis(900)).await,
                "/big" => return Response::new(Body::bytes(vec![7u8; BIG])),
                _ => {}
            }
            Response::new(Body::bytes(&b"ok"[..]))
        };
        let options = ServeOptions {
            role: "test",
            access_log: false,
        };
        let server = tokio::spawn(serve_http_idle(
            listener,
            handler,
            options,
            (idle, MAX_CONNECTIONS),
            std::future::pending(),
        ));
        (addr, idle, server)
    }

    /// Past its connections' bound a server answers a new connection only once one of those
    /// it holds ends.
    #[tokio::test]
    async fn connections_past_the_bound_wait_for_one_to_end() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handler = |_: Request<Incoming>| async { Response::new(Body::bytes(&b"ok"[..])) };
        let options = ServeOptions {
            role: "test",
            access_log: false,
        };
        // Idle connections are held far longer than the test waits.
        let bounds = (Duration::from_secs(60), 2);
        let pending = std::future::pending();
        let server = tokio::spawn(serve_http_idle(listener, handler, options, bounds, pending));
        // Two connections trickle request heads: the server holds both.
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            stream.write_all(b"GET / HT").await.unwrap();
            held.push(stream);
        }
        let mut third = tokio::net::TcpStream::connect(addr).await.unwrap();
        let get = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        third.write_all(get).await.unwrap();
        let mut answer = Vec::new();
        let early =
            tokio::time::timeout(Duration::from_millis(300), third.read_to_end(&mut answer));
        assert!(early.await.is_err(), "answered past the bound: {answer:?}");
        // One held connection leaves, and the third is served.
        drop(held.remove(0));
        let answered =
            tokio::time::timeout(Duration::from_secs(10), third.read_to_end(&mut answer));
        answered
            .await
            .expect("served once a place was free")
            .unwrap();
        assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
        server.abort();
    }

    /// An HTTP/2 client that keeps its connection without asking anything loses it after the
    /// idle time; while a request is in progress it keeps it.
    #[tokio::test]
    async fn an_idle_http2_connection_is_closed() {
        let (addr, _idle, server) = idle_test_server(Duration::from_millis(300)).await;
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .unwrap();
        let mut connection = tokio::spawn(connection);
        let get = |path: &str| {
            Request::get(format!("http://{addr}{path}"))
                .body(http_body_util::Empty::<bytes::Bytes>::new())
                .unwrap()
        };
        // A request three times the idle time long keeps the connection.
        let slow = sender.send_request(get("/slow")).await.unwrap();
        assert_eq!(slow.status(), 200);
        assert!(!connection.is_finished());
        assert_eq!(sender.send_request(get("/")).await.unwrap().status(), 200);
        // Then nothing: the server closes the connection.
        tokio::time::timeout(Duration::from_secs(5), &mut connection)
            .await
            .expect("the server closes an idle HTTP/2 connection")
            .unwrap()
            .unwrap();
        server.abort();
    }

    /// A client that stops reading its answer loses its connection once the idle time has
    /// passed and then another without its taking anything (hyper would wait for ever to
    /// finish the answer): the rest of the answer never comes. One that takes it slowly, for several idle times, gets all of it.
    #[tokio::test]
    async fn a_client_that_stops_reading_is_closed_and_a_slow_one_served() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // A second: a test process starved of CPU for a whole idle time would see its slow
        // reader's connection closed.
        let (addr, idle, server) = idle_test_server(Duration::from_secs(1)).await;
        let get = b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
        let mut stalled = tokio::net::TcpStream::connect(addr).await.unwrap();
        stalled.write_all(get).await.unwrap();
        // Closed an idle time after the answer's head (the idle timer) and another after that
        // (the stall), before the client reads again.
        tokio::time::sleep(idle * 3).await;
        let ended = bytes_until_closed(&mut stalled, Duration::from_secs(5)).await;
        let taken = ended.expect("the connection stayed open");
        assert!(
            taken < BIG,
            "{taken} bytes: the answer was finished, not cut"
        );
        // 64 KiB every 10 ms at most: about 6.5 MB/s, so the answer takes nearly 4 s, past three
        // idle times, with the server's writes waiting on the reader throughout.
        let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
        slow.write_all(get).await.unwrap();
        let started = std::time::Instant::now();
        let (mut answer, mut head) = (Vec::new(), None);
        let mut buffer = vec![0u8; 1 << 16];
        let read = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match slow.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => answer.extend_from_slice(&buffer[..n]),
                }
                head = head.or_else(|| answer.windows(4).position(|w| w == b"\r\n\r\n"));
                if head.is_some_and(|at| answer.len() - at - 4 >= BIG) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        assert!(read.await.is_ok(), "the slow reader was not served in 20 s");
        assert!(started.elapsed() > idle * 3, "{:?}", started.elapsed());
        assert!(answer.starts_with(b"HTTP/1.1 200"));
        let body = head.map(|at| answer.len() - at - 4);
        assert_eq!(body, Some(BIG), "the slow reader's answer was cut");
        server.abort();
    }

    /// An HTTP/2 client that stops reading its answer loses its connection though it pings
    /// the server all along (its pings' acknowledgements are writes, but no answer's bytes).
    #[tokio::test]
    async fn an_http2_client_that_stops_reading_is_closed_though_it_pings() {
        let (addr, _idle, server) = idle_test_server(Duration::from_millis(300)).await;
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .keep_alive_interval(Duration::from_millis(100))
            .keep_alive_timeout(Duration::from_secs(5));
        let (mut sender, connection) = builder.handshake(TokioIo::new(stream)).await.unwrap();
        let connection = tokio::spawn(connection);
        let get = Request::get(format!("http://{addr}/big"))
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
        // The answer's head, and no byte of its body read.
        let answer = sender.send_request(get).await.unwrap();
        assert_eq!(answer.status(), 200);
        let ended = tokio::time::timeout(Duration::from_secs(5), connection).await;
        assert!(ended.is_ok(), "the connection stayed open");
        drop(answer);
        server.abort();
    }

    /// An HTTP/1 client that never finishes its request head (one byte now and then, as a
    /// slow-loris client does), and one that keeps an idle keep-alive connection, both lose
    /// their connections after the idle time.
    #[tokio::test]
    async fn http1_clients_that_ask_nothing_are_closed() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (addr, idle, server) = idle_test_server(Duration::from_millis(300)).await;
        let kept = trickle_until_closed(addr)
            .await
            .expect("a trickling request head kept its connection for 10 s");
        assert!(kept >= idle, "closed after {kept:?}");

        let mut idle_client = tokio::net::TcpStream::connect(addr).await.unwrap();
        idle_client
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = [0u8; 64];
        let n = idle_client.read(&mut answer).await.unwrap();
        assert!(answer[..n].starts_with(b"HTTP/1.1 200"));
        assert!(
            closed_within(&mut idle_client, Duration::from_secs(5)).await,
            "an idle keep-alive connection stayed open"
        );
        server.abort();
    }
}
