//! `icn-router`: name-based forwarding over HTTP in the manner of NFD (papers/000, Figure 1's
//! R1), with `crate::icn`'s tables. The ICN name is the request path; a query is not part of it.
//!
//! `GET /NAME` (or HEAD):
//! - Content Store hit → 200 with the Data, `x-icn-cache: hit`.
//! - Miss with a fetch of the name pending → wait for it (`x-icn-cache: aggregated`).
//! - Miss otherwise → FIB longest-prefix match (no route: 404 naming the name), then `GET` the
//!   cheapest next hop, the next one when a hop refuses the connection, copying the request's
//!   `x-icn-region`; the forwarding request gets `x-icn-cache: miss`. A 200 is stored in the CS
//!   and given to every waiter; another status is passed to all of them and not stored; no
//!   answer within `upstream_timeout` (all hops included) or a failure is a 502 naming the next
//!   hop; a pending Interest past `pit_lifetime` gets 504. The next hop's `x-icn-site` (the CDN
//!   site that served) is passed on.
//! - Miss with the PIT full (`pit_entries` names pending, or `pit_waiters` on this name) → 503
//!   at once: the table never grows past its bounds, whatever names clients ask for.
//!
//! Every answer carries `x-icn-router: NODE` (`$CDNLAB_NODE`, else the host name).
//! `GET /.icn/stats` gives the counters as JSON.
//!
//! The upstream fetch runs in its own task, so a forwarding client that goes away does not
//! cancel the answer the aggregated ones wait for; Data is read whole before it is handed out,
//! since every waiter (and the CS) needs all of it.

mod config;
#[cfg(test)]
mod tests;

pub use config::{Route, RouterConfig};

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use tokio::sync::oneshot;
use toml::Table;

use crate::cdn::BaseUrl;
use crate::icn::{ContentStore, Fib, Name, Outcome, Pit, Ticket};
use crate::roles::fetch::body_at_most;
use crate::roles::http::any_address;
use crate::roles::http::describe;
use crate::roles::http::semantics::{self as http, error};
use crate::roles::http::{spawn_http, Running};
use crate::roles::http::{Body, ServeOptions};

/// Where the counters are served; `.icn` is not a name component a FIB would route.
pub const STATS_PATH: &str = "/.icn/stats";

const X_ICN_CACHE: HeaderName = HeaderName::from_static("x-icn-cache");
const X_ICN_ROUTER: HeaderName = HeaderName::from_static("x-icn-router");
const X_ICN_SITE: HeaderName = HeaderName::from_static("x-icn-site");
const X_ICN_REGION: HeaderName = HeaderName::from_static("x-icn-region");

pub fn config(table: &Table) -> Result<RouterConfig, String> {
    config::parse(table)
}

/// Serves on `0.0.0.0:port` until `shutdown`.
pub async fn run(config: RouterConfig, shutdown: impl Future<Output = ()>) -> Result<(), String> {
    let http = any_address(config.port);
    start(&config, http).await?.run_until(shutdown).await
}

/// Starts the router's HTTP server on `http` (port 0: any free port, see `Running::http`).
pub async fn start(config: &RouterConfig, http: SocketAddr) -> Result<Running, String> {
    let router = Arc::new(Router::new(config)?);
    spawn_expiry(Arc::downgrade(&router), config.pit_lifetime);
    let served = router.clone();
    let handler = move |request: Request<hyper::body::Incoming>| {
        let router = served.clone();
        async move { router.handle(request).await }
    };
    let options = ServeOptions {
        role: "icn-router",
        access_log: false,
    };
    let running = spawn_http(http, handler, options, None).await?;
    let routes: Vec<String> = config
        .routes
        .iter()
        .map(|r| format!("{} → {} (cost {})", r.prefix, r.nexthop, r.cost))
        .collect();
    tracing::info!(
        "icn-router: CS {} bytes, PIT lifetime {:?}, upstream timeout {:?}; FIB {}; HTTP on {}",
        config.cs_capacity,
        config.pit_lifetime,
        config.upstream_timeout,
        routes.join(", "),
        running.http
    );
    Ok(running)
}

/// What a next hop answered for a name, or the failure made here in its place: what the CS
/// keeps (200s only) and every waiter of the name is given.
#[derive(Debug)]
struct Data {
    status: StatusCode,
    content_type: Option<HeaderValue>,
    site: Option<HeaderValue>,
    body: Bytes,
}

impl Data {
    fn failure(status: StatusCode, message: String) -> Data {
        Data {
            status,
            content_type: Some(HeaderValue::from_static("text/plain; charset=utf-8")),
            site: None,
            body: Bytes::from(message + "\n"),
        }
    }

