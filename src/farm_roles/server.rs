//! `farm-server`: one server of the farm (papers/004): d slots, each holding one content's bytes,
//! serving one user transfer at a time. A transfer (`GET /c/C?ticket=T`, sent here by the
//! dispatcher's redirect; one without a ticket the dispatcher made for this server and content is
//! refused) lasts a service time drawn i.i.d. from an exponential distribution of mean `service`,
//! its bytes paced evenly over it; a second one while busy is refused (503). When a transfer ends,
//! whole or not, the server tells the dispatcher, with its ticket. On the dispatcher's word
//! (control plane, the dispatcher only) it fills its slots from the data center at the start, and
//! replaces one replica by another fetched from the data center or a peer (`GET /copy/C`, which it
//! also serves its peers from memory, outside the one-transfer limit: a back-end copy, not a user's
//! service). Its fetches carry tickets it makes with the dispatcher's key, and it serves `/copy/C`
//! only with one (`super::tickets`). A request for a content whose fetch is still under way waits
//! for it.

use super::config::ServerConfig;
use super::messages::{
    DispatcherRequest, DispatcherResponse, ServerRequest, ServerResponse, Source,
};
use super::tickets::{self, NoTicket};
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

/// One slot: its content, and its bytes once fetched (None while the fetch is under way, an
/// error once the data center refused it for good).
#[derive(Clone)]
struct Slot {
    content: u32,
    bytes: watch::Receiver<Option<Result<Bytes, String>>>,
}

/// Why a server has no bytes to give: the status to answer and what to say.
type NoBytes = (StatusCode, String);

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

/// What a server needs to take the tickets of the dispatcher's redirects and make those of
/// its own fetches: the dispatcher's key (from its `Fill`) and the lowest ticket number not
/// yet taken. The dispatcher numbers its transfers in order, so a ticket is good for one
/// request, and one older than a ticket already taken (its lease ran out) for none.
#[derive(Default)]
struct Tickets {
    key: Option<TokenKey>,
    next: u64,
    /// The number of the last ticket this server made for its own fetches.
    fetches: u64,
}

impl Tickets {
    /// The number of the ticket in a request's `query` for `content` at server `node`, now
    /// taken: a user's request comes through the dispatcher, whose redirect carries the
    /// ticket of the transfer it assigned (the one it waits to hear the end of).
    fn take(&mut self, node: &str, content: u32, query: Option<&str>) -> Result<u64, NoTicket> {
        let ticket = tickets::check(self.key.as_ref(), node, "c", content, query)?;
        if ticket < self.next {
            return Err(NoTicket::Stale);
        }
        self.next = ticket.saturating_add(1);
        Ok(ticket)
    }

    /// `/KIND/CONTENT?ticket=T` for a fetch from `source`, each numbered apart; None before
    /// the dispatcher's key came.
    fn fetch_path(&mut self, source: &str, kind: &str, content: u32) -> Option<String> {
        let key = self.key.as_ref()?;
        self.fetches = self.fetches.wrapping_add(1);
        Some(tickets::ticketed_path(
            key,
            source,
            kind,
            content,
            self.fetches,
        ))
    }
}

/// Why a replica's fetch failed, and whether asking the same source again could change it.
struct FetchFailure {
    why: String,
    for_good: bool,
}

