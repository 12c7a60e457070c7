//! The central cloud (Section III-B) with its four components: the ingestion processor (a
//! viewer's stream request goes to the FDN most local to it, by the latencies the viewer
//! measured), the metadata manager (which FDN caches which segments), the fog monitor
//! (heartbeats over the control plane; an FDN that misses `missed_limit` in a row is down and
//! its segments leave the metadata) and the video repository (every segment, over HTTP).
//!
//! HTTP: `GET /repo/VIDEO/INDEX` a segment; `GET /fdns` the FDNs up and how many it knows;
//! `GET /ingest?lat=fdn1:0.021,fdn2:0.08` `{"fdn": NAME}`; `GET /metadata` the metadata as
//! JSON. Control plane: [`CloudRequest`] from FDNs.

use super::config::CloudConfig;
use super::messages::{
    CloudRequest, CloudResponse, FdnEntry, FdnRequest, FdnResponse, Metadata, SegmentId,
};
use super::segment_payload;
use crate::control::{self, Callers, Client, Identity, PeerName};
use crate::fog::catalog::Catalog;
use crate::fog::monitor::{Change, Monitor};
use crate::roles::control::connect;
use crate::roles::http::semantics::{self as http, error};
use crate::roles::http::{spawn_http, Running};
use crate::roles::http::{Body, ServeOptions};
use hyper::{Request, Response, StatusCode};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

struct Cloud {
    catalog: Catalog,
    monitor: Mutex<Monitor>,
    caches: Mutex<Vec<Vec<SegmentId>>>,
}

impl Cloud {
    fn new(config: &CloudConfig) -> Cloud {
        Cloud {
            catalog: Catalog::generate(&config.catalog),
            monitor: Mutex::new(Monitor::new(&config.fdns, config.missed_limit)),
            caches: Mutex::new(vec![Vec::new(); config.fdns.len()]),
        }
    }

    fn metadata(&self) -> Metadata {
        let monitor = self.monitor.lock().unwrap_or_else(|p| p.into_inner());
        let caches = self.caches.lock().unwrap_or_else(|p| p.into_inner());
        Metadata {
            fdns: monitor
                .fdns
                .iter()
                .enumerate()
                .map(|(i, fdn)| FdnEntry {
                    index: i as u32,
                    name: fdn.name.clone(),
                    up: fdn.up,
                    rtt_mean_s: fdn.rtt.mean(),
                    rtt_sd_s: fdn.rtt.sd(),
                    cached: if fdn.up {
                        caches[i].clone()
                    } else {
                        Vec::new()
                    },
                })
                .collect(),
        }
    }

    /// The FDNs the monitor holds up.
    fn up_names(&self) -> Vec<String> {
        let monitor = self.monitor.lock().unwrap_or_else(|p| p.into_inner());
        monitor
            .fdns
            .iter()
            .filter(|f| f.up)
            .map(|f| f.name.clone())
            .collect()
    }

    /// The segments of a registration that the catalogue has, each once: what an FDN can make
    /// the metadata every FDN reads hold is bounded by the catalogue, not by what it sends.
    fn in_catalogue(&self, mut cached: Vec<SegmentId>) -> Vec<SegmentId> {
        cached.retain(|&(video, index)| {
            (self.catalog)
                .segment(video as usize, index as usize)
                .is_some()
        });
        cached.sort_unstable();
        cached.dedup();
        cached
    }

    /// Answers FDN `peer` (`serve` lets only the configured FDNs through): a registration is
    /// filed under the caller's own index, keeping what the catalogue has.
    fn handle_control(&self, peer: &PeerName, request: CloudRequest) -> CloudResponse {
        match request {
            CloudRequest::Register { index, cached } => {
                let place = {
                    let monitor = self.monitor.lock().unwrap_or_else(|p| p.into_inner());
                    monitor.fdns.iter().position(|f| f.name == peer.as_str())
                };
                let mut caches = self.caches.lock().unwrap_or_else(|p| p.into_inner());
                match place.map(|i| (i, caches.get_mut(i))) {
                    Some((i, Some(slot))) if i as u64 == u64::from(index) => {
                        *slot = self.in_catalogue(cached);
                        CloudResponse::Registered
                    }
                    Some((i, _)) => CloudResponse::Refused(format!(
                        "node {peer} is FDN {i} of this cloud (its place in the cloud's `fdns`, \
                         counted from 0), but its config says `index = {index}`"
                    )),
                    None => {
                        CloudResponse::Refused(format!("node {peer} is not an FDN of this cloud"))
                    }
                }
            }
            CloudRequest::Metadata => CloudResponse::Metadata(self.metadata()),
        }
    }

