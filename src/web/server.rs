//! The live view's HTTP side: the page (`/`, `/app.js`, `/style.css`, compiled into the binary
//! from the repository's `web/`, so it works offline and from any directory) and the feed
//! (`/feed`, Server-Sent Events). GET and HEAD only; nothing here changes the lab.

use super::hub::Hub;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::{Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::{broadcast, mpsc};

const INDEX: &str = include_str!("../../web/index.html");
const SCRIPT: &str = include_str!("../../web/app.js");
const STYLE: &str = include_str!("../../web/style.css");

/// Pages that may follow the feed at once; one more is answered 503.
pub const MAX_FEEDS: usize = 32;
/// Messages queued for one page's connection before it waits for the page to read.
const QUEUED: usize = 256;

/// A response body: bytes at once, or the feed for as long as the page stays.
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

/// What the handler shares between connections.
pub struct Site {
    pub hub: Arc<Hub>,
    feeds: AtomicUsize,
}

impl Site {
    pub fn new(hub: Arc<Hub>) -> Site {
        Site {
            hub,
            feeds: AtomicUsize::new(0),
        }
    }
}

/// Answers one request.
pub async fn handle(site: Arc<Site>, request: Request<Incoming>) -> Response<WebBody> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "GET or HEAD only\n");
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

/// The feed: everything so far, then each message as it is published. A page that falls
/// [`QUEUED`] messages behind the hub's own lag limit loses its connection and reconnects.
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
    tokio::spawn(async move {
        let _following = following;
        for message in past {
            if tx.send(message).await.is_err() {
                return;
            }
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
            };
            if tx.send(message).await.is_err() {
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
    use std::time::Duration;

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
        let site = Arc::new(Site::new(Arc::new(Hub::default())));
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
}
