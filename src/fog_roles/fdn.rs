//! A fog delivery network node (Section III-C) with its six components: the request processor
//! (stream requests open sessions), the segment cost estimator (`fog::estimator::decide` under
//! the configured method), the neighbouring-FDN metadata (read from the cloud's metadata
//! manager every `metadata_interval`), the on-demand processing engine (`workers` workers), the
//! cached segments (pre-processed at `caching`), and the merger and output window (a viewer
//! takes segments in order; each is released once it is here).
//!
//! On-demand processing is a timed wait of a duration drawn from the segment's
//! Normal(μ, σ), not a real transcode: the paper's workers are GPU VMs, three per FDN and three
//! FDNs, which a 2-core machine cannot be; a CPU-bound transform would measure our cores and
//! slow every other process of the lab, while the wait reproduces the processing-time
//! distribution the estimator reasons about exactly.
//!
//! The estimator's network distributions are learned: N^τ of the cloud and of each neighbour
//! from `probes` transfers at start and from every segment fetched since (running mean and
//! variance, `fog::stats::PathModel`); the viewer's from the transfers the viewer measured and
//! sends with its request.
//!
//! HTTP: `GET /open/VIDEO?fb=MEAN,SD&pb=MEAN,SD` opens a session (JSON `{session, segments}`);
//! `GET /segment/SESSION/INDEX` a segment once here (header `x-source`); `GET /cache/VIDEO/INDEX`
//! a pre-processed segment for a neighbour (404 if not held); `GET /probe?bytes=N`.

use super::cloud::connect;
use super::config::FdnConfig;
use super::messages::{CloudRequest, CloudResponse, FdnRequest, FdnResponse, Metadata};
use super::segment_payload;
use crate::cdn_roles::http::{self, error};
use crate::cdn_roles::run::{spawn_http, Running};
use crate::cdn_roles::{Body, ServeOptions};
use crate::control::{self, Callers, Client, Identity};
use crate::fog::catalog::{cdn_caches_video, fdn_caches, Catalog};
use crate::fog::estimator::{decide, Backlog, Method, SegmentOptions, Source};
use crate::fog::normal::Normal;
use crate::fog::stats::{PathModel, RunningStats};
use hyper::{Request, Response, StatusCode};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::Distribution;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// Where a segment of a session stands.
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    Pending,
    Ready,
    Failed(String),
}

struct Segment {
    source: Mutex<String>,
    state: watch::Sender<Slot>,
}

struct Session {
    video: usize,
    segments: Vec<Segment>,
}

impl Session {
    fn set_source(&self, index: usize, source: &str) {
        *self.segments[index]
            .source
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = source.to_string();
    }

    fn finish(&self, index: usize, slot: Slot) {
        self.segments[index].state.send_replace(slot);
    }
}

struct Task {
    id: u64,
    session: Arc<Session>,
    index: usize,
    time: Normal,
}

struct State {
    metadata: Metadata,
    paths: HashMap<String, PathModel>,
    backlog: Backlog,
    sessions: HashMap<u64, Arc<Session>>,
    next_id: u64,
}

struct Fdn {
    config: FdnConfig,
    catalog: Catalog,
    http: reqwest::Client,
    state: Mutex<State>,
    started: Instant,
    tasks: mpsc::UnboundedSender<Task>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn source_name(source: Source, metadata: &Metadata) -> String {
    match source {
        Source::LocalCache => "local-cache".into(),
        Source::Process => "process".into(),
        Source::Cloud => "cloud".into(),
        Source::Neighbor(k) => metadata
            .fdns
            .iter()
            .find(|f| f.index as usize == k)
            .map(|f| format!("neighbor:{}", f.name))
            .unwrap_or_else(|| format!("neighbor:{k}")),
    }
}

impl Fdn {
    /// Does this node hold segment (video, index) pre-processed, under its method?
    fn holds(&self, video: usize, index: usize) -> bool {
        match self.config.method {
            Method::CentralCloud => false,
            Method::Cdn => {
                cdn_caches_video(
                    &self.catalog,
                    self.config.index,
                    self.config.cdn_share,
                    video,
                ) && index < self.catalog.videos[video].segments.len()
            }
            _ => fdn_caches(
                &self.catalog,
                self.config.index,
                self.config.caching,
                video,
                index,
            ),
        }
    }