    fn handle_http(&self, request: &Request<hyper::body::Incoming>) -> Response<Body> {
        let path = request.uri().path();
        let query = request.uri().query().unwrap_or("");
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        match parts.as_slice() {
            ["repo", video, index] => match (video.parse(), index.parse()) {
                (Ok(v), Ok(i)) => match self.catalog.segment(v, i) {
                    Some(segment) => http::payload(segment_payload(v, i), segment.bytes),
                    None => error(StatusCode::NOT_FOUND, "no such segment"),
                },
                _ => error(StatusCode::NOT_FOUND, "expected /repo/VIDEO/INDEX"),
            },
            ["fdns"] => http::json(&serde_json::json!({
                "fdns": self.up_names(),
                "known": self.caches.lock().unwrap_or_else(|p| p.into_inner()).len(),
            })),
            ["ingest"] => match self.ingest(query) {
                Ok(fdn) => http::json(&serde_json::json!({ "fdn": fdn })),
                Err(e) => error(StatusCode::BAD_REQUEST, e),
            },
            ["metadata"] => {
                let metadata = self.metadata();
                http::json(&serde_json::to_value(&metadata).unwrap_or_default())
            }
            _ => error(StatusCode::NOT_FOUND, "unknown path"),
        }
    }

    /// The ingestion processor: of the FDNs up, the one with the lowest latency the viewer
    /// measured (`lat=NAME:SECONDS,...`).
    fn ingest(&self, query: &str) -> Result<String, String> {
        let list = http::query_value(query, "lat").ok_or("expected ?lat=FDN:SECONDS,...")?;
        closest_up(list, &self.up_names())
    }
}

/// Of the FDNs `up`, the one with the lowest latency in `list` (`NAME:SECONDS,...`, as the
/// viewer measured them).
fn closest_up(list: &str, up: &[String]) -> Result<String, String> {
    let mut best: Option<(String, f64)> = None;
    for item in list.split(',').filter(|s| !s.is_empty()) {
        let (name, seconds) = item
            .split_once(':')
            .ok_or_else(|| format!("`{item}` is not FDN:SECONDS"))?;
        let seconds: f64 = (seconds.parse().ok())
            .filter(|s: &f64| s.is_finite() && *s >= 0.0)
            .ok_or_else(|| format!("`{seconds}` is not a number of seconds ≥ 0"))?;
        if up.iter().any(|u| u == name) && best.as_ref().is_none_or(|(_, s)| seconds < *s) {
            best = Some((name.to_string(), seconds));
        }
    }
    best.map(|(name, _)| name)
        .ok_or_else(|| "no FDN that is up was measured".to_string())
}

/// The fog monitor, one task per FDN: a heartbeat every `heartbeat` over a kept connection,
/// each answer awaited up to `heartbeat_timeout`; an unanswered heartbeat, or a connection that
/// cannot be made, is one miss. An FDN that dies is thus marked down within about
/// `missed_limit × max(heartbeat, heartbeat_timeout)` (3 s by default).
async fn monitor_fdn(cloud: Arc<Cloud>, config: CloudConfig, identity: Arc<Identity>, i: usize) {
    let name = config.fdns[i].clone();
    let addr = format!("{name}:{}", config.control_port);
    let limit = config.heartbeat_timeout;
    let mut client: Option<Client> = None;
    let mut connected_once = false;
    let mut ticker = tokio::time::interval(config.heartbeat);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if client.is_none() {
            // A handshake takes a round trip more than a heartbeat: the first one, while the
            // FDN may still be starting, gets three answer timeouts; later ones one, so that a
            // dead FDN costs one timeout per miss. A failure counts as one miss.
            let wait = if connected_once { limit } else { 3 * limit };
            client = tokio::time::timeout(wait, connect(&addr, &name, &identity))
                .await
                .ok()
                .and_then(Result::ok);
            connected_once |= client.is_some();
        }
        let started = Instant::now();
        let answered = match client.as_ref() {
            Some(c) => {
                match tokio::time::timeout(limit, c.call::<_, FdnResponse>(&FdnRequest::Heartbeat))
                    .await
                {
                    Ok(Ok(FdnResponse::Alive)) => true,
                    Ok(Err(_)) => {
                        // The connection failed: a new one next time.
                        client = None;
                        false
                    }
                    Err(_) => false,
                }
            }
            None => false,
        };
        let mut monitor = cloud.monitor.lock().unwrap_or_else(|p| p.into_inner());
        let change = if answered {
            monitor.answered(i, started.elapsed().as_secs_f64())
        } else {
            monitor.missed(i)
        };
        let at = crate::wall_clock::unix_now_s();
        match change {
            Change::WentDown => tracing::warn!(
                "cloud: fog monitor: {name} is down ({} heartbeats missed; time_unix_s {at:.3}); its segments leave the metadata",
                monitor.fdns[i].missed
            ),
            Change::Joined => tracing::info!("cloud: fog monitor: {name} is up (time_unix_s {at:.3})"),
            Change::CameBack => {
                tracing::info!("cloud: fog monitor: {name} is up again (time_unix_s {at:.3})")
            }
            Change::None => {}
        }
    }
}

/// The metadata manager's control service, for the configured FDNs only.
async fn serve_control(
    cloud: Arc<Cloud>,
    config: &CloudConfig,
    identity: &Identity,
    bind: SocketAddr,
) -> Result<control::ServerHandle, String> {
    let callers = Callers::only("cloud's metadata manager", config.fdns.clone());
    control::serve(bind, identity, callers, move |peer, request| {
        let cloud = cloud.clone();
        async move { cloud.handle_control(&peer, request) }
    })
    .await
    .map_err(|e| e.to_string())
}

