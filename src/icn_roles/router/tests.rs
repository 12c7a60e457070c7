//! The router on 127.0.0.1 against an upstream served in the test, which counts what reaches
//! it: CS hits after a miss, PIT aggregation, FIB misses and fallbacks, upstream errors passed
//! on and not cached, PIT expiry, LRU eviction seen through the stats.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::{Request, Response, StatusCode};
use tokio::sync::watch;

use super::{start, Route, RouterConfig, STATS_PATH};
use crate::cdn::BaseUrl;
use crate::icn::Name;
use crate::roles::http::semantics::error;
use crate::roles::http::{spawn_http, Running};
use crate::roles::http::{Body, ServeOptions};

/// Every test is bounded by this, so a regression fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(30);

async fn bounded<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .expect("test exceeded its time limit")
}

/// What the test upstream saw and when it may answer.
struct Seen {
    /// (path, x-icn-region) of every request, in arrival order.
    requests: Mutex<Vec<(String, Option<String>)>>,
    /// Requests under `/app1/slow/` wait until this is true.
    gate: watch::Sender<bool>,
}

impl Seen {
    fn count(&self, path: &str) -> usize {
        let requests = self.requests.lock().unwrap();
        requests.iter().filter(|(p, _)| p == path).count()
    }
}

/// The upstream: `/app1/missing…` is 404; `/app1/slow/…` waits for the gate; a component
/// `NNNb` asks for that many bytes; anything else answers its own path. 200s carry
/// `x-icn-site: site-test`.
async fn upstream() -> (Running, BaseUrl, Arc<Seen>) {
    let seen = Arc::new(Seen {
        requests: Mutex::new(Vec::new()),
        gate: watch::channel(false).0,
    });
    let state = seen.clone();
    let handler = move |request: Request<hyper::body::Incoming>| {
        let seen = state.clone();
        async move {
            let path = request.uri().path().to_string();
            let region = request
                .headers()
                .get("x-icn-region")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            seen.requests.lock().unwrap().push((path.clone(), region));
            if path.starts_with("/app1/missing") {
                return error(StatusCode::NOT_FOUND, "no such object upstream");
            }
            if path.starts_with("/app1/slow/") {
                let mut gate = seen.gate.subscribe();
                let _ = gate.wait_for(|open| *open).await;
            }
            let size = path
                .split('/')
                .find_map(|c| c.strip_suffix('b')?.parse::<usize>().ok());
            let body = match size {
                Some(n) => vec![b'x'; n],
                None => path.into_bytes(),
            };
            let mut response = Response::new(Body::bytes(body));
            response
                .headers_mut()
                .insert("x-icn-site", "site-test".parse().unwrap());
            response
        }
    };
    let options = ServeOptions {
        role: "test-upstream",
        access_log: false,
    };
    let running = spawn_http(any_port(), handler, options, None)
        .await
        .unwrap();
    let url = BaseUrl::parse(&format!("http://{}", running.http)).unwrap();
    (running, url, seen)
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// An upstream and a router on 127.0.0.1, the router's FIB `/app1` → the upstream unless
/// `adjust` says otherwise, and a client.
struct Lab {
    origin: Running,
    router: Running,
    seen: Arc<Seen>,
    client: reqwest::Client,
}

impl Lab {
    async fn start(cs_capacity: usize) -> Lab {
        Lab::start_with(cs_capacity, |_, _| {}).await
    }

    async fn start_with(
        cs_capacity: usize,
        adjust: impl FnOnce(&mut RouterConfig, &BaseUrl),
    ) -> Lab {
        let (origin, url, seen) = upstream().await;
        let mut config = RouterConfig {
            port: 0,
            cs_capacity,
            pit_lifetime: Duration::from_secs(4),
            upstream_timeout: Duration::from_secs(4),
            pit_entries: 100,
            pit_waiters: 100,
            routes: vec![route("/app1", &url, 0)],
        };
        adjust(&mut config, &url);
        let router = start(&config, any_port()).await.unwrap();
        Lab {
            origin,
            router,
            seen,
            client: crate::roles::fetch::client().build().unwrap(),
        }
    }

    async fn get(&self, path: &str) -> Answer {
        get_with(
            self.client
                .get(format!("http://{}{path}", self.router.http)),
        )
        .await
    }

    async fn stats(&self) -> serde_json::Value {
        let answer = self.get(STATS_PATH).await;
        assert_eq!(answer.status, StatusCode::OK);
        serde_json::from_slice(&answer.body).unwrap()
    }

    /// Polls the stats until `done` holds.
    async fn wait_for_stats(&self, done: impl Fn(&serde_json::Value) -> bool) {
        while !done(&self.stats().await) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn stop(self) {
        self.router.stop().await.unwrap();
        self.origin.stop().await.unwrap();
    }
}

fn route(prefix: &str, nexthop: &BaseUrl, cost: u64) -> Route {
    Route {
        prefix: Name::parse(prefix).unwrap(),
        nexthop: nexthop.clone(),
        cost,
    }
}

struct Answer {
    status: StatusCode,
    cache: Option<String>,
    site: Option<String>,
    router: Option<String>,
    body: Vec<u8>,
}

async fn get_with(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    };
    Answer {
        status: response.status(),
        cache: header("x-icn-cache"),
        site: header("x-icn-site"),
        router: header("x-icn-router"),
        body: response.bytes().await.unwrap().to_vec(),
    }
}

#[tokio::test]
async fn a_miss_is_fetched_once_then_hit() {
    bounded(async {
        let lab = Lab::start(1 << 20).await;
        let first = lab.get("/app1/obj42").await;
        assert_eq!(first.status, StatusCode::OK);
        assert_eq!(first.body, b"/app1/obj42");
        assert_eq!(first.cache.as_deref(), Some("miss"));
        assert_eq!(first.site.as_deref(), Some("site-test"));
        assert_eq!(
            first.router.as_deref(),
            Some(crate::roles::env::node_name().as_str())
        );
        let second = lab.get("/app1/obj42").await;
        assert_eq!(second.status, StatusCode::OK);
        assert_eq!(second.body, b"/app1/obj42");
        assert_eq!(second.cache.as_deref(), Some("hit"));
        assert_eq!(second.site, None, "the router served it, not a site");
        assert_eq!(lab.seen.count("/app1/obj42"), 1);
        let now = lab.stats().await;
        assert_eq!(now["requests"], 2);
        assert_eq!(now["cs"]["hits"], 1);
        assert_eq!(now["cs"]["misses"], 1);
        assert_eq!(now["cs"]["objects"], 1);
        assert_eq!(now["cs"]["bytes"], 11);
        assert_eq!(now["pit"]["forwarded"], 1);
        assert_eq!(now["pit"]["pending"], 0);
        assert_eq!(now["upstream"]["requests"], 1);
        lab.stop().await;
    })
    .await;
}

#[tokio::test]
async fn concurrent_requests_for_one_name_cost_one_upstream_request() {
    bounded(async {
        const CLIENTS: usize = 10;
        let lab = Arc::new(Lab::start(1 << 20).await);
        let requests: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let lab = lab.clone();
                tokio::spawn(async move { lab.get("/app1/slow/video").await })
            })
            .collect();
        // The upstream holds its answer until every request has reached the PIT.
        lab.wait_for_stats(|s| s["pit"]["aggregated"] == CLIENTS as u64 - 1)
            .await;
        lab.seen.gate.send_replace(true);
        let mut caches = Vec::new();
        for request in requests {
            let answer = request.await.unwrap();
            assert_eq!(answer.status, StatusCode::OK);
            assert_eq!(answer.body, b"/app1/slow/video");
            assert_eq!(answer.site.as_deref(), Some("site-test"));
            caches.push(answer.cache.unwrap());
        }
        caches.sort();
        let mut expected = vec!["aggregated".to_string(); CLIENTS - 1];
        expected.push("miss".into());
        assert_eq!(caches, expected);
        assert_eq!(lab.seen.count("/app1/slow/video"), 1);
        let now = lab.stats().await;
        assert_eq!(now["pit"]["forwarded"], 1);
        assert_eq!(now["pit"]["satisfied"], 1);
        assert_eq!(now["upstream"]["requests"], 1);
        let Ok(lab) = Arc::try_unwrap(lab) else {
            panic!("every request task has finished")
        };
        lab.stop().await;
    })
    .await;
}

