//! `farm-server`: one server of the farm (papers/004): d slots, each holding one content's
//! bytes, serving one user transfer at a time. A transfer (`GET /c/C?ticket=T`, sent here by
//! the dispatcher's redirect; one without a ticket the dispatcher made for this server and
//! content is refused) lasts a service time drawn i.i.d. from an exponential distribution of mean
//! `service`, its bytes paced evenly over it; a second one while busy is refused (503). When
//! a transfer ends, whole or not, the server tells the dispatcher, with its ticket. On the dispatcher's word
//! (control plane, the dispatcher only) it fills its slots from the data center at the start,
//! and replaces one replica by another fetched from the data center or a peer (`GET
//! /copy/C`, which it also serves its peers from memory, outside the one-transfer limit: a
//! back-end copy, not a user's service). A request for a content whose fetch is still under
//! way waits for it.

use super::config::ServerConfig;
use super::messages::{
    ticket_context, ticket_of, DispatcherRequest, DispatcherResponse, ServerRequest,
    ServerResponse, Source,
};
use super::{content_of, payload};
use crate::cdn::hashing::hash64;
use crate::control::{Callers, Identity};
use crate::roles::control::load_identity;
use crate::roles::env::NodeEnv;
use crate::roles::fetch::exact_body;
use crate::roles::http::any_address;
use crate::roles::http::paced::Paced;
use crate::roles::http::semantics::{self as http, error};
use crate::roles::http::{spawn_http, Body, ServeOptions};
use crate::roles::peers::Peer;
use crate::roles::tokens::TokenKey;
use bytes::{Bytes, BytesMut};
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp1};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// One slot: its content, and its bytes once fetched (None while the fetch is under way or
/// after it failed).
#[derive(Clone)]
struct Slot {
    content: u32,
    bytes: watch::Receiver<Option<Bytes>>,
}

/// How long a request for a content this server does not store waits for it to arrive: the
/// dispatcher's replacement order and its redirect of a client to the new replica race.
const WAIT_FOR_REPLACEMENT: Duration = Duration::from_secs(2);

struct Server {
    config: ServerConfig,
    node: String,
    identity: Arc<Identity>,
    slots: Mutex<Vec<Option<Slot>>>,
    /// Bumped at every change of `slots`.
    changed: watch::Sender<()>,
    busy: AtomicBool,
    /// The tickets this server takes.
    tickets: Mutex<Tickets>,
    rng: Mutex<StdRng>,
    http: reqwest::Client,
    dispatcher: tokio::sync::Mutex<Peer>,
    /// Room for reports of refused transfers on their way to the dispatcher: past it a
    /// refusal goes unreported (its lease frees the server in the dispatcher's count), so
    /// that requests arriving while busy cannot pile reports up.
    refusals: Arc<tokio::sync::Semaphore>,
}

