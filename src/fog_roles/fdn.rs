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
//! Sessions are bounded (`fog::sessions`): at most `max_sessions` open (503 past it), and one
//! no segment has been asked of for `session_idle_timeout` is dropped with its pending fetches
//! and processing, so requests that open sessions and go away cost the FDN and the cloud little.
//! A session is named by a token only its viewer was given (its number and an HMAC of it under a
//! key the OS drew for this FDN, `roles::tokens`), so no one else can read it, nor close it by reading its last
//! segment. A dropped session's segments not yet here fail at once (502), so no read of them
//! waits for work that was cancelled.
//!
//! HTTP: `GET /open/VIDEO?fb=MEAN,SD&pb=MEAN,SD` opens a session (JSON `{session, segments}`,
//! the session a token); `GET /segment/SESSION/INDEX` a segment once here (header `x-source`); `GET /cache/VIDEO/INDEX`
//! a pre-processed segment for a neighbour (404 if not held); `GET /probe?bytes=N`.

use super::config::FdnConfig;
use super::messages::{CloudRequest, CloudResponse, FdnRequest, FdnResponse, Metadata};
use super::segment_payload;
use crate::control::{self, Callers, Client, Identity};
use crate::fog::catalog::{cdn_caches_video, Catalog, Holdings};
use crate::fog::estimator::{decide, Backlog, Method, SegmentOptions, Source};
use crate::fog::inputs::{cloud_transfer, neighbor_transfers, time_to_deadline_s, Neighbor};
use crate::fog::normal::Normal;
use crate::fog::sessions::{Full, Sessions};
use crate::fog::stats::{PathModel, RunningStats};
use crate::roles::control::connect;
use crate::roles::http::semantics::{self as http, error};
use crate::roles::http::{spawn_http, Running};
use crate::roles::http::{Body, ServeOptions};
use crate::roles::tokens::TokenKey;
use crate::wall_clock::unix_now_s;
use hyper::{Request, Response, StatusCode};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::Distribution;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;

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
    /// The deadline the estimator decided against, seconds since the Unix epoch.
    deadline_unix_s: f64,
}

struct Session {
    video: usize,
    segments: Vec<Segment>,
    /// The session's fetches still running, aborted when it is dropped.
    fetches: Mutex<Vec<AbortHandle>>,
    /// Set once dropped: its processing tasks still queued are skipped.
    cancelled: AtomicBool,
}

impl Session {
    /// Keeps `fetch` to abort with the session, or aborts it now if the session was already
    /// dropped (it can expire while its fetches are still being started).
    fn track(&self, fetch: AbortHandle) {
        let mut fetches = lock(&self.fetches);
        // `cancel` sets the flag before it takes the list, so a fetch is either in the list
        // it drains or sees the flag here.
        if self.cancelled.load(Ordering::SeqCst) {
            fetch.abort();
        } else {
            fetches.push(fetch);
        }
    }

    /// Stops the work still pending for a session nobody will read any more, and fails its
    /// segments not yet here: a read still waiting on one gets its answer now.
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        for fetch in lock(&self.fetches).drain(..) {
            fetch.abort();
        }
        for segment in &self.segments {
            segment.state.send_if_modified(|slot| {
                let pending = *slot == Slot::Pending;
                if pending {
                    *slot = Slot::Failed("the session was closed".into());
                }
                pending
            });
        }
    }

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
    /// The next processing task's id.
    next_id: u64,
}

struct Fdn {
    config: FdnConfig,
    catalog: Catalog,
    /// What the FDN and F-CDN methods hold pre-processed.
    holdings: Holdings,
    http: reqwest::Client,
    state: Mutex<State>,
    sessions: Mutex<Sessions<Arc<Session>>>,
    /// The key of the session tokens (`Fdn::token`).
    session_keys: TokenKey,
    started: Instant,
    tasks: mpsc::UnboundedSender<Task>,
}