/// With the PIT full, a new name (and a waiter past the bound on a pending one) gets 503 at
/// once and reaches no next hop; once the pending fetch is answered there is room again.
#[tokio::test]
async fn a_full_pit_answers_503_and_sends_nothing_upstream() {
    bounded(async {
        let lab = Arc::new(
            Lab::start_with(1 << 20, |config, _| {
                config.pit_entries = 1;
                config.pit_waiters = 1;
            })
            .await,
        );
        let pending = {
            let lab = lab.clone();
            tokio::spawn(async move { lab.get("/app1/slow/a").await })
        };
        lab.wait_for_stats(|s| s["pit"]["pending"] == 1).await;
        for path in ["/app1/other", "/app1/slow/a"] {
            let refused = lab.get(path).await;
            assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
        }
        assert_eq!(lab.seen.count("/app1/other"), 0);
        assert_eq!(lab.stats().await["pit"]["refused"], 2);
        lab.seen.gate.send_replace(true);
        assert_eq!(pending.await.unwrap().status, StatusCode::OK);
        assert_eq!(lab.get("/app1/other").await.status, StatusCode::OK);
        let Ok(lab) = Arc::try_unwrap(lab) else {
            panic!("every request task has finished")
        };
        lab.stop().await;
    })
    .await;
}