/// Why a request's ticket takes no transfer.
#[derive(Debug, PartialEq)]
enum NoTicket {
    /// None the dispatcher made for this server and content (403).
    Forbidden(&'static str),
    /// The dispatcher's `Fill`, which brings its key, has not come yet (503).
    Unfilled,
    /// A ticket already taken, or older than one taken (503, as a busy server answers: a
    /// client that came after its lease ran out finds the server given to another).
    Stale,
}

impl NoTicket {
    fn response(&self) -> Response<Body> {
        match self {
            NoTicket::Forbidden(why) => error(StatusCode::FORBIDDEN, why),
            NoTicket::Unfilled => http::unavailable("not filled by the dispatcher yet"),
            NoTicket::Stale => http::unavailable(
                "a ticket already taken, or older than one taken: each is good for one request",
            ),
        }
    }
}

/// What a server needs to take the tickets of the dispatcher's redirects: the dispatcher's
/// key (from its `Fill`) and the lowest ticket number not yet taken. The dispatcher numbers
/// its transfers in order, so a ticket is good for one request, and one older than a ticket
/// already taken (its lease ran out) for none.
#[derive(Default)]
struct Tickets {
    key: Option<TokenKey>,
    next: u64,
}

impl Tickets {
    /// The number of the ticket in a request's `query` for `content` at server `node`, now
    /// taken: a user's request comes through the dispatcher, whose redirect carries the
    /// ticket of the transfer it assigned (the one it waits to hear the end of).
    fn take(&mut self, node: &str, content: u32, query: Option<&str>) -> Result<u64, NoTicket> {
        let token = ticket_of(query).ok_or(NoTicket::Forbidden(
            "no ticket: a user's request comes through the dispatcher",
        ))?;
        let key = self.key.as_ref().ok_or(NoTicket::Unfilled)?;
        let ticket =
            key.id_of(&ticket_context(node, content), token)
                .ok_or(NoTicket::Forbidden(
                    "not a ticket the dispatcher gave for this server and content",
                ))?;
        if ticket < self.next {
            return Err(NoTicket::Stale);
        }
        self.next = ticket.saturating_add(1);
        Ok(ticket)
    }
}

/// Reports of refused transfers on their way at once.
const MAX_REFUSAL_REPORTS: usize = 4;

/// The wait before a failed replica fetch is tried again, doubled after each failure up to
/// [`FETCH_RETRY_MOST`].
const FETCH_RETRY_FIRST: Duration = Duration::from_millis(250);
const FETCH_RETRY_MOST: Duration = Duration::from_secs(4);

impl Server {
    fn slot_of(&self, content: u32) -> Option<Slot> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .iter()
            .flatten()
            .find(|s| s.content == content)
            .cloned()
    }