/// What a session token is for, in its tag.
const SESSION_TOKEN: &str = "fdn-session";

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
            _ => self.holdings.contains(video, index),
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

    /// The token that names session `id` to its viewer, which nobody without this FDN's key
    /// can make.
    fn token(&self, id: u64) -> String {
        self.session_keys.token(SESSION_TOKEN, id)
    }

    /// The session id a token names, if this FDN gave it.
    fn session_of(&self, token: &str) -> Option<u64> {
        self.session_keys.id_of(SESSION_TOKEN, token)
    }

    /// The request processor and segment cost estimator: decides every segment of the video
    /// against its deadline (the stream's arrival and start-up delay, as the viewer sent them)
    /// and starts getting each. Refused: no such video (404), or `max_sessions` open (503).
    fn open(
        self: &Arc<Self>,
        video: usize,
        viewer: PathModel,
        stream: StreamTimes,
    ) -> Result<(String, usize), (StatusCode, String)> {
        let n = self
            .catalog
            .videos
            .get(video)
            .ok_or_else(|| (StatusCode::NOT_FOUND, format!("no video {video}")))?
            .segments
            .len();
        let duration_s = self.catalog.spec.segment_duration_s;
        let now_unix_s = unix_now_s();
        let left = |index| {
            time_to_deadline_s(
                stream.arrival_unix_s,
                now_unix_s,
                stream.startup_s,
                index,
                duration_s,
            )
        };
        let session = Arc::new(Session {
            video,
            segments: (0..n)
                .map(|index| Segment {
                    source: Mutex::new(String::new()),
                    state: watch::channel(Slot::Pending).0,
                    deadline_unix_s: now_unix_s + left(index),
                })
                .collect(),
            fetches: Mutex::new(Vec::new()),
            cancelled: AtomicBool::new(false),
        });
        let (opened, expired) = lock(&self.sessions).open(session.clone(), Instant::now());
        expired.iter().for_each(|s| s.cancel());
        let id = opened.map_err(|Full| {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "this FDN has {} sessions open, its max_sessions; try again later",
                    self.config.max_sessions
                ),
            )
        })?;
        let mut state = lock(&self.state);
        for index in 0..n {
            let segment = self.catalog.videos[video].segments[index];
            let time = Normal::new(segment.processing_mean_s, segment.processing_sd_s);
            let listed = state.metadata.fdns.iter().map(|f| Neighbor {
                index: f.index as usize,
                up: f.up,
                cached: &f.cached,
                path: state.paths.get(&f.name),
            });
            let segment_id = (video as u32, index as u32);
            let neighbors =
                neighbor_transfers(listed, self.config.index, segment_id, segment.bytes);
            let options = SegmentOptions {
                cached_locally: self.holds(video, index),
                neighbors: &neighbors,
                cloud: cloud_transfer(state.paths.get("cloud"), segment.bytes),
                processing: state.backlog.processing(time, self.now_s()),
                viewer: viewer.transfer(segment.bytes),
                deadline_s: left(index),
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
                    let fetch = tokio::spawn(self.clone().fetch(session.clone(), index, None));
                    session.track(fetch.abort_handle());
                }
                Source::Neighbor(k) => {
                    let name = state
                        .metadata
                        .fdns
                        .iter()
                        .find(|f| f.index as usize == k)
                        .map(|f| f.name.clone());
                    let fetch = tokio::spawn(self.clone().fetch(session.clone(), index, name));
                    session.track(fetch.abort_handle());
                }
            }
        }
        Ok((self.token(id), n))
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
                    tracing::warn!(
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
        crate::roles::fetch::exact_body(response, bytes).await?;
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
                let parsed = viewer_path(query).and_then(|path| Ok((path, stream_times(query)?)));
                let (viewer, stream) = match parsed {
                    Ok(parsed) => parsed,
                    Err(e) => return HttpAnswer::Now(Box::new(error(StatusCode::BAD_REQUEST, e))),
                };
                match self.open(video, viewer, stream) {
                    Ok((session, segments)) => {
                        HttpAnswer::Now(Box::new(http::json(&serde_json::json!({
                            "session": session,
                            "segments": segments,
                            "method": self.config.method.name(),
                        }))))
                    }
                    Err((status, e)) => HttpAnswer::Now(Box::new(error(status, e))),
                }
            }
            ["segment", session, index] => {
                let found = self.session_of(session).and_then(|id| {
                    let session = lock(&self.sessions).begin_read(id, Instant::now())?;
                    Some(Reading {
                        fdn: self.clone(),
                        id,
                        session,
                    })
                });
                match (found, index.parse::<usize>()) {
                    (Some(reading), Ok(index)) if index < reading.session.segments.len() => {
                        HttpAnswer::Wait(reading, index)
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
                let bytes = http::query_value(query, "bytes")
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
    async fn deliver(&self, reading: Reading, index: usize) -> Response<Body> {
        let session = &reading.session;
        let mut state = session.segments[index].state.subscribe();
        let slot = match state.wait_for(|s| *s != Slot::Pending).await {
            Ok(slot) => slot.clone(),
            Err(_) => Slot::Failed("the FDN is stopping".into()),
        };
        if index + 1 == session.segments.len() {
            if let Some(done) = lock(&self.sessions).close(reading.id) {
                done.cancel();
            }
        }
        let segment = &session.segments[index];
        let source = lock(&segment.source).clone();
        let mut response = match slot {
            Slot::Ready => http::payload(
                segment_payload(session.video, index),
                self.catalog.videos[session.video].segments[index].bytes,
            ),
            Slot::Failed(e) => error(StatusCode::BAD_GATEWAY, e),
            Slot::Pending => error(StatusCode::BAD_GATEWAY, "not here"),
        };
        let headers = response.headers_mut();
        if let Ok(value) = hyper::header::HeaderValue::from_str(&source) {
            headers.insert("x-source", value);
        }
        if let Ok(value) = format!("{:.6}", segment.deadline_unix_s).parse() {
            headers.insert("x-deadline", value);
        }
        response
    }
}

enum HttpAnswer {
    Now(Box<Response<Body>>),
    Wait(Reading, usize),
}

/// A read of a session in progress: the session does not expire while one lasts, and its idle
/// time starts when the last one ends (dropped, also when the viewer goes away mid-wait).
struct Reading {
    fdn: Arc<Fdn>,
    id: u64,
    session: Arc<Session>,
}

impl Drop for Reading {
    fn drop(&mut self) {
        lock(&self.fdn.sessions).end_read(self.id, Instant::now());
    }
}

/// Drops the sessions idle past `session_idle_timeout` and cancels their work, checking a few
/// times per timeout, so the bound holds even when no viewer opens another session.
async fn expire_sessions(fdn: Arc<Fdn>) {
    // Not zero, which `interval` refuses, however short the configured timeout.
    let period = (fdn.config.session_idle_timeout / 4).max(Duration::from_millis(10));
    let mut ticker = tokio::time::interval(period);
    loop {
        ticker.tick().await;
        let expired = lock(&fdn.sessions).expire(Instant::now());
        if !expired.is_empty() {
            tracing::warn!("fdn: dropped {} idle sessions", expired.len());
        }
        expired.iter().for_each(|s| s.cancel());
    }
}

/// The viewer's path from `fb=MEAN,SD&pb=MEAN,SD` (first byte, seconds per byte).
fn viewer_path(query: &str) -> Result<PathModel, String> {
    let pair = |key: &str| -> Result<(f64, f64), String> {
        let value = http::query_value(query, key)
            .ok_or_else(|| format!("expected {key}=MEAN,SD in the query"))?;
        let (mean, sd) = value
            .split_once(',')
            .ok_or_else(|| format!("{key}={value}: expected MEAN,SD"))?;
        match (mean.parse::<f64>(), sd.parse::<f64>()) {
            (Ok(m), Ok(s)) if m.is_finite() && s.is_finite() && m >= 0.0 && s >= 0.0 => Ok((m, s)),
            _ => Err(format!("{key}={value}: expected two non-negative numbers")),
        }
    };
    let (fb, fb_sd) = pair("fb")?;
    let (pb, pb_sd) = pair("pb")?;
    Ok(PathModel {
        first_byte: RunningStats::from_summary(2, fb, fb_sd),
        per_byte: RunningStats::from_summary(2, pb, pb_sd),
    })
}

/// When a viewer's stream is due: its request's arrival and the start-up delay before its first
/// segment, from the query of `/open`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct StreamTimes {
    /// Seconds since the Unix epoch, on the viewer's clock.
    arrival_unix_s: f64,
    startup_s: f64,
}

/// The longest start-up delay an `/open` may carry (what a viewer's config allows), and how
/// far the stream's arrival may lie from this FDN's clock: beyond them the numbers are a
/// mistake (or the clocks of the viewer and the FDN disagree), not a stream to decide for.
const MAX_STARTUP_S: f64 = super::config::MAX_STARTUP.as_secs_f64();
const MAX_CLOCK_GAP_S: f64 = 3600.0;

/// `arrival=UNIX_SECONDS&startup=SECONDS` of `/open`.
fn stream_times(query: &str) -> Result<StreamTimes, String> {
    let number = |key: &str| -> Result<f64, String> {
        let text = http::query_value(query, key)
            .ok_or_else(|| format!("expected {key}=SECONDS in the query"))?;
        text.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("{key}={text}: expected a number of seconds"))
    };
    let arrival_unix_s = number("arrival")?;
    let startup_s = number("startup")?;
    if !(0.0..=MAX_STARTUP_S).contains(&startup_s) {
        return Err(format!(
            "startup={startup_s}: expected 0 to {MAX_STARTUP_S} seconds"
        ));
    }
    let gap = arrival_unix_s - unix_now_s();
    if gap.abs() > MAX_CLOCK_GAP_S {
        return Err(format!(
            "arrival={arrival_unix_s} is {gap:.0} s from this FDN's clock (more than \
             {MAX_CLOCK_GAP_S} s): are the viewer's and the FDN's clocks set?"
        ));
    }
    Ok(StreamTimes {
        arrival_unix_s,
        startup_s,
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
        if task.session.cancelled.load(Ordering::Relaxed) {
            lock(&fdn.state).backlog.finish(task.id);
            continue;
        }
        let seconds = match rand_distr::Normal::new(task.time.mean, task.time.sd) {
            Ok(normal) => normal.sample(&mut *lock(&rng)).max(0.0),
            Err(_) => task.time.mean.max(0.0),
        };
        tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        lock(&fdn.state).backlog.finish(task.id);
        task.session.finish(task.index, Slot::Ready);
    }
}

/// Registers the cache with the cloud (again on every new connection), then reads the metadata
/// every period; keeps the last metadata when the cloud does not answer, and probes each
/// neighbour when it first appears, and again each period until a probe reaches it.
///
/// A registration the cloud refuses (this FDN's `index` is not its place in the cloud's
/// `fdns`) ends the loop with the refusal on `refused`: the FDN would take another's cache
/// placement, and mistake that one for itself, so the role ends rather than run wrong.
async fn metadata_loop(fdn: Arc<Fdn>, identity: Arc<Identity>, refused: oneshot::Sender<String>) {
    let cloud_addr = format!("{}:{}", fdn.config.cloud, fdn.config.control_port);
    let mut client: Option<Client> = None;
    let mut registered = false;
    // The probes under way, if any: one task, which probes its neighbours one at a time.
    let mut probing: Option<tokio::task::JoinHandle<()>> = None;
    let mut ticker = tokio::time::interval(fdn.config.metadata_interval);
    loop {
        ticker.tick().await;
        if client.is_none() {
            client = connect(&cloud_addr, &fdn.config.cloud, &identity)
                .await
                .ok();
            // A new connection may be to a cloud that restarted and knows nothing of this
            // FDN's cache: registering again is harmless, and neighbours learn the cache.
            registered = false;
        }
        let Some(c) = client.as_ref() else { continue };
        if !registered {
            let request = CloudRequest::Register {
                // Below `MAX_FDNS` (4096), which the config checked.
                index: fdn.config.index as u32,
                cached: fdn.cached_list(),
            };
            match c.call::<_, CloudResponse>(&request).await {
                Ok(CloudResponse::Registered) => registered = true,
                Ok(CloudResponse::Refused(why)) => {
                    let why = format!("the cloud refused this FDN's registration: {why}");
                    tracing::error!("fdn: {why}");
                    let _ = refused.send(why);
                    return;
                }
                Ok(other) => {
                    tracing::warn!("fdn: the cloud answered a registration with {other:?}")
                }
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
                let neighbours: Vec<String> = metadata
                    .fdns
                    .iter()
                    .filter(|f| f.up && f.index as usize != fdn.config.index)
                    .map(|f| f.name.clone())
                    .collect();
                lock(&fdn.state).metadata = metadata;
                // A neighbour no probe has reached yet has no path model, so the estimator never
                // picks it and no fetch measures it: it is probed until one does. The probes
                // run beside this loop, so one that cannot be reached does not hold the
                // metadata back by its timeouts, and one after another, as before, so that
                // they do not share this FDN's links and measure each other.
                let unknown: Vec<String> = (neighbours.into_iter())
                    .filter(|name| !lock(&fdn.state).paths.get(name).is_some_and(|p| p.known()))
                    .collect();
                let idle = probing.as_ref().is_none_or(|probe| probe.is_finished());
                if idle && !unknown.is_empty() && fdn.config.probes > 0 {
                    probing = Some(tokio::spawn(probe_neighbours(fdn.clone(), unknown)));
                }
            }
            Ok(_) => {}
            Err(_) => client = None,
        }
    }
}

/// Probes each of `neighbours` in turn, `probes` transfers each, learning the paths.
async fn probe_neighbours(fdn: Arc<Fdn>, neighbours: Vec<String>) {
    for name in neighbours {
        let url = format!("http://{name}/probe?bytes=250000");
        for _ in 0..fdn.config.probes {
            let _ = fdn.transfer(&url, &name, 250_000).await;
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
    let catalog = Catalog::generate(&config.catalog);
    let fdn = Arc::new(Fdn {
        holdings: Holdings::of_fdn(&catalog, config.index, config.caching, config.hot_share),
        catalog,
        http: crate::roles::fetch::client()
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?,
        state: Mutex::new(State {
            metadata: Metadata::default(),
            paths: HashMap::new(),
            backlog: Backlog::new(config.workers),
            next_id: 0,
        }),
        sessions: Mutex::new(Sessions::new(
            config.max_sessions,
            config.session_idle_timeout,
        )),
        session_keys: TokenKey::generate()?,
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
    let (refused, registration_refused) = oneshot::channel();
    tokio::spawn(metadata_loop(fdn.clone(), identity, refused));
    tokio::spawn(expire_sessions(fdn.clone()));
    let served = fdn.clone();
    let handler = move |request: Request<hyper::body::Incoming>| {
        let fdn = served.clone();
        async move {
            match fdn.handle_http(&request) {
                HttpAnswer::Now(response) => *response,
                HttpAnswer::Wait(reading, index) => fdn.deliver(reading, index).await,
            }
        }
    };
    let options = ServeOptions {
        role: "fdn",
        access_log: false,
    };
    let running =
        (spawn_http(http, handler, options, Some(control)).await?).failing_on(registration_refused);
    tracing::info!(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::issue_lab_certs;
    use crate::testing::TempDir;
    use std::sync::atomic::AtomicUsize;

    /// A cancelled session aborts the fetches it holds, and one tracked after it was cancelled
    /// (the session expired while it was being opened) at once; its pending segments fail.
    #[tokio::test]
    async fn a_cancelled_session_aborts_its_fetches_before_and_after() {
        let session = Session {
            video: 0,
            segments: vec![Segment {
                source: Mutex::new(String::new()),
                state: watch::channel(Slot::Pending).0,
                deadline_unix_s: 0.0,
            }],
            fetches: Mutex::new(Vec::new()),
            cancelled: AtomicBool::new(false),
        };
        let fetch = || tokio::spawn(std::future::pending::<()>());
        let before = fetch();
        session.track(before.abort_handle());
        assert!(!before.is_finished());
        session.cancel();
        let ended = tokio::time::timeout(Duration::from_secs(5), before).await;
        assert!(ended.expect("not aborted").unwrap_err().is_cancelled());
        assert_eq!(
            *session.segments[0].state.borrow(),
            Slot::Failed("the session was closed".into())
        );
        let after = fetch();
        session.track(after.abort_handle());
        let ended = tokio::time::timeout(Duration::from_secs(5), after).await;
        assert!(ended.expect("not aborted").unwrap_err().is_cancelled());
        assert!(lock(&session.fetches).is_empty(), "nothing kept");
    }

    /// Counts the cloud's requests in progress, also when the caller abandons one.
    struct InFlight(Arc<AtomicUsize>);

    impl Drop for InFlight {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Whether the test cloud holds segment (video, index) forever instead of serving it.
    type Holds = fn(usize, usize) -> bool;

    /// Every segment but the FDN's start-up probe of 0/0.
    const ALL_BUT_THE_PROBE: Holds = |video, index| (video, index) != (0, 0);

    /// A cloud that serves the segments of `catalog` that `holds` does not hold and holds the
    /// others forever, counting the requests it holds.
    async fn holding_cloud(catalog: Catalog, holds: Holds) -> (Running, Arc<AtomicUsize>) {
        let held = Arc::new(AtomicUsize::new(0));
        let counter = held.clone();
        let catalog = Arc::new(catalog);
        let handler = move |request: Request<hyper::body::Incoming>| {
            let counter = counter.clone();
            let catalog = catalog.clone();
            async move {
                let path = request.uri().path().to_string();
                let segment = path.strip_prefix("/repo/").and_then(|rest| {
                    let (video, index) = rest.split_once('/')?;
                    Some((video.parse().ok()?, index.parse().ok()?))
                });
                if let Some((video, index)) = segment.filter(|&(v, i)| !holds(v, i)) {
                    let bytes = catalog.videos[video].segments[index].bytes;
                    return http::payload(segment_payload(video, index), bytes);
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let _held = InFlight(counter);
                std::future::pending::<Response<Body>>().await
            }
        };
        let options = ServeOptions {
            role: "test-cloud",
            access_log: false,
        };
        let running = spawn_http("127.0.0.1:0".parse().unwrap(), handler, options, None)
            .await
            .unwrap();
        (running, held)
    }

    /// Starts an FDN configured by `toml`, its cloud a holding cloud holding what `holds`
    /// says; with the count of the requests that cloud holds.
    async fn test_fdn(
        toml: &str,
        name: &str,
        holds: Holds,
    ) -> (Running, Running, Arc<AtomicUsize>, FdnConfig) {
        let table: toml::Table = toml.parse().unwrap();
        let mut config = super::super::config::fdn(&table).unwrap();
        let (cloud, held) = holding_cloud(Catalog::generate(&config.catalog), holds).await;
        config.cloud = cloud.http.to_string();
        let dir = TempDir::new(name);
        issue_lab_certs(&dir.0, name, &["fdn1"]).unwrap();
        let identity = Arc::new(Identity::load(&dir.0, "fdn1").unwrap());
        let any = "127.0.0.1:0".parse().unwrap();
        let fdn = start(config.clone(), identity, any, any).await.unwrap();
        (fdn, cloud, held, config)
    }

    /// The estimator decides every segment against the deadline the viewer scores: the
    /// stream's arrival (here 0.7 s before the open, as after a slow ingestion) plus its
    /// start-up delay and one segment duration per segment before it, not counted from when
    /// the FDN opened the session. Each segment says which deadline it was decided against.
    #[tokio::test]
    async fn every_segment_is_decided_against_the_viewers_deadline() {
        let (fdn, cloud, _, config) = test_fdn(
            r#"
            index = 0
            method = "robust-ffdn"
            caching = "100%"
            probes = 1
            catalog = { videos = 1, segments_min = 5, segments_max = 5, segment_duration = "2s" }
            "#,
            "fdn-deadlines",
            ALL_BUT_THE_PROBE,
        )
        .await;
        let client = crate::roles::fetch::client().build().unwrap();
        let arrival = unix_now_s() - 0.7;
        let open = format!(
            "http://{}/open/0?fb=0.01,0.001&pb=0.000001,0&arrival={arrival:.6}&startup=1.5",
            fdn.http
        );
        let text = client
            .get(&open)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let opened: serde_json::Value = serde_json::from_str(&text).unwrap();
        let session = opened["session"].as_str().unwrap().to_string();
        assert_eq!(opened["segments"], 5);
        assert_eq!(config.catalog.segment_duration_s, 2.0);
        for index in 0..5 {
            let url = format!("http://{}/segment/{session}/{index}", fdn.http);
            let response = client.get(&url).send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            let decided: f64 = response.headers()["x-deadline"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            let scored = arrival + 1.5 + 2.0 * index as f64;
            assert!(
                (decided - scored).abs() < 1e-3,
                "segment {index}: decided against {decided}, scored against {scored}"
            );
        }
        // No arrival, or one a day away from the FDN's clock, is refused by name.
        for (query, says) in [
            ("startup=1", "arrival="),
            ("arrival=1&startup=1", "clocks"),
            (
                &format!("arrival={arrival}&startup=-1") as &str,
                "startup=-1",
            ),
        ] {
            let url = format!(
                "http://{}/open/0?fb=0.01,0.001&pb=0.000001,0&{query}",
                fdn.http
            );
            let response = client.get(&url).send().await.unwrap();
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
            let text = response.text().await.unwrap();
            assert!(text.contains(says), "{query}: {text}");
        }
        fdn.stop().await.unwrap();
        cloud.stop().await.unwrap();
    }

    /// Opens past `max_sessions` are 503; sessions nobody reads expire after the idle time,
    /// their fetches from the cloud cancelled, and make room for new ones.
    #[tokio::test]
    async fn sessions_are_capped_and_idle_ones_expire_with_their_fetches() {
        let (fdn, cloud, held, _) = test_fdn(
            r#"
            index = 0
            method = "central-cloud"
            probes = 1
            max_sessions = 2
            session_idle_timeout = "400ms"
            fetch_timeout = "60s"
            catalog = { videos = 1, segments_min = 3, segments_max = 3 }
            "#,
            "fdn-sessions",
            ALL_BUT_THE_PROBE,
        )
        .await;
        let client = crate::roles::fetch::client().build().unwrap();
        let open = || {
            let arrival = unix_now_s();
            let url = format!(
                "http://{}/open/0?fb=0.01,0.001&pb=0.000001,0&arrival={arrival}&startup=1",
                fdn.http
            );
            let client = client.clone();
            async move { client.get(url).send().await.unwrap() }
        };
        for _ in 0..2 {
            assert_eq!(open().await.status(), StatusCode::OK);
        }
        let refused = open().await;
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(refused.text().await.unwrap().contains("max_sessions"));
        // Each session fetches its 3 segments from the cloud, which holds all but 0/0.
        crate::testing::until("the cloud holds 4 fetches", || {
            held.load(Ordering::SeqCst) == 4
        })
        .await;
        // Nobody reads: the sessions expire and the cloud sees their fetches go away.
        crate::testing::until("the fetches are cancelled", || {
            held.load(Ordering::SeqCst) == 0
        })
        .await;
        assert_eq!(open().await.status(), StatusCode::OK, "room again");
        fdn.stop().await.unwrap();
        cloud.stop().await.unwrap();
    }

    /// A session is read only through the token its viewer was given: its bare number, or the
    /// number with a made-up check, is no session. When the session closes (its last segment
    /// read) while a read still waits on a segment whose fetch it cancels, that read gets 502
    /// at once instead of waiting for ever.
    #[tokio::test]
    async fn a_session_is_its_viewers_and_closing_it_answers_every_waiting_read() {
        let (fdn, cloud, held, _) = test_fdn(
            r#"
            index = 0
            method = "central-cloud"
            probes = 1
            fetch_timeout = "60s"
            catalog = { videos = 1, segments_min = 3, segments_max = 3 }
            "#,
            "fdn-tokens",
            |video, index| (video, index) == (0, 1),
        )
        .await;
        let client = crate::roles::fetch::client()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        let arrival = unix_now_s();
        let open = format!(
            "http://{}/open/0?fb=0.01,0.001&pb=0.000001,0&arrival={arrival}&startup=1",
            fdn.http
        );
        let text = client.get(open).send().await.unwrap().text().await.unwrap();
        let opened: serde_json::Value = serde_json::from_str(&text).unwrap();
        let token = opened["session"].as_str().unwrap().to_string();
        let number: String = token.chars().take_while(|c| *c != '-').collect();
        let segment = |session: &str, index: usize| {
            let url = format!("http://{}/segment/{session}/{index}", fdn.http);
            let client = client.clone();
            async move { client.get(url).send().await.unwrap() }
        };
        let guesses: Vec<String> = vec![
            number.clone(),
            format!("{number}-{}", "0".repeat(64)),
            format!("{number}-"),
        ];
        for guess in &guesses {
            let status = segment(guess, 0).await.status();
            assert_eq!(status, StatusCode::NOT_FOUND, "{guess}");
        }
        assert_eq!(segment(&token, 0).await.status(), StatusCode::OK);
        crate::testing::until("the cloud holds segment 1", || {
            held.load(Ordering::SeqCst) == 1
        })
        .await;
        let waiting = tokio::spawn(segment(&token, 1));
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!waiting.is_finished(), "segment 1 is held by the cloud");
        assert_eq!(segment(&token, 2).await.status(), StatusCode::OK);
        let answered = waiting.await.unwrap();
        assert_eq!(answered.status(), StatusCode::BAD_GATEWAY);
        assert!(answered.text().await.unwrap().contains("closed"));
        crate::testing::until("the fetch is cancelled", || {
            held.load(Ordering::SeqCst) == 0
        })
        .await;
        fdn.stop().await.unwrap();
        cloud.stop().await.unwrap();
    }
}