    /// The answer to one client; `x-icn-site` only for Data from upstream, not from the CS.
    fn response(&self, cache: &'static str) -> Response<Body> {
        let mut response = Response::new(Body::bytes(self.body.clone()));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        // Explicit, so a HEAD answer carries it too.
        headers.insert(CONTENT_LENGTH, HeaderValue::from(self.body.len()));
        if let Some(value) = &self.content_type {
            headers.insert(CONTENT_TYPE, value.clone());
        }
        if let Some(site) = self.site.as_ref().filter(|_| cache != "hit") {
            headers.insert(X_ICN_SITE, site.clone());
        }
        headers.insert(X_ICN_CACHE, HeaderValue::from_static(cache));
        response
    }
}

/// An in-record: where a waiting request is told its Data.
type Waiter = oneshot::Sender<Arc<Data>>;

struct Tables {
    cs: ContentStore<Arc<Data>>,
    pit: Pit<Waiter>,
}

struct Router {
    node: HeaderValue,
    fib: Fib<BaseUrl>,
    tables: Mutex<Tables>,
    client: reqwest::Client,
    upstream_timeout: Duration,
    pit_lifetime: Duration,
    requests: AtomicU64,
    upstream_requests: AtomicU64,
    upstream_errors: AtomicU64,
}

/// What a request found in the tables.
enum Lookup {
    Hit(Arc<Data>),
    NoRoute,
    Pending(Outcome, oneshot::Receiver<Arc<Data>>),
}