    /// The slot holding `content`, waiting a little for a replacement on its way.
    async fn slot_waiting(&self, content: u32) -> Option<Slot> {
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + WAIT_FOR_REPLACEMENT;
        loop {
            if let Some(slot) = self.slot_of(content) {
                return Some(slot);
            }
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                return None;
            }
        }
    }

    /// The bytes of `content` if stored here, waiting for a fetch under way.
    async fn bytes_of(&self, content: u32) -> Result<Bytes, Response<Body>> {
        let Some(mut slot) = self.slot_waiting(content).await else {
            return Err(error(
                StatusCode::NOT_FOUND,
                "this server does not store it",
            ));
        };
        let ready = tokio::time::timeout(
            self.config.fetch_timeout,
            slot.bytes.wait_for(Option::is_some),
        )
        .await;
        match ready {
            Ok(Ok(bytes)) => Ok(bytes.clone().unwrap_or_default()),
            _ => Err(http::unavailable("the replica's fetch did not complete")),
        }
    }

    fn service_time(&self) -> Duration {
        let draw: f64 = Exp1.sample(&mut *self.rng.lock().unwrap_or_else(|e| e.into_inner()));
        self.config.service.mul_f64(draw)
    }

    async fn handle(self: Arc<Self>, request: Request<hyper::body::Incoming>) -> Response<Body> {
        if let Some(refusal) = http::refuse_method(request.method()) {
            return refusal;
        }
        let path = request.uri().path();
        let contents = u32::MAX as usize;
        if let Some(content) = content_of(path, "copy", contents) {
            return match self.bytes_of(content).await {
                Ok(bytes) => octets(Body::bytes(bytes.clone()), bytes.len()),
                Err(response) => response,
            };
        }
        let Some(content) = content_of(path, "c", contents) else {
            return error(StatusCode::NOT_FOUND, "no such content");
        };
        let ticket = {
            let mut tickets = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
            match tickets.take(&self.node, content, request.uri().query()) {
                Ok(ticket) => ticket,
                Err(refusal) => return refusal.response(),
            }
        };
        if self.busy.swap(true, Ordering::AcqRel) {
            // The dispatcher thinks this transfer is here (it assigned it after an earlier
            // one's lease ran out): told that it ended, it stops counting this server busy.
            if let Ok(report) = self.refusals.clone().try_acquire_owned() {
                let server = self.clone();
                tokio::spawn(async move {
                    server.report_done(ticket).await;
                    drop(report);
                });
            }
            return http::unavailable("busy with another transfer");
        }
        let (done, ended) = oneshot::channel();
        let server = self.clone();
        tokio::spawn(async move {
            let _ = ended.await;
            server.busy.store(false, Ordering::Release);
            server.report_done(ticket).await;
        });
        match self.bytes_of(content).await {
            Ok(bytes) => {
                let length = bytes.len();
                octets(
                    Body::Paced(Paced::new(bytes, self.service_time(), done)),
                    length,
                )
            }
            // `done` dropped: the transfer ended before it began.
            Err(response) => response,
        }
    }

    async fn report_done(&self, ticket: u64) {
        let mut dispatcher = self.dispatcher.lock().await;
        let port = self.config.control_port;
        let answer: Option<DispatcherResponse> = dispatcher
            .call(
                port,
                &self.identity,
                &DispatcherRequest::Done { ticket },
                Duration::from_secs(2),
            )
            .await;
        match answer {
            Some(DispatcherResponse::Noted) => {}
            Some(DispatcherResponse::NotBusy) => {
                tracing::warn!(
                    "farm-server {}: the dispatcher did not think it busy",
                    self.node
                )
            }
            None => tracing::warn!("farm-server {}: could not tell the dispatcher", self.node),
        }
    }

    /// Starts fetching `content` into `slot` from `from`; the slot waits for it. A fetch that
    /// fails is tried again, from the data center (which holds every content) and after a
    /// growing wait, until it succeeds or the slot is given to another content: a replica that
    /// could not be had at first (a peer that had not its own bytes yet, the data center not
    /// yet listening when the farm is filled) is had later, not left empty for good while the
    /// dispatcher sends requests to it.
    fn fetch_into(self: &Arc<Self>, slot: usize, content: u32, from: &Source, kind: &str) {
        let (tx, rx) = watch::channel(None);
        {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots[slot] = Some(Slot { content, bytes: rx });
        }
        self.changed.send_replace(());
        let (port, kind) = (self.config.port, kind.to_string());
        let url_at = move |host: &str| format!("http://{host}:{port}/{kind}/{content}");
        let mut url = match from {
            Source::DataCenter => url_at(&self.config.datacenter),
            Source::Peer(peer) => url_at(peer),
        };
        let server = self.clone();
        tokio::spawn(async move {
            let mut wait = FETCH_RETRY_FIRST;
            loop {
                let failure = match server.fetch(&url, content).await {
                    Ok(bytes) => {
                        let _ = tx.send(Some(bytes));
                        return;
                    }
                    Err(e) => e,
                };
                tracing::warn!(
                    "farm-server {}: fetching {url}: {failure}; trying the data center in {wait:?}",
                    server.node
                );
                tokio::select! {
                    () = tx.closed() => return,
                    () = tokio::time::sleep(wait) => {}
                }
                url = url_at(&server.config.datacenter);
                wait = (wait * 2).min(FETCH_RETRY_MOST);
            }
        });
    }

    /// GETs `url` and checks the bytes are content `content`'s, reading no more than its size.
    async fn fetch(&self, url: &str, content: u32) -> Result<Bytes, String> {
        let response = self.http.get(url).send().await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("status {}", response.status()));
        }
        let bytes = exact_body(response, self.config.object_size).await?;
        if bytes != expected(content, self.config.object_size) {
            return Err(format!(
                "{} bytes that are not content {content}",
                bytes.len()
            ));
        }
        Ok(bytes)
    }

    async fn control(self: Arc<Self>, request: ServerRequest) -> ServerResponse {
        match request {
            ServerRequest::Fill { slots, ticket_key } => {
                if slots.len() != self.config.slots {
                    return ServerResponse::Refused(format!(
                        "{} slots asked of a server with {}",
                        slots.len(),
                        self.config.slots
                    ));
                }
                *self.tickets.lock().unwrap_or_else(|e| e.into_inner()) = Tickets {
                    key: Some(TokenKey::from_bytes(ticket_key)),
                    next: 0,
                };
                let mut waiting = Vec::new();
                for (i, content) in slots.iter().enumerate() {
                    match content {
                        Some(c) => {
                            self.fetch_into(i, *c, &Source::DataCenter, "fill");
                            waiting.push(*c);
                        }
                        None => self.slots.lock().unwrap_or_else(|e| e.into_inner())[i] = None,
                    }
                }
                for c in waiting {
                    if let Err(response) = self.bytes_of(c).await {
                        return ServerResponse::Refused(format!(
                            "content {c} could not be fetched ({})",
                            response.status()
                        ));
                    }
                }
                ServerResponse::Filled
            }
            ServerRequest::Replace {
                slot,
                evict,
                content,
                from,
            } => {
                let index = slot as usize;
                let holds = {
                    let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
                    slots.get(index).map(|s| s.as_ref().map(|s| s.content))
                };
                if let Source::Peer(peer) = &from {
                    if let Err(e) = crate::topology::check_node_name(peer, "node") {
                        return ServerResponse::Refused(format!("copy from {peer:?}: {e}"));
                    }
                }
                match holds {
                    None => ServerResponse::Refused(format!("no slot {slot}")),
                    Some(held) => {
                        // The dispatcher's coordinator decides what each slot holds; a slot
                        // that holds something else (an earlier replacement that never came)
                        // follows it rather than stay apart from it for good.
                        if held.is_some() && held != Some(evict) {
                            tracing::warn!(
                                "farm-server {}: slot {slot} holds {held:?}, the dispatcher replaces {evict}",
                                self.node
                            );
                        }
                        tracing::info!(
                            "farm-server {}: slot {slot}: {evict} → {content} from {from:?}",
                            self.node
                        );
                        self.fetch_into(index, content, &from, "copy");
                        ServerResponse::Replacing
                    }
                }
            }
        }
    }
}

