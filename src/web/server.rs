//! The live view's HTTP side: the page (`/`, `/app.js`, `/style.css`, compiled into the binary
//! from the repository's `web/`, so it works offline and from any directory) and the feed
//! (`/feed`, Server-Sent Events). GET and HEAD only; nothing here changes the lab.

use super::hub::Hub;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{HeaderMap, HOST};
use hyper::{Method, Request, Response, StatusCode, Uri};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

const INDEX: &str = include_str!("../../web/index.html");
const SCRIPT: &str = include_str!("../../web/app.js");
const STYLE: &str = include_str!("../../web/style.css");

/// Pages that may follow the feed at once; one more is answered 503.
pub const MAX_FEEDS: usize = 32;
/// The most connections the view holds at once: it is served from inside `cdnlab run`, whose
/// lab work needs descriptors too; past it a connection waits for one to end.
pub const MAX_CONNECTIONS: usize = 256;
/// Messages queued for one page's connection before it waits for the page to read.
const QUEUED: usize = 256;

/// A response body: bytes at once, or the feed for as long as the page stays (and reads).
#[derive(Debug, Default)]
pub enum WebBody {
    #[default]
    Empty,
    Bytes(Option<Bytes>),
    Feed(mpsc::Receiver<Bytes>),
}

impl hyper::body::Body for WebBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            WebBody::Empty => Poll::Ready(None),
            WebBody::Bytes(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            WebBody::Feed(rx) => rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, WebBody::Empty | WebBody::Bytes(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            WebBody::Empty | WebBody::Bytes(None) => SizeHint::with_exact(0),
            WebBody::Bytes(Some(b)) => SizeHint::with_exact(b.len() as u64),
            WebBody::Feed(_) => SizeHint::default(),
        }
    }
}

/// How long a page's queue may stay full before the page loses its connection: a page that
/// stops reading must not hold one of the `MAX_FEEDS` places for ever.
const STALL: Duration = Duration::from_secs(30);
/// The longest the feed stays silent: after as long without a message it sends a comment line,
/// which pages ignore. The server closes a connection whose writes carry nothing for its idle
/// time (75 s) once that idle time has passed since the answer began, and cannot tell a quiet
/// feed (a replay sent whole, a lab gone still) from a page that stopped reading.
const QUIET: Duration = Duration::from_secs(15);
/// What the feed sends when it has been quiet for [`QUIET`]: an event-stream comment.
const STILL_HERE: &[u8] = b": still here\n\n";
/// How long a page may take to read the history it is sent when it connects: two minutes, and
/// a second more for each MB (up to `hub::MAX_HISTORY_BYTES`; a browser on the machine reads
/// that in seconds, one across a slow `--expose`d link may not).
fn history_within(bytes: usize) -> Duration {
    Duration::from_secs(120) + Duration::from_micros(bytes as u64)
}

/// What the handler shares between connections.
pub struct Site {
    pub hub: Arc<Hub>,
    feeds: AtomicUsize,
    /// Served on loopback only: requests must name a loopback host (see `host_allowed`).
    loopback: bool,
    stall: Duration,
    quiet: Duration,
}

impl Site {
    /// The site of a server listening on `local`.
    pub fn new(hub: Arc<Hub>, local: SocketAddr) -> Site {
        Site {
            hub,
            feeds: AtomicUsize::new(0),
            loopback: local.ip().is_loopback(),
            stall: STALL,
            quiet: QUIET,
        }
    }
}