impl Router {
    fn new(config: &RouterConfig) -> Result<Router, String> {
        let mut fib = Fib::new();
        for route in &config.routes {
            fib.insert(route.prefix.clone(), route.nexthop.clone(), route.cost);
        }
        let node = crate::roles::env::node_name();
        let client = crate::roles::fetch::client()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("the HTTP client to the next hops: {e}"))?;
        Ok(Router {
            node: HeaderValue::from_str(&node)
                .unwrap_or_else(|_| HeaderValue::from_static("unknown")),
            fib,
            tables: Mutex::new(Tables {
                cs: ContentStore::new(config.cs_capacity),
                pit: Pit::new(config.pit_lifetime, config.pit_entries, config.pit_waiters),
            }),
            client,
            upstream_timeout: config.upstream_timeout,
            pit_lifetime: config.pit_lifetime,
            requests: AtomicU64::new(0),
            upstream_requests: AtomicU64::new(0),
            upstream_errors: AtomicU64::new(0),
        })
    }

    /// A poisoned lock only means a thread panicked between two consistent states of the
    /// tables (each update completes under one guard), so they are still usable.
    fn lock(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn handle(self: Arc<Self>, request: Request<hyper::body::Incoming>) -> Response<Body> {
        let mut response = self.answer(&request).await;
        response
            .headers_mut()
            .insert(X_ICN_ROUTER, self.node.clone());
        response
    }

    async fn answer(self: &Arc<Self>, request: &Request<hyper::body::Incoming>) -> Response<Body> {
        if let Some(refused) = http::refuse_method(request.method()) {
            return refused;
        }
        let path = request.uri().path();
        if path == STATS_PATH {
            return http::json(&self.stats());
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        let name = match Name::parse(path) {
            Ok(name) => name,
            Err(e) => return error(StatusCode::BAD_REQUEST, e),
        };
        let (outcome, data) = match self.lookup(&name) {
            Lookup::Hit(data) => return data.response("hit"),
            Lookup::NoRoute => {
                return error(
                    StatusCode::NOT_FOUND,
                    format_args!("no FIB route for {name}"),
                )
            }
            Lookup::Pending(Outcome::Full, _) => {
                return error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format_args!("too many requests pending here; {name} not forwarded"),
                )
            }
            Lookup::Pending(outcome, data) => (outcome, data),
        };
        if let Outcome::Forward(ticket) = outcome {
            let hops = match self.fib.longest_match(&name) {
                Some((_, hops)) => hops.iter().map(|hop| hop.face.clone()).collect(),
                None => Vec::new(),
            };
            let region = request.headers().get(X_ICN_REGION).cloned();
            tokio::spawn(self.clone().forward(name, ticket, hops, region));
        }
        let cache = match outcome {
            Outcome::Forward(_) => "miss",
            _ => "aggregated",
        };
        match data.await {
            Ok(data) => data.response(cache),
            // The forwarding task ended without answering: the runtime is shutting down.
            Err(_) => error(StatusCode::BAD_GATEWAY, "the router is stopping"),
        }
    }

    /// CS, then FIB, then PIT, under one lock so that a name's Data and its pending entry are
    /// never both missed.
    fn lookup(&self, name: &Name) -> Lookup {
        let now = Instant::now();
        let (lookup, expired) = {
            let mut tables = self.lock();
            let expired = tables.pit.expire(now);
            let lookup = if let Some(data) = tables.cs.get(name) {
                Lookup::Hit(data)
            } else if self.fib.longest_match(name).is_none() {
                Lookup::NoRoute
            } else {
                let (waiter, data) = oneshot::channel();
                Lookup::Pending(tables.pit.interest(name, waiter, now), data)
            };
            (lookup, expired)
        };
        self.answer_expired(expired);
        lookup
    }

    /// Fetches `name` from the first of `hops` that takes the connection, stores a 200 in the
    /// CS and answers every waiter of the PIT entry `ticket`.
    async fn forward(
        self: Arc<Self>,
        name: Name,
        ticket: Ticket,
        hops: Vec<BaseUrl>,
        region: Option<HeaderValue>,
    ) {
        let data = Arc::new(self.fetch(&name, &hops, region).await);
        let waiters = {
            let mut tables = self.lock();
            if data.status == StatusCode::OK {
                let size = data.body.len();
                tables.cs.insert(name.clone(), data.clone(), size);
            }
            tables.pit.satisfy(&name, ticket)
        };
        for waiter in waiters {
            // A waiter gone (its client disconnected) needs no answer.
            let _ = waiter.send(data.clone());
        }
    }

    async fn fetch(&self, name: &Name, hops: &[BaseUrl], region: Option<HeaderValue>) -> Data {
        let deadline = tokio::time::Instant::now() + self.upstream_timeout;
        let mut refused = Vec::new();
        for hop in hops {
            let mut request = self.client.get(hop.join(name.as_str()));
            if let Some(region) = &region {
                request = request.header(X_ICN_REGION, region.clone());
            }
            self.upstream_requests.fetch_add(1, Ordering::Relaxed);
            let failure = match tokio::time::timeout_at(deadline, get(request)).await {
                Ok(Ok(data)) => return data,
                // Nothing was sent: the next hop may still answer in time.
                Ok(Err(GetError::NotTaken(e))) => {
                    refused.push(format!("{hop} ({e})"));
                    continue;
                }
                Ok(Err(GetError::Failed(e))) => format!("next hop {hop} failed for {name}: {e}"),
                Err(_) => format!(
                    "next hop {hop} did not answer {name} within {:?}",
                    self.upstream_timeout
                ),
            };
            self.upstream_errors.fetch_add(1, Ordering::Relaxed);
            return Data::failure(StatusCode::BAD_GATEWAY, failure);
        }
        self.upstream_errors.fetch_add(1, Ordering::Relaxed);
        Data::failure(
            StatusCode::BAD_GATEWAY,
            format!(
                "no next hop for {name} took the connection: {}",
                refused.join(", ")
            ),
        )
    }

    /// Answers the waiters of PIT entries past their lifetime with 504.
    fn answer_expired(&self, expired: Vec<(Name, Vec<Waiter>)>) {
        for (name, waiters) in expired {
            let data = Arc::new(Data::failure(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "no Data for {name} within the PIT lifetime ({:?})",
                    self.pit_lifetime
                ),
            ));
            for waiter in waiters {
                let _ = waiter.send(data.clone());
            }
        }
    }

    fn expire(&self, now: Instant) {
        let expired = self.lock().pit.expire(now);
        self.answer_expired(expired);
    }

    fn stats(&self) -> serde_json::Value {
        let tables = self.lock();
        let (cs, pit) = (tables.cs.stats(), tables.pit.stats());
        serde_json::json!({
            "node": self.node.to_str().unwrap_or("unknown"),
            "requests": self.requests.load(Ordering::Relaxed),
            "cs": {
                "capacity_bytes": tables.cs.capacity(),
                "bytes": tables.cs.bytes(),
                "objects": tables.cs.objects(),
                "hits": cs.hits,
                "misses": cs.misses,
                "inserts": cs.inserts,
                "evictions": cs.evictions,
                "too_large": cs.too_large,
            },
            "pit": {
                "pending": tables.pit.len(),
                "forwarded": pit.forwarded,
                "aggregated": pit.aggregated,
                "satisfied": pit.satisfied,
                "expired": pit.expired,
                "refused": pit.refused,
            },
            "upstream": {
                "requests": self.upstream_requests.load(Ordering::Relaxed),
                "errors": self.upstream_errors.load(Ordering::Relaxed),
            },
        })
    }
}

/// Why one upstream GET failed.
enum GetError {
    /// The hop did not take the connection: nothing was sent.
    NotTaken(String),
    Failed(String),
}

/// One upstream GET, read whole up to the largest object a site serves.
async fn get(request: reqwest::RequestBuilder) -> Result<Data, GetError> {
    let response = request.send().await.map_err(|e| match e.is_connect() {
        true => GetError::NotTaken(describe(&e)),
        false => GetError::Failed(describe(&e)),
    })?;
    let status = response.status();
    let header = |name| response.headers().get(name).cloned();
    let (content_type, site) = (header(CONTENT_TYPE), header(X_ICN_SITE));
    let body = body_at_most(response, super::MAX_OBJECT_BYTES)
        .await
        .map_err(GetError::Failed)?;
    Ok(Data {
        status,
        content_type,
        site,
        body,
    })
}

/// Expires PIT entries a few times per lifetime, so waiters of a lost answer hear of it about
/// on time even when no other request comes; ends once the router is gone.
fn spawn_expiry(router: Weak<Router>, lifetime: Duration) {
    let period = (lifetime / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let Some(router) = router.upgrade() else {
                return;
            };
            router.expire(Instant::now());
        }
    });
}