/// Starts the cloud: HTTP on `http`, the control service on `control_bind`, the fog monitor.
pub async fn start(
    config: CloudConfig,
    identity: Arc<Identity>,
    http: SocketAddr,
    control_bind: SocketAddr,
) -> Result<Running, String> {
    let cloud = Arc::new(Cloud::new(&config));
    let control = serve_control(cloud.clone(), &config, &identity, control_bind).await?;
    for i in 0..config.fdns.len() {
        tokio::spawn(monitor_fdn(
            cloud.clone(),
            config.clone(),
            identity.clone(),
            i,
        ));
    }
    let handler = move |request: Request<hyper::body::Incoming>| {
        let cloud = cloud.clone();
        async move { cloud.handle_http(&request) }
    };
    let options = ServeOptions {
        role: "cloud",
        access_log: false,
    };
    let running = spawn_http(http, handler, options, Some(control)).await?;
    tracing::info!(
        "cloud: {} videos; FDNs {}; heartbeat every {:?} (answer within {:?}), down after {} missed; HTTP on {}",
        config.catalog.videos,
        config.fdns.join(", "),
        config.heartbeat,
        config.heartbeat_timeout,
        config.missed_limit,
        running.http
    );
    Ok(running)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::issue_lab_certs;
    use crate::testing::TempDir;

    /// A registration is filed under the calling FDN's certificate name, whatever it holds: no
    /// FDN can report for another. A lab node that is no FDN (a viewer) is refused outright.
    #[tokio::test]
    async fn fdns_register_only_as_themselves() {
        let dir = TempDir::new("cloud-callers");
        issue_lab_certs(&dir.0, "callers", &["cloud", "fdn1", "fdn2", "viewers"]).unwrap();
        let identity = |node| Identity::load(&dir.0, node).unwrap();
        let table: toml::Table = r#"fdns = ["fdn1", "fdn2"]"#.parse().unwrap();
        let config = super::super::config::cloud(&table).unwrap();
        let cloud = Arc::new(Cloud::new(&config));
        let server = serve_control(
            cloud.clone(),
            &config,
            &identity("cloud"),
            "127.0.0.1:0".parse().unwrap(),
        )
        .await
        .unwrap();
        let call = |node: &'static str, request: CloudRequest| {
            let id = identity(node);
            let addr = server.local_addr();
            async move {
                let client = Client::connect(addr, "cloud", &id).await.unwrap();
                client.call::<_, CloudResponse>(&request).await
            }
        };
        let register = |index, cached| CloudRequest::Register { index, cached };
        let err = call("viewers", register(0, vec![(0, 0)]))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied, "{err}");
        assert!(
            err.to_string().contains("node viewers may not call"),
            "{err}"
        );
        let err = call("viewers", CloudRequest::Metadata).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied, "{err}");
        // Segments the catalogue lacks are dropped, and repeats kept once.
        let last_video = cloud.catalog.videos.len() as u32 - 1;
        let beyond = cloud.catalog.videos[0].segments.len() as u32;
        let sent = vec![(3, 4), (last_video + 1, 0), (0, beyond), (3, 4), (0, 0)];
        // An FDN registering under another's index is refused, and files nothing.
        match call("fdn2", register(0, sent.clone())).await.unwrap() {
            CloudResponse::Refused(why) => assert_eq!(
                why,
                "node fdn2 is FDN 1 of this cloud (its place in the cloud's `fdns`, counted \
                 from 0), but its config says `index = 0`"
            ),
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(*cloud.caches.lock().unwrap(), vec![vec![], vec![]]);
        assert!(matches!(
            call("fdn2", register(1, sent)).await.unwrap(),
            CloudResponse::Registered
        ));
        let caches = cloud.caches.lock().unwrap().clone();
        assert_eq!(
            caches,
            vec![vec![], vec![(0, 0), (3, 4)]],
            "filed under fdn2 only"
        );
        assert!(matches!(
            call("fdn1", CloudRequest::Metadata).await.unwrap(),
            CloudResponse::Metadata(_)
        ));
    }

    /// The closest FDN that is up is chosen; a latency that is no number of seconds (NaN, which
    /// no comparison would ever replace, or one below zero) is refused by name.
    #[test]
    fn ingestion_picks_the_closest_fdn_up_and_refuses_bad_latencies() {
        let up = ["fdn1".to_string(), "fdn2".to_string()];
        assert_eq!(
            closest_up("fdn3:0.001,fdn2:0.02,fdn1:0.01", &up).unwrap(),
            "fdn1"
        );
        for bad in ["NaN", "-0.5", "inf", "x"] {
            let e = closest_up(&format!("fdn1:{bad},fdn2:0.02"), &up).unwrap_err();
            assert_eq!(e, format!("`{bad}` is not a number of seconds ≥ 0"));
        }
        assert!(closest_up("fdn3:0.001", &up).is_err());
    }
}