impl FetchFailure {
    fn again(why: impl std::fmt::Display) -> FetchFailure {
        FetchFailure {
            why: why.to_string(),
            for_good: false,
        }
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
    async fn bytes_of(&self, content: u32) -> Result<Bytes, NoBytes> {
        let Some(mut slot) = self.slot_waiting(content).await else {
            let why = "this server does not store it".to_string();
            return Err((StatusCode::NOT_FOUND, why));
        };
        let ready = tokio::time::timeout(
            self.config.fetch_timeout,
            slot.bytes.wait_for(Option::is_some),
        )
        .await;
        let unavailable = |why: String| (StatusCode::SERVICE_UNAVAILABLE, why);
        match ready {
            Ok(Ok(fetched)) => match &*fetched {
                Some(Ok(bytes)) => Ok(bytes.clone()),
                Some(Err(why)) => Err(unavailable(format!("the replica's fetch failed: {why}"))),
                None => Err(unavailable("the replica's fetch did not complete".into())),
            },
            _ => Err(unavailable("the replica's fetch did not complete".into())),
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
            let admitted = tickets::check(
                (self.tickets.lock().unwrap_or_else(|e| e.into_inner()))
                    .key
                    .as_ref(),
                &self.node,
                "copy",
                content,
                request.uri().query(),
            );
            if let Err(refusal) = admitted {
                return refusal.response();
            }
            return match self.bytes_of(content).await {
                Ok(bytes) => octets(Body::bytes(bytes.clone()), bytes.len()),
                Err((status, why)) => error(status, why),
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
            Err((status, why)) => error(status, why),
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
    /// growing wait, until it succeeds, the data center refuses it for good (a 4xx other than
    /// 408 and 429: a content or a ticket it does not know, which asking again will not
    /// change; requests for the slot's content then get 503 saying so) or the slot is given
    /// to another content: a replica that could not be had at first (a peer that had not its
    /// own bytes yet, the data center not yet listening when the farm is filled) is had later,
    /// not left empty for good while the dispatcher sends requests to it.
    fn fetch_into(self: &Arc<Self>, slot: usize, content: u32, from: &Source, kind: &str) {
        let (tx, rx) = watch::channel(None);
        {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots[slot] = Some(Slot { content, bytes: rx });
        }
        self.changed.send_replace(());
        let mut source = match from {
            Source::DataCenter => self.config.datacenter.clone(),
            Source::Peer(peer) => peer.clone(),
        };
        let (server, kind) = (self.clone(), kind.to_string());
        tokio::spawn(async move {
            let mut wait = FETCH_RETRY_FIRST;
            loop {
                let failure = match server.fetch(&source, &kind, content).await {
                    Ok(bytes) => {
                        let _ = tx.send(Some(Ok(bytes)));
                        return;
                    }
                    Err(e) => e,
                };
                let from_datacenter = source == server.config.datacenter;
                let (node, why) = (&server.node, &failure.why);
                if from_datacenter && failure.for_good {
                    tracing::error!(
                        "farm-server {node}: {source} refused /{kind}/{content}: {why}; \
                         slot {slot} stays empty"
                    );
                    let _ = tx.send(Some(Err(format!("{source} answered {why}"))));
                    return;
                }
                tracing::warn!(
                    "farm-server {node}: fetching /{kind}/{content} from {source}: {why}; \
                     trying the data center in {wait:?}"
                );
                tokio::select! {
                    () = tx.closed() => return,
                    () = tokio::time::sleep(wait) => {}
                }
                source = server.config.datacenter.clone();
                wait = (wait * 2).min(FETCH_RETRY_MOST);
            }
        });
    }

    /// GETs `/KIND/CONTENT` from `source` with a ticket for it and checks the bytes are
    /// content `content`'s, reading no more than its size.
    async fn fetch(&self, source: &str, kind: &str, content: u32) -> Result<Bytes, FetchFailure> {
        let path = (self.tickets.lock().unwrap_or_else(|e| e.into_inner()))
            .fetch_path(source, kind, content)
            .ok_or(FetchFailure::again("no key from the dispatcher yet"))?;
        let url = format!("http://{source}:{}{path}", self.config.port);
        let response = (self.http.get(url).send().await).map_err(FetchFailure::again)?;
        let status = response.status();
        if !status.is_success() {
            let for_good = status.is_client_error()
                && status != StatusCode::REQUEST_TIMEOUT
                && status != StatusCode::TOO_MANY_REQUESTS;
            let why = format!("status {status}");
            return Err(FetchFailure { why, for_good });
        }
        let bytes =
            (exact_body(response, self.config.object_size).await).map_err(FetchFailure::again)?;
        if bytes != expected(content, self.config.object_size) {
            return Err(FetchFailure::again(format!(
                "{} bytes that are not content {content}",
                bytes.len()
            )));
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
                    ..Tickets::default()
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
                    if let Err((_, why)) = self.bytes_of(c).await {
                        return ServerResponse::Refused(format!("content {c}: {why}"));
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
    let http = crate::roles::fetch::client()
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
    use crate::farm_roles::tickets::{ticket_context, ticketed_path};
    use crate::testing::TempDir;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Only a ticket the dispatcher's key made for this server and content takes a transfer,
    /// once: none, a made-up one, one for another server or content, one already taken or
    /// older than one taken, or any before the key came, is refused.
    #[test]
    fn a_transfer_takes_a_ticket_the_dispatcher_made_for_it_once() {
        let key = TokenKey::generate().unwrap();
        let query = |server: &str, content: u32, n: u64| {
            format!(
                "ticket={}",
                key.token(&ticket_context(server, "c", content), n)
            )
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
            ..Tickets::default()
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
        let others = format!("ticket={}", other.token(&ticket_context("s1", "c", 7), 5));
        assert_eq!(take(&others, 7), forbidden, "another key's");
        assert_eq!(take(&query("s1", 7, 5), 7), Ok(5));
        let stale = Err(StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(take(&query("s1", 7, 5), 7), stale, "taken twice");
        assert_eq!(take(&query("s1", 7, 3), 7), stale, "older than one taken");
        assert_eq!(take(&query("s1", 9, 8), 9), Ok(8));
    }

    /// A server `node` with one slot, the key `key`, whose data center and peers listen on
    /// `port` at `datacenter`.
    fn test_server(node: &str, datacenter: &str, port: u16, key: &TokenKey) -> Arc<Server> {
        let certs = TempDir::new("farm-server-test");
        // The control plane is not used here: any certificate will do.
        crate::control::issue_lab_certs(&certs.0, "farm-test", &["s1"]).unwrap();
        let identity = Arc::new(Identity::load(&certs.0, "s1").unwrap());
        let config = ServerConfig {
            dispatcher: "dispatcher".into(),
            datacenter: datacenter.into(),
            slots: 1,
            service: Duration::from_millis(1),
            object_size: 1000,
            port,
            control_port: 1,
            fetch_timeout: Duration::from_secs(3),
            seed: 1,
        };
        Arc::new(Server {
            slots: Mutex::new(vec![None]),
            changed: watch::channel(()).0,
            busy: AtomicBool::new(false),
            tickets: Mutex::new(Tickets {
                key: Some(TokenKey::from_bytes(key.bytes())),
                ..Tickets::default()
            }),
            rng: Mutex::new(StdRng::seed_from_u64(1)),
            http: crate::roles::fetch::client()
                .timeout(config.fetch_timeout)
                .build()
                .unwrap(),
            dispatcher: tokio::sync::Mutex::new(Peer::new(&config.dispatcher)),
            refusals: Arc::new(tokio::sync::Semaphore::new(MAX_REFUSAL_REPORTS)),
            identity,
            node: node.into(),
            config,
        })
    }

    /// A listener on a port of 127.0.0.1 of its own, not yet accepting.
    fn listener() -> (std::net::TcpListener, u16) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        (listener, port)
    }

    /// A data center on `listener` that answers every request with `status` (and content
    /// 3's bytes when 200), and the request lines it was sent.
    fn fake_datacenter(
        listener: std::net::TcpListener,
        status: &'static str,
    ) -> (tokio::task::JoinHandle<()>, Arc<Mutex<Vec<String>>>) {
        let datacenter = tokio::net::TcpListener::from_std(listener).unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let seen = lines.clone();
        let serving = tokio::spawn(async move {
            while let Ok((mut stream, _)) = datacenter.accept().await {
                let mut request = [0; 1024];
                let n = stream.read(&mut request).await.unwrap_or(0);
                let line = String::from_utf8_lossy(&request[..n])
                    .lines()
                    .next()
                    .map(str::to_string);
                seen.lock().unwrap().extend(line);
                let (length, body) = match status {
                    "200 OK" => (1000, expected(3, 1000)),
                    _ => (0, Bytes::new()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {length}\r\nconnection: close\r\n\r\n"
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&body).await;
            }
        });
        (serving, lines)
    }

    /// A replica whose source fails (a peer that does not answer) is not left empty: it is
    /// fetched from the data center once that answers, with a ticket of the dispatcher's key
    /// for the data center and that copy.
    #[tokio::test]
    async fn a_failed_replica_fetch_is_had_from_the_data_center_later() {
        let key = TokenKey::generate().unwrap();
        let (listener, port) = listener();
        let server = test_server("s1", "127.0.0.1", port, &key);
        server.fetch_into(0, 3, &Source::Peer("127.0.0.2".into()), "copy");
        tokio::time::sleep(Duration::from_millis(400)).await;
        let slot = server.slot_of(3).expect("the slot holds the content");
        assert!(slot.bytes.borrow().is_none(), "fetched from nowhere");
        let (serving, lines) = fake_datacenter(listener, "200 OK");
        let bytes = server.bytes_of(3).await.expect("the replica arrives");
        assert_eq!(bytes, expected(3, 1000));
        let lines = lines.lock().unwrap().clone();
        let [line] = &lines[..] else {
            panic!("{lines:?}")
        };
        let target = (line.strip_prefix("GET ")).and_then(|l| l.strip_suffix(" HTTP/1.1"));
        let (path, query) = target.and_then(|t| t.split_once('?')).unwrap();
        assert_eq!(path, "/copy/3");
        let admitted = tickets::check(Some(&key), "127.0.0.1", "copy", 3, Some(query));
        assert!(admitted.is_ok(), "{line}");
        serving.abort();
    }

    /// A data center that refuses a fetch with a 4xx is not asked again: the slot stays
    /// empty, and a request for it fails at once, saying why, rather than wait.
    #[tokio::test]
    async fn a_fetch_the_data_center_refuses_is_not_tried_again() {
        let key = TokenKey::generate().unwrap();
        let (listener, port) = listener();
        let (serving, lines) = fake_datacenter(listener, "404 Not Found");
        let server = test_server("s1", "127.0.0.1", port, &key);
        server.fetch_into(0, 3, &Source::DataCenter, "fill");
        let failed = tokio::time::timeout(Duration::from_secs(2), server.bytes_of(3)).await;
        let Ok(Err((status, why))) = failed else {
            panic!("the request waited")
        };
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(why.contains("404"), "{why}");
        tokio::time::sleep(FETCH_RETRY_FIRST * 3).await;
        assert_eq!(lines.lock().unwrap().len(), 1, "asked again");
        serving.abort();
    }

    /// A server serves `/copy/C` to a farm member only: a peer's fetch, with a ticket it made
    /// with the dispatcher's key, gets the bytes; a request without a ticket, or with one
    /// made for another node or by another key, is refused.
    #[tokio::test]
    async fn a_copy_is_served_with_a_ticket_of_the_farm_only() {
        let key = TokenKey::generate().unwrap();
        let holder = test_server("127.0.0.1", "127.0.0.9", 1, &key);
        let (bytes, stored) = watch::channel(Some(Ok(expected(3, 1000))));
        drop(bytes);
        holder.slots.lock().unwrap()[0] = Some(Slot {
            content: 3,
            bytes: stored,
        });
        let handler = move |request| holder.clone().handle(request);
        let options = ServeOptions {
            role: "farm-server",
            access_log: false,
        };
        let running = spawn_http("127.0.0.1:0".parse().unwrap(), handler, options, None)
            .await
            .unwrap();
        let port = running.http.port();
        let peer = test_server("s2", "127.0.0.9", port, &key);
        peer.fetch_into(0, 3, &Source::Peer("127.0.0.1".into()), "copy");
        let copied = tokio::time::timeout(Duration::from_secs(5), peer.bytes_of(3)).await;
        assert_eq!(copied.ok().and_then(Result::ok), Some(expected(3, 1000)));
        let other = TokenKey::generate().unwrap();
        // Another request's ticket on `/copy/3`.
        let on_copy = |path: String| format!("/copy/3?{}", path.split_once('?').unwrap().1);
        for (what, path) in [
            ("no ticket", "/copy/3".to_string()),
            ("another node's", ticketed_path(&key, "s2", "copy", 3, 1)),
            (
                "another key's",
                ticketed_path(&other, "127.0.0.1", "copy", 3, 1),
            ),
            (
                "another kind's",
                on_copy(ticketed_path(&key, "127.0.0.1", "c", 3, 1)),
            ),
            (
                "another content's",
                on_copy(ticketed_path(&key, "127.0.0.1", "copy", 4, 1)),
            ),
        ] {
            let url = format!("http://127.0.0.1:{port}{path}");
            let status = crate::testing::status_of(url).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{what}");
        }
        running.stop().await.unwrap();
    }
}