/// Content `content`'s bytes, the same everywhere.
fn expected(content: u32, size: u64) -> Bytes {
    let mut buf = BytesMut::zeroed(size as usize);
    payload(content).fill(0, &mut buf);
    buf.freeze()
}

/// 200 with `body` (`length` bytes) as `application/octet-stream`.
fn octets(body: Body, length: usize) -> Response<Body> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    response
}

pub async fn run(
    config: ServerConfig,
    env: NodeEnv,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let node = env.node_name();
    let identity = load_identity(&env)?;
    // A stable hash of the node name seeds each server apart.
    let seed = config.seed ^ hash64(node.as_bytes());
    let http = reqwest::Client::builder()
        .timeout(config.fetch_timeout)
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let server = Arc::new(Server {
        slots: Mutex::new(vec![None; config.slots]),
        changed: watch::channel(()).0,
        busy: AtomicBool::new(false),
        tickets: Mutex::default(),
        rng: Mutex::new(StdRng::seed_from_u64(seed)),
        http,
        dispatcher: tokio::sync::Mutex::new(Peer::new(&config.dispatcher)),
        refusals: Arc::new(tokio::sync::Semaphore::new(MAX_REFUSAL_REPORTS)),
        identity: identity.clone(),
        node: node.clone(),
        config: config.clone(),
    });
    let for_control = server.clone();
    let control = crate::control::serve(
        any_address(config.control_port),
        &identity,
        Callers::only("farm server", [config.dispatcher.clone()]),
        move |_peer, request: ServerRequest| for_control.clone().control(request),
    )
    .await
    .map_err(|e| e.to_string())?;
    tracing::info!(
        "farm-server {node}: {} slots, mean service {:?}",
        config.slots,
        config.service
    );
    let handler = move |request: Request<hyper::body::Incoming>| server.clone().handle(request);
    let options = ServeOptions {
        role: "farm-server",
        access_log: false,
    };
    spawn_http(any_address(config.port), handler, options, Some(control))
        .await?
        .run_until(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Only a ticket the dispatcher's key made for this server and content takes a transfer,
    /// once: none, a made-up one, one for another server or content, one already taken or
    /// older than one taken, or any before the key came, is refused.
    #[test]
    fn a_transfer_takes_a_ticket_the_dispatcher_made_for_it_once() {
        let key = TokenKey::generate().unwrap();
        let query = |server: &str, content: u32, n: u64| {
            format!("ticket={}", key.token(&ticket_context(server, content), n))
        };
        let mut tickets = Tickets::default();
        let mut take = |query: Option<&str>, content: u32| {
            (tickets.take("s1", content, query)).map_err(|refusal| refusal.response().status())
        };
        assert_eq!(
            take(Some(&query("s1", 7, 5)), 7),
            Err(StatusCode::SERVICE_UNAVAILABLE),
            "before the key came"
        );
        let mut tickets = Tickets {
            key: Some(TokenKey::from_bytes(key.bytes())),
            next: 0,
        };
        let mut take = |query: &str, content: u32| {
            (tickets.take("s1", content, Some(query)))
                .map_err(|refusal| refusal.response().status())
        };
        let forbidden = Err(StatusCode::FORBIDDEN);
        assert_eq!(take(&query("s2", 7, 5), 7), forbidden, "another server's");
        assert_eq!(take(&query("s1", 8, 5), 7), forbidden, "another content's");
        assert_eq!(take("x=1", 7), forbidden, "none");
        let made_up = format!("ticket=5-{}", "0".repeat(64));
        assert_eq!(take(&made_up, 7), forbidden, "made up");
        let other = TokenKey::generate().unwrap();
        let others = format!("ticket={}", other.token(&ticket_context("s1", 7), 5));
        assert_eq!(take(&others, 7), forbidden, "another key's");
        assert_eq!(take(&query("s1", 7, 5), 7), Ok(5));
        let stale = Err(StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(take(&query("s1", 7, 5), 7), stale, "taken twice");
        assert_eq!(take(&query("s1", 7, 3), 7), stale, "older than one taken");
        assert_eq!(take(&query("s1", 9, 8), 9), Ok(8));
    }

    /// A replica whose source fails (a peer that does not answer, the data center not yet
    /// listening) is not left empty: it is fetched from the data center once that answers.
    #[tokio::test]
    async fn a_failed_replica_fetch_is_had_from_the_data_center_later() {
        let certs = TempDir::new("farm-server-retry");
        crate::control::issue_lab_certs(&certs.0, "retry", &["s1"]).unwrap();
        let identity = Arc::new(Identity::load(&certs.0, "s1").unwrap());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let config = ServerConfig {
            dispatcher: "dispatcher".into(),
            datacenter: "127.0.0.1".into(),
            slots: 1,
            service: Duration::from_millis(1),
            object_size: 1000,
            port,
            control_port: 1,
            fetch_timeout: Duration::from_secs(3),
            seed: 1,
        };
        let server = Arc::new(Server {
            slots: Mutex::new(vec![None]),
            changed: watch::channel(()).0,
            busy: AtomicBool::new(false),
            tickets: Mutex::default(),
            rng: Mutex::new(StdRng::seed_from_u64(1)),
            http: reqwest::Client::builder()
                .timeout(config.fetch_timeout)
                .build()
                .unwrap(),
            dispatcher: tokio::sync::Mutex::new(Peer::new(&config.dispatcher)),
            refusals: Arc::new(tokio::sync::Semaphore::new(MAX_REFUSAL_REPORTS)),
            identity,
            node: "s1".into(),
            config,
        });
        server.fetch_into(0, 3, &Source::Peer("127.0.0.2".into()), "copy");
        tokio::time::sleep(Duration::from_millis(400)).await;
        let slot = server.slot_of(3).expect("the slot holds the content");
        assert!(slot.bytes.borrow().is_none(), "fetched from nowhere");
        let datacenter = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let paths = Arc::new(Mutex::new(Vec::new()));
        let seen = paths.clone();
        let serving = tokio::spawn(async move {
            while let Ok((mut stream, _)) = datacenter.accept().await {
                let mut request = [0; 1024];
                let n = stream.read(&mut request).await.unwrap_or(0);
                let line = String::from_utf8_lossy(&request[..n])
                    .lines()
                    .next()
                    .map(str::to_string);
                seen.lock().unwrap().extend(line);
                let head = "HTTP/1.1 200 OK\r\ncontent-length: 1000\r\nconnection: close\r\n\r\n";
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&expected(3, 1000)).await;
            }
        });
        let bytes = server.bytes_of(3).await.expect("the replica arrives");
        assert_eq!(bytes, expected(3, 1000));
        assert_eq!(*paths.lock().unwrap(), ["GET /copy/3 HTTP/1.1"]);
        serving.abort();
    }
}