#[tokio::test]
async fn names_without_a_route_are_404_and_prefixes_match_whole_components() {
    bounded(async {
        let lab = Lab::start(1 << 20).await;
        let answer = lab.get("/app10/x").await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND);
        assert_eq!(
            String::from_utf8(answer.body).unwrap(),
            "no FIB route for /app10/x\n"
        );
        assert!(answer.router.is_some());
        let bad = lab.get("/app1//x").await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST);
        let text = String::from_utf8(bad.body).unwrap();
        assert!(text.contains("component 2 is empty"), "{text}");
        let post = lab
            .client
            .post(format!("http://{}/app1/x", lab.router.http));
        assert_eq!(get_with(post).await.status, StatusCode::METHOD_NOT_ALLOWED);
        assert!(lab.seen.requests.lock().unwrap().is_empty());
        lab.stop().await;
    })
    .await;
}

#[tokio::test]
async fn upstream_errors_are_passed_on_and_not_cached() {
    bounded(async {
        let lab = Lab::start(1 << 20).await;
        for _ in 0..2 {
            let answer = lab.get("/app1/missing").await;
            assert_eq!(answer.status, StatusCode::NOT_FOUND);
            assert_eq!(answer.cache.as_deref(), Some("miss"));
            assert_eq!(
                String::from_utf8(answer.body).unwrap(),
                "no such object upstream\n"
            );
        }
        assert_eq!(lab.seen.count("/app1/missing"), 2);
        let now = lab.stats().await;
        assert_eq!(now["cs"]["objects"], 0);
        assert_eq!(now["upstream"]["errors"], 0, "a 404 is an answer");
        lab.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_refused_next_hop_gives_way_to_the_next_and_none_is_502() {
    bounded(async {
        // A port nothing listens on: bound, then released.
        let dead = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            BaseUrl::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap()
        };
        let lab = Lab::start_with(1 << 20, |config, upstream| {
            config.routes = vec![
                route("/app1", &dead, 0),
                route("/app1", upstream, 5),
                route("/app2", &dead, 0),
            ];
        })
        .await;
        let request = lab
            .client
            .get(format!("http://{}/app1/x", lab.router.http))
            .header("x-icn-region", "region-3");
        let answer = get_with(request).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.site.as_deref(), Some("site-test"));
        assert_eq!(
            lab.seen.requests.lock().unwrap().as_slice(),
            [("/app1/x".to_string(), Some("region-3".to_string()))]
        );
        let failed = lab.get("/app2/y").await;
        assert_eq!(failed.status, StatusCode::BAD_GATEWAY);
        assert_eq!(failed.cache.as_deref(), Some("miss"));
        let text = String::from_utf8(failed.body).unwrap();
        assert!(text.contains(dead.as_str()), "{text}");
        let now = lab.stats().await;
        assert_eq!(now["upstream"]["requests"], 3);
        assert_eq!(now["upstream"]["errors"], 1);
        assert_eq!(now["cs"]["objects"], 1);
        lab.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_pending_interest_expires_and_late_data_is_still_cached() {
    bounded(async {
        let lab = Lab::start_with(1 << 20, |config, _| {
            config.pit_lifetime = Duration::from_millis(100);
        })
        .await;
        let answer = lab.get("/app1/slow/late").await;
        assert_eq!(answer.status, StatusCode::GATEWAY_TIMEOUT);
        let text = String::from_utf8(answer.body).unwrap();
        assert!(text.contains("no Data for /app1/slow/late"), "{text}");
        lab.seen.gate.send_replace(true);
        lab.wait_for_stats(|s| s["cs"]["objects"] == 1).await;
        let later = lab.get("/app1/slow/late").await;
        assert_eq!(later.status, StatusCode::OK);
        assert_eq!(later.cache.as_deref(), Some("hit"));
        let now = lab.stats().await;
        assert_eq!(now["pit"]["expired"], 1);
        assert_eq!(now["pit"]["satisfied"], 0);
        lab.stop().await;
    })
    .await;
}

#[tokio::test]
async fn the_least_recently_used_object_is_evicted() {
    bounded(async {
        let lab = Lab::start(2500).await;
        let cache_of = |path: &'static str| {
            let lab = &lab;
            async move { lab.get(path).await.cache.unwrap() }
        };
        assert_eq!(cache_of("/app1/a/1000b").await, "miss");
        assert_eq!(cache_of("/app1/b/1000b").await, "miss");
        assert_eq!(cache_of("/app1/a/1000b").await, "hit");
        // Room for two: b, the least recently used, makes way for c.
        assert_eq!(cache_of("/app1/c/1000b").await, "miss");
        let now = lab.stats().await;
        assert_eq!(now["cs"]["evictions"], 1);
        assert_eq!(now["cs"]["objects"], 2);
        assert_eq!(now["cs"]["bytes"], 2000);
        assert_eq!(cache_of("/app1/a/1000b").await, "hit");
        assert_eq!(cache_of("/app1/b/1000b").await, "miss");
        assert_eq!(lab.seen.count("/app1/b/1000b"), 2);
        // An object larger than the whole store is served but not kept.
        assert_eq!(cache_of("/app1/big/3000b").await, "miss");
        assert_eq!(cache_of("/app1/big/3000b").await, "miss");
        let now = lab.stats().await;
        assert_eq!(now["cs"]["too_large"], 2);
        assert_eq!(now["cs"]["capacity_bytes"], 2500);
        lab.stop().await;
    })
    .await;
}