/// Whether a request may be answered. A view served on loopback answers only requests that
/// name a loopback host, so a web page the user visits cannot read the feed through a name
/// that resolves to 127.0.0.1 (DNS rebinding). A view exposed with `--expose` answers any.
fn host_allowed(loopback: bool, headers: &HeaderMap, uri: &Uri) -> bool {
    if !loopback {
        return true;
    }
    let host = match headers.get(HOST) {
        Some(value) => value.to_str().ok(),
        None => uri.host(),
    };
    let Some(host) = host else { return false };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Answers one request.
pub async fn handle(site: Arc<Site>, request: Request<Incoming>) -> Response<WebBody> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "GET or HEAD only\n");
    }
    if !host_allowed(site.loopback, request.headers(), request.uri()) {
        return plain(
            StatusCode::MISDIRECTED_REQUEST,
            "this view listens on loopback and answers only requests for localhost, 127.0.0.1 or [::1] (to serve other names, listen on another address with --expose)\n",
        );
    }
    match request.uri().path() {
        "/" | "/index.html" => file(INDEX, "text/html; charset=utf-8"),
        "/app.js" => file(SCRIPT, "text/javascript; charset=utf-8"),
        "/style.css" => file(STYLE, "text/css; charset=utf-8"),
        "/feed" => feed(site),
        _ => plain(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn file(text: &'static str, content_type: &str) -> Response<WebBody> {
    Response::builder()
        .header(hyper::header::CONTENT_TYPE, content_type)
        .header(hyper::header::CACHE_CONTROL, "no-cache")
        .body(WebBody::Bytes(Some(Bytes::from_static(text.as_bytes()))))
        .unwrap_or_default()
}

fn plain(status: StatusCode, text: &'static str) -> Response<WebBody> {
    let mut response = file(text, "text/plain; charset=utf-8");
    *response.status_mut() = status;
    response
}

/// Counts a page following the feed for as long as its connection forwards messages.
struct Following(Arc<Site>);

impl Drop for Following {
    fn drop(&mut self) {
        self.0.feeds.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether `message` went into the page's queue within `stall` (and the page is still there).
async fn send_within(tx: &mpsc::Sender<Bytes>, message: Bytes, stall: Duration) -> bool {
    matches!(
        tokio::time::timeout(stall, tx.send(message)).await,
        Ok(Ok(()))
    )
}

/// The feed: everything so far, then each message as it is published. A page that falls
/// behind the hub's own lag limit, or whose [`QUEUED`] messages stay unread for [`STALL`],
/// loses its connection (and reconnects, if it still can).
fn feed(site: Arc<Site>) -> Response<WebBody> {
    if site.feeds.fetch_add(1, Ordering::AcqRel) >= MAX_FEEDS {
        site.feeds.fetch_sub(1, Ordering::AcqRel);
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many pages follow this feed\n",
        );
    }
    let following = Following(site.clone());
    let (past, mut live) = site.hub.subscribe();
    let (tx, rx) = mpsc::channel(QUEUED);
    let (stall, quiet) = (site.stall, site.quiet);
    let within = history_within(past.iter().map(Bytes::len).sum());
    tokio::spawn(async move {
        let _following = following;
        // As a whole, too: a page reading a few bytes a second never stalls one message for
        // long, yet would hold its place, and the history it was handed, for hours.
        let history = async {
            for message in past {
                if !send_within(&tx, message, stall).await {
                    return false;
                }
            }
            true
        };
        if !matches!(tokio::time::timeout(within, history).await, Ok(true)) {
            return;
        }
        loop {
            // A page that left is noticed even when nothing more is published (a replay, a
            // lab that went quiet), so its place is freed.
            let message = tokio::select! {
                received = live.recv() => match received {
                    Ok(message) => message,
                    Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return,
                },
                () = tx.closed() => return,
                () = tokio::time::sleep(quiet) => Bytes::from_static(STILL_HERE),
            };
            if !send_within(&tx, message, stall).await {
                return;
            }
        }
    });
    Response::builder()
        .header(hyper::header::CONTENT_TYPE, "text/event-stream")
        .header(hyper::header::CACHE_CONTROL, "no-cache")
        .body(WebBody::Feed(rx))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> SocketAddr {
        "127.0.0.1:8080".parse().unwrap()
    }

    /// Waits (at most a second) until `site` counts `n` pages following the feed.
    async fn following(site: &Site, n: usize) {
        for _ in 0..100 {
            if site.feeds.load(Ordering::Acquire) == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "{} pages follow, not {n}",
            site.feeds.load(Ordering::Acquire)
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn pages_past_the_limit_are_refused_and_a_page_that_leaves_frees_its_place() {
        let site = Arc::new(Site::new(Arc::new(Hub::default()), loopback()));
        site.hub.publish(&serde_json::json!({"kind": "end"}));
        let held: Vec<_> = (0..MAX_FEEDS).map(|_| feed(site.clone())).collect();
        assert!(held.iter().all(|r| r.status() == StatusCode::OK));
        assert_eq!(feed(site.clone()).status(), StatusCode::SERVICE_UNAVAILABLE);
        // Nothing more is published (a replay that has sent everything): pages that leave
        // must still be noticed.
        drop(held);
        following(&site, 0).await;
        for _ in 0..MAX_FEEDS * 2 {
            let page = feed(site.clone());
            assert_eq!(page.status(), StatusCode::OK);
            drop(page);
            following(&site, 0).await;
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_page_that_stops_reading_loses_its_place() {
        let mut site = Site::new(Arc::new(Hub::default()), loopback());
        site.stall = Duration::from_millis(200);
        let site = Arc::new(site);
        let held = feed(site.clone());
        assert_eq!(held.status(), StatusCode::OK);
        following(&site, 1).await;
        // More than the page's queue holds, never read.
        for n in 0..QUEUED + 10 {
            site.hub
                .publish(&serde_json::json!({"kind": "event", "n": n}));
            tokio::task::yield_now().await;
        }
        following(&site, 0).await;
        drop(held);
    }

    /// A feed with nothing new to send says it is still there: a connection whose client has
    /// taken nothing for the idle time is closed as a page that stopped reading.
    #[tokio::test(flavor = "current_thread")]
    async fn a_quiet_feed_sends_a_comment() {
        use http_body_util::BodyExt;
        let mut site = Site::new(Arc::new(Hub::default()), loopback());
        site.quiet = Duration::from_millis(50);
        let site = Arc::new(site);
        site.hub.publish(&serde_json::json!({"kind": "end"}));
        let mut body = feed(site.clone()).into_body();
        async fn next(body: &mut WebBody) -> Bytes {
            let frame = tokio::time::timeout(Duration::from_secs(5), body.frame());
            let frame = frame
                .await
                .expect("a frame within 5 s")
                .expect("the feed goes on");
            frame.unwrap().into_data().unwrap()
        }
        let history = next(&mut body).await;
        assert!(history.starts_with(b"data: "), "{history:?}");
        for _ in 0..2 {
            assert_eq!(next(&mut body).await, STILL_HERE);
        }
    }

    #[test]
    fn a_view_on_loopback_answers_only_loopback_host_names() {
        let allowed = |loopback: bool, host: Option<&str>, uri: &str| {
            let mut headers = HeaderMap::new();
            if let Some(host) = host {
                headers.insert(HOST, host.parse().unwrap());
            }
            host_allowed(loopback, &headers, &uri.parse().unwrap())
        };
        for host in [
            "localhost:8080",
            "LOCALHOST",
            "127.0.0.1:8080",
            "127.3.4.5",
            "[::1]:8080",
        ] {
            assert!(allowed(true, Some(host), "/feed"), "{host}");
        }
        for host in [
            "evil.example:8080",
            "localhost.evil.example",
            "10.0.0.1",
            "[::2]:80",
            "",
        ] {
            assert!(!allowed(true, Some(host), "/feed"), "{host}");
        }
        assert!(
            allowed(true, None, "http://localhost:8080/feed"),
            "an h2 authority"
        );
        assert!(!allowed(true, None, "/feed"), "no host at all");
        assert!(allowed(false, Some("evil.example"), "/feed"), "--expose");
    }
}