    fn cached_list(&self) -> Vec<(u32, u32)> {
        let mut list = Vec::new();
        for (v, video) in self.catalog.videos.iter().enumerate() {
            for i in 0..video.segments.len() {
                if self.holds(v, i) {
                    list.push((v as u32, i as u32));
                }
            }
        }
        list
    }

    fn now_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The request processor and segment cost estimator: decides every segment of the video
    /// and starts getting each.
    fn open(self: &Arc<Self>, video: usize, viewer: PathModel) -> Result<(u64, usize), String> {
        let n = self
            .catalog
            .videos
            .get(video)
            .ok_or_else(|| format!("no video {video}"))?
            .segments
            .len();
        let session = Arc::new(Session {
            video,
            segments: (0..n)
                .map(|_| Segment {
                    source: Mutex::new(String::new()),
                    state: watch::channel(Slot::Pending).0,
                })
                .collect(),
        });
        let mut state = lock(&self.state);
        let id = state.next_id;
        state.next_id += 1;
        state.sessions.insert(id, session.clone());
        let spec = &self.catalog.spec;
        for index in 0..n {
            let segment = self.catalog.videos[video].segments[index];
            let time = Normal::new(segment.processing_mean_s, segment.processing_sd_s);
            let neighbors: Vec<(usize, Normal)> = state
                .metadata
                .fdns
                .iter()
                .filter(|f| {
                    f.up && f.index as usize != self.config.index
                        && f.cached
                            .binary_search(&(video as u32, index as u32))
                            .is_ok()
                })
                .filter_map(|f| {
                    let path = state.paths.get(&f.name).filter(|p| p.known())?;
                    Some((f.index as usize, path.transfer(segment.bytes)))
                })
                .collect();
            let cloud = state
                .paths
                .get("cloud")
                .map(|p| p.transfer(segment.bytes))
                .unwrap_or(Normal::point(f64::INFINITY));
            let options = SegmentOptions {
                cached_locally: self.holds(video, index),
                neighbors: &neighbors,
                cloud,
                processing: state.backlog.processing(time, self.now_s()),
                viewer: viewer.transfer(segment.bytes),
                deadline_s: self.config.startup.as_secs_f64()
                    + index as f64 * spec.segment_duration_s,
            };
            let decision = decide(self.config.method, &options);
            session.set_source(index, &source_name(decision.source, &state.metadata));
            match decision.source {
                Source::LocalCache => session.finish(index, Slot::Ready),
                Source::Process => {
                    state.backlog.enqueue(time);
                    let task_id = state.next_id;
                    state.next_id += 1;
                    let _ = self.tasks.send(Task {
                        id: task_id,
                        session: session.clone(),
                        index,
                        time,
                    });
                }
                Source::Cloud => {
                    tokio::spawn(self.clone().fetch(session.clone(), index, None));
                }
                Source::Neighbor(k) => {
                    let name = state
                        .metadata
                        .fdns
                        .iter()
                        .find(|f| f.index as usize == k)
                        .map(|f| f.name.clone());
                    tokio::spawn(self.clone().fetch(session.clone(), index, name));
                }
            }
        }
        Ok((id, n))
    }

    /// Fetches a segment from a neighbour (or the cloud), learning the path from the transfer;
    /// a neighbour that fails gives way to the cloud.
    async fn fetch(self: Arc<Self>, session: Arc<Session>, index: usize, neighbor: Option<String>) {
        let (video, bytes) = (
            session.video,
            self.catalog.videos[session.video].segments[index].bytes,
        );
        if let Some(name) = neighbor {
            let url = format!("http://{name}/cache/{video}/{index}");
            match self.transfer(&url, &name, bytes).await {
                Ok(()) => return session.finish(index, Slot::Ready),
                Err(e) => {
                    eprintln!(
                        "fdn: {name} failed segment {video}/{index} ({e}); from the cloud instead"
                    );
                    session.set_source(index, &format!("cloud-after:{name}"));
                }
            }
        }
        let url = format!("http://{}/repo/{video}/{index}", self.config.cloud);
        let deadline = Instant::now() + self.config.fetch_timeout;
        loop {
            match self.transfer(&url, "cloud", bytes).await {
                Ok(()) => return session.finish(index, Slot::Ready),
                Err(e) if Instant::now() > deadline => {
                    return session.finish(index, Slot::Failed(format!("from the cloud: {e}")))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// One timed transfer of `url` (expected `bytes` long) into `peer`'s path model.
    async fn transfer(&self, url: &str, peer: &str, bytes: u64) -> Result<(), String> {
        let start = Instant::now();
        let response = self
            .http
            .get(url)
            .timeout(self.config.fetch_timeout)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("status {}", response.status()));
        }
        let first_byte = start.elapsed().as_secs_f64();
        let body = response.bytes().await.map_err(|e| e.to_string())?;
        if body.len() as u64 != bytes {
            return Err(format!("{} bytes, not {bytes}", body.len()));
        }
        let total = start.elapsed().as_secs_f64();
        lock(&self.state)
            .paths
            .entry(peer.to_string())
            .or_default()
            .observe(bytes, first_byte, total);
        Ok(())
    }

    fn handle_http(self: &Arc<Self>, request: &Request<hyper::body::Incoming>) -> HttpAnswer {
        let path = request.uri().path();
        let query = request.uri().query().unwrap_or("");
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        match parts.as_slice() {
            ["open", video] => {
                let Ok(video) = video.parse() else {
                    return HttpAnswer::Now(Box::new(error(
                        StatusCode::NOT_FOUND,
                        "expected /open/VIDEO",
                    )));
                };
                let viewer = match viewer_path(query) {
                    Ok(path) => path,
                    Err(e) => return HttpAnswer::Now(Box::new(error(StatusCode::BAD_REQUEST, e))),
                };
                match self.open(video, viewer) {
                    Ok((session, segments)) => {
                        HttpAnswer::Now(Box::new(http::json(&serde_json::json!({
                            "session": session,
                            "segments": segments,
                            "method": self.config.method.name(),
                        }))))
                    }
                    Err(e) => HttpAnswer::Now(Box::new(error(StatusCode::NOT_FOUND, e))),
                }
            }
            ["segment", session, index] => {
                let found = session
                    .parse::<u64>()
                    .ok()
                    .and_then(|s| lock(&self.state).sessions.get(&s).cloned().map(|x| (s, x)));
                match (found, index.parse::<usize>()) {
                    (Some((id, session)), Ok(index)) if index < session.segments.len() => {
                        HttpAnswer::Wait(id, session, index)
                    }
                    _ => HttpAnswer::Now(Box::new(error(
                        StatusCode::NOT_FOUND,
                        "no such session segment",
                    ))),
                }
            }
            ["cache", video, index] => match (video.parse(), index.parse()) {
                (Ok(v), Ok(i)) if self.holds(v, i) => HttpAnswer::Now(Box::new(http::payload(
                    segment_payload(v, i),
                    self.catalog.videos[v].segments[i].bytes,
                ))),
                _ => HttpAnswer::Now(Box::new(error(StatusCode::NOT_FOUND, "not cached here"))),
            },
            ["probe"] => {
                let bytes = query
                    .strip_prefix("bytes=")
                    .and_then(|b| b.parse().ok())
                    .unwrap_or(250_000u64)
                    .min(10_000_000);
                HttpAnswer::Now(Box::new(http::payload(
                    segment_payload(u64::MAX as usize, 0),
                    bytes,
                )))
            }
            _ => HttpAnswer::Now(Box::new(error(StatusCode::NOT_FOUND, "unknown path"))),
        }
    }

    /// The output window: the segment once it is here, with where it came from.
    async fn deliver(
        self: Arc<Self>,
        id: u64,
        session: Arc<Session>,
        index: usize,
    ) -> Response<Body> {
        let mut state = session.segments[index].state.subscribe();
        let slot = match state.wait_for(|s| *s != Slot::Pending).await {
            Ok(slot) => slot.clone(),
            Err(_) => Slot::Failed("the FDN is stopping".into()),
        };
        if index + 1 == session.segments.len() {
            lock(&self.state).sessions.remove(&id);
        }
        let source = lock(&session.segments[index].source).clone();
        let mut response = match slot {
            Slot::Ready => http::payload(
                segment_payload(session.video, index),
                self.catalog.videos[session.video].segments[index].bytes,
            ),
            Slot::Failed(e) => error(StatusCode::BAD_GATEWAY, e),
            Slot::Pending => error(StatusCode::BAD_GATEWAY, "not here"),
        };
        if let Ok(value) = hyper::header::HeaderValue::from_str(&source) {
            response.headers_mut().insert("x-source", value);
        }
        response
    }
}

enum HttpAnswer {
    Now(Box<Response<Body>>),
    Wait(u64, Arc<Session>, usize),
}

/// The viewer's path from `fb=MEAN,SD&pb=MEAN,SD` (first byte, seconds per byte).
fn viewer_path(query: &str) -> Result<PathModel, String> {
    let pair = |key: &str| -> Result<(f64, f64), String> {
        let value = query
            .split('&')
            .find_map(|kv| kv.strip_prefix(key))
            .ok_or_else(|| format!("expected {key}MEAN,SD in the query"))?;
        let (mean, sd) = value
            .split_once(',')
            .ok_or_else(|| format!("{key}{value}: expected MEAN,SD"))?;
        match (mean.parse::<f64>(), sd.parse::<f64>()) {
            (Ok(m), Ok(s)) if m.is_finite() && s.is_finite() && m >= 0.0 && s >= 0.0 => Ok((m, s)),
            _ => Err(format!("{key}{value}: expected two non-negative numbers")),
        }
    };
    let (fb, fb_sd) = pair("fb=")?;
    let (pb, pb_sd) = pair("pb=")?;
    Ok(PathModel {
        first_byte: RunningStats::from_summary(2, fb, fb_sd),
        per_byte: RunningStats::from_summary(2, pb, pb_sd),
    })
}

/// One worker of the on-demand processing engine.
async fn worker(
    fdn: Arc<Fdn>,
    tasks: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Task>>>,
    rng: Arc<Mutex<StdRng>>,
) {
    loop {
        let Some(task) = tasks.lock().await.recv().await else {
            return;
        };
        lock(&fdn.state).backlog.start(task.id, fdn.now_s());
        let seconds = match rand_distr::Normal::new(task.time.mean, task.time.sd) {
            Ok(normal) => normal.sample(&mut *lock(&rng)).max(0.0),
            Err(_) => task.time.mean.max(0.0),
        };
        tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        lock(&fdn.state).backlog.finish(task.id);
        task.session.finish(task.index, Slot::Ready);
    }
}

/// Registers the cache with the cloud, then reads the metadata every period; keeps the last
/// metadata when the cloud does not answer, and probes each neighbour when it first appears.
async fn metadata_loop(fdn: Arc<Fdn>, identity: Arc<Identity>) {
    let cloud_addr = format!("{}:{}", fdn.config.cloud, fdn.config.control_port);
    let mut client: Option<Client> = None;
    let mut registered = false;
    let mut probed: Vec<String> = Vec::new();
    let mut ticker = tokio::time::interval(fdn.config.metadata_interval);
    loop {
        ticker.tick().await;
        if client.is_none() {
            client = connect(&cloud_addr, &fdn.config.cloud, &identity)
                .await
                .ok();
        }
        let Some(c) = client.as_ref() else { continue };
        if !registered {
            let request = CloudRequest::Register {
                cached: fdn.cached_list(),
            };
            match c.call::<_, CloudResponse>(&request).await {
                Ok(CloudResponse::Registered) => registered = true,
                Ok(other) => eprintln!("fdn: the cloud refused the registration: {other:?}"),
                Err(e) => {
                    // A refusal (this node is not among the cloud's FDNs) is a misconfiguration
                    // worth a line in the log each time; a lost connection is not.
                    if e.kind() == std::io::ErrorKind::PermissionDenied {
                        tracing::warn!("fdn: registration with the cloud: {e}");
                    }
                    client = None;
                    continue;
                }
            }
        }
        match c.call::<_, CloudResponse>(&CloudRequest::Metadata).await {
            Ok(CloudResponse::Metadata(mut metadata)) => {
                for f in &mut metadata.fdns {
                    f.cached.sort_unstable();
                }
                let new: Vec<String> = metadata
                    .fdns
                    .iter()
                    .filter(|f| {
                        f.up && f.index as usize != fdn.config.index && !probed.contains(&f.name)
                    })
                    .map(|f| f.name.clone())
                    .collect();
                lock(&fdn.state).metadata = metadata;
                for name in new {
                    let url = format!("http://{name}/probe?bytes=250000");
                    for _ in 0..fdn.config.probes {
                        let _ = fdn.transfer(&url, &name, 250_000).await;
                    }
                    probed.push(name);
                }
            }
            Ok(_) => {}
            Err(_) => client = None,
        }
    }
}

/// Starts an FDN: probes the cloud, serves heartbeats on `control_bind` and HTTP on `http`.
pub async fn start(
    config: FdnConfig,
    identity: Arc<Identity>,
    http: SocketAddr,
    control_bind: SocketAddr,
) -> Result<Running, String> {
    let (tasks, receiver) = mpsc::unbounded_channel();
    let fdn = Arc::new(Fdn {
        catalog: Catalog::generate(&config.catalog),
        http: reqwest::Client::builder()
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?,
        state: Mutex::new(State {
            metadata: Metadata::default(),
            paths: HashMap::new(),
            backlog: Backlog::new(config.workers),
            sessions: HashMap::new(),
            next_id: 0,
        }),
        started: Instant::now(),
        tasks,
        config,
    });
    // The cloud's path is known before the first request: the cloud is always a candidate.
    let probe = format!("http://{}/repo/0/0", fdn.config.cloud);
    let bytes = fdn.catalog.videos[0].segments[0].bytes;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut measured = 0;
    while measured < fdn.config.probes.max(1) {
        match fdn.transfer(&probe, "cloud", bytes).await {
            Ok(()) => measured += 1,
            Err(e) if Instant::now() > deadline => {
                return Err(format!(
                    "the cloud's repository does not answer ({probe}): {e}"
                ))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
    let rng = Arc::new(Mutex::new(StdRng::seed_from_u64(
        fdn.config.seed ^ (fdn.config.index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    )));
    for _ in 0..fdn.config.workers {
        tokio::spawn(worker(fdn.clone(), receiver.clone(), rng.clone()));
    }
    // Only the cloud's fog monitor sends heartbeats.
    let control = control::serve(
        control_bind,
        &identity,
        Callers::only("FDN's heartbeat service", [fdn.config.cloud.clone()]),
        |_peer, FdnRequest::Heartbeat| async { FdnResponse::Alive },
    )
    .await
    .map_err(|e| e.to_string())?;
    tokio::spawn(metadata_loop(fdn.clone(), identity));
    let served = fdn.clone();
    let handler = move |request: Request<hyper::body::Incoming>| {
        let fdn = served.clone();
        async move {
            match fdn.handle_http(&request) {
                HttpAnswer::Now(response) => *response,
                HttpAnswer::Wait(id, session, index) => {
                    fdn.clone().deliver(id, session, index).await
                }
            }
        }
    };
    let options = ServeOptions {
        role: "fdn",
        access_log: false,
    };
    let running = spawn_http(http, handler, options, Some(control)).await?;
    eprintln!(
        "fdn: index {} method {} caching {:.0}% workers {}; {} segments held; HTTP on {}",
        fdn.config.index,
        fdn.config.method.name(),
        fdn.config.caching * 100.0,
        fdn.config.workers,
        fdn.cached_list().len(),
        running.http
    );
    Ok(running)
}
