//! `p2p-peer`: one peer (papers/002). Every slot it is idle (offline) with probability π_0 or
//! plays chunk j with probability π_j (Zipf), drawn `lookahead` slots ahead: a chunk its LRU
//! cache of B holds is replayed, any other is downloaded in the meantime — from the peer the
//! tracker names or from the cloud — and cached. A chunk not in the cache when its slot
//! starts is a stall (the player keeps its schedule and counts how late the chunk came). It
//! serves the chunks it caches to other peers (`GET /chunk/J`) at the rate of its link, which
//! is its upload capacity. SIGUSR1 (a `signal` timeline event) makes it leave: it tells the
//! tracker, stops serving and writes its summary.
//!
//! Writes `summary.json` (plays, replays, downloads by source, stalls, uploads) and
//! `downloads.csv` (one row per download, up to `MAX_RECORDS`).

use super::config::PeerConfig;
use super::messages::{Source, TrackerRequest, TrackerResponse};
use super::{chunk_of, payload};
use crate::cdn::hashing::hash64;
use crate::control::Identity;
use crate::p2p::cache::PeerCache;
use crate::p2p::play::Plays;
use crate::roles::control::load_identity;
use crate::roles::fetch::exact_body;
use crate::roles::http::any_address;
use crate::roles::http::semantics::{self as http, error};
use crate::roles::http::{spawn_http, ServeOptions};
use crate::roles::peers::Peer;
use crate::roles::summary::{self, ClientSummary};
use crate::roles::Start;
use hyper::{Request, StatusCode};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, SignalKind};

/// How long a call to the tracker may take before the peer goes to the cloud.
const TRACKER_LIMIT: Duration = Duration::from_secs(2);
/// The most downloads `downloads.csv` keeps (the summary counts them all).
const MAX_RECORDS: usize = 100_000;

/// Where a download came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum From {
    OwnIsp,
    OtherIsp,
    Cloud,
    /// Neither the peer nor the cloud delivered it.
    Failed,
}

impl From {
    fn name(self) -> &'static str {
        match self {
            From::OwnIsp => "own_isp",
            From::OtherIsp => "other_isp",
            From::Cloud => "cloud",
            From::Failed => "failed",
        }
    }
}

struct Record {
    slot: u64,
    chunk: u32,
    from: From,
    /// The tracker named a peer that did not deliver, so the cloud did.
    fell_back: bool,
    /// The tracker did not answer in time (or its call failed), so the cloud was asked.
    unanswered: bool,
    seconds: f64,
    /// After the chunk's slot started (0: in time).
    late_s: f64,
}

/// Every download counted, however many `downloads.csv` keeps.
#[derive(Default)]
struct Tally {
    downloads: u64,
    from_own_isp: u64,
    from_other_isp: u64,
    from_cloud: u64,
    failed: u64,
    fell_back: u64,
    unanswered: u64,
    late_s: f64,
    /// Seconds of the downloads that delivered.
    delivered_s: f64,
}

impl Tally {
    fn add(&mut self, r: &Record) {
        self.downloads += 1;
        match r.from {
            From::OwnIsp => self.from_own_isp += 1,
            From::OtherIsp => self.from_other_isp += 1,
            From::Cloud => self.from_cloud += 1,
            From::Failed => self.failed += 1,
        }
        self.fell_back += u64::from(r.fell_back);
        self.unanswered += u64::from(r.unanswered);
        self.late_s += r.late_s;
        if r.from != From::Failed {
            self.delivered_s += r.seconds;
        }
    }
}

struct PeerState {
    cache: PeerCache,
    /// Chunks being downloaded, and the slot each is for.
    pending: BTreeMap<u32, u64>,
    tally: Tally,
    records: Vec<Record>,
}

struct Node {
    config: PeerConfig,
    node: String,
    identity: Arc<Identity>,
    state: Mutex<PeerState>,
    tracker: tokio::sync::Mutex<Peer>,
    /// What the cache holds after the latest download, for the reporter ([`report_cache`]).
    cached: tokio::sync::watch::Sender<Vec<u32>>,
    http: reqwest::Client,
    origin: Instant,
    uploads: AtomicU64,
    upload_bytes: AtomicU64,
    left: std::sync::atomic::AtomicBool,
}

impl Node {
    fn lock(&self) -> std::sync::MutexGuard<'_, PeerState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One call to the tracker once the connection is free; connecting and the answer are
    /// each awaited up to `TRACKER_LIMIT`.
    async fn call(&self, request: &TrackerRequest) -> Option<TrackerResponse> {
        let port = self.config.control_port;
        let mut tracker = self.tracker.lock().await;
        tracker
            .call(port, &self.identity, request, TRACKER_LIMIT)
            .await
    }

    /// A slot's call, awaited up to `TRACKER_LIMIT` in all, the wait behind the peer's cache
    /// report included; then the cloud.
    async fn slot_call(&self, request: &TrackerRequest) -> Option<TrackerResponse> {
        tokio::time::timeout(TRACKER_LIMIT, self.call(request))
            .await
            .ok()
            .flatten()
    }

    /// When slot `slot` starts.
    fn slot_start(&self, slot: u64) -> Instant {
        self.origin + self.config.catalogue.slot * u32::try_from(slot).unwrap_or(u32::MAX)
    }

    /// Fetches the chunk at `url`, whose body must be exactly the chunk's size
    /// ([`exact_body`]); it is checked, not kept.
    async fn fetch(&self, url: &str) -> Result<(), String> {
        let response = self.http.get(url).send().await.map_err(|e| e.to_string())?;
        if response.status() != reqwest::StatusCode::OK {
            return Err(format!("{url}: status {}", response.status()));
        }
        exact_body(response, self.config.catalogue.chunk_size)
            .await
            .map(drop)
            .map_err(|e| format!("{url}: {e}"))
    }

    /// Downloads `chunk` (for slot `slot`) from the tracker's `answer` (the cloud when it did
    /// not answer), or from the cloud when a peer does not deliver; caches it and tells the
    /// tracker.
    async fn download(self: Arc<Self>, chunk: u32, slot: u64, answer: Option<Source>) {
        let started = Instant::now();
        let unanswered = answer.is_none();
        let source = answer.unwrap_or(Source::Cloud);
        let cloud = format!(
            "http://{}:{}/chunk/{chunk}",
            self.config.cloud, self.config.cloud_port
        );
        let (mut from, mut fell_back) = (From::Cloud, false);
        let mut result = match &source {
            Source::Peer { name, same_isp } => {
                from = if *same_isp {
                    From::OwnIsp
                } else {
                    From::OtherIsp
                };
                let url = format!("http://{name}:{}/chunk/{chunk}", self.config.port);
                self.fetch(&url).await
            }
            Source::Cloud => self.fetch(&cloud).await,
        };
        if result.is_err() && from != From::Cloud {
            tracing::debug!(
                "p2p-peer {}: {:?}; from the cloud instead",
                self.node,
                result
            );
            (from, fell_back) = (From::Cloud, true);
            result = self.fetch(&cloud).await;
        }
        if let Err(e) = &result {
            tracing::warn!("p2p-peer {}: chunk {chunk}: {e}", self.node);
            from = From::Failed;
        }
        let due = self.slot_start(slot);
        let late_s = Instant::now().saturating_duration_since(due).as_secs_f64();
        {
            let mut state = self.lock();
            state.pending.remove(&chunk);
            let record = Record {
                slot,
                chunk,
                from,
                fell_back,
                unanswered,
                seconds: started.elapsed().as_secs_f64(),
                late_s,
            };
            state.tally.add(&record);
            if state.records.len() < MAX_RECORDS {
                state.records.push(record);
            }
            if from == From::Failed || self.left.load(Ordering::Relaxed) {
                return;
            }
            state.cache.store(chunk);
            // Sent under the lock, so a later download's set never goes out before this one.
            self.cached.send_replace(state.cache.chunks().collect());
        };
    }

    /// Asks the tracker in slot `slot` (a `Slot` call), and downloads the chunk wanted, if
    /// any, for slot `due`; apart from the play loop, which must look at the cache when each
    /// slot starts however long the tracker takes.
    async fn ask(self: Arc<Self>, report: TrackerRequest, want: Option<(u32, u64)>) {
        let answer = self.slot_call(&report).await;
        let Some((chunk, due)) = want else {
            return;
        };
        let source = match answer {
            Some(TrackerResponse::Slot { source }) => source,
            _ => None,
        };
        if source.is_none() {
            tracing::debug!(
                "p2p-peer {}: no answer from the tracker; the cloud",
                self.node
            );
        }
        self.download(chunk, due, source).await;
    }

    fn serve(
        &self,
        request: &Request<hyper::body::Incoming>,
    ) -> hyper::Response<crate::roles::http::Body> {
        if let Some(refusal) = http::refuse_method(request.method()) {
            return refusal;
        }
        let Some(chunk) = chunk_of(request.uri().path(), self.config.catalogue.chunks) else {
            return error(StatusCode::NOT_FOUND, "no such chunk");
        };
        if self.left.load(Ordering::Relaxed) || !self.lock().cache.holds(chunk) {
            return error(StatusCode::NOT_FOUND, "not cached here");
        }
        let size = self.config.catalogue.chunk_size;
        if request.method() == hyper::Method::GET {
            self.uploads.fetch_add(1, Ordering::Relaxed);
            self.upload_bytes.fetch_add(size, Ordering::Relaxed);
        }
        http::payload(payload(chunk), size)
    }
}

/// What the peer did, for `summary.json`.
#[derive(Debug, Default, Serialize)]
struct Totals {
    slots: u64,
    /// Slots in which it played a chunk (the rest it was idle).
    played: u64,
    /// Chunks replayed from its cache.
    replays: u64,
    downloads: u64,
    from_own_isp: u64,
    from_other_isp: u64,
    from_cloud: u64,
    /// Downloads the tracker sent to a peer that did not deliver (then the cloud did).
    peer_fallbacks: u64,
    /// Downloads asked of the cloud because the tracker's answer did not come within
    /// `TRACKER_LIMIT` (or the call failed): the tracker may have counted them as sent to a
    /// peer, or refused (more than a slot's reports at once). A peer whose link is busy
    /// uploading can wait that long for its request to leave, or behind its cache report for
    /// its request to be sent at all.
    tracker_unanswered: u64,
    failed_downloads: u64,
    /// Downloads still under way when the summary was written (after the last slot, it waits
    /// two fetch timeouts for them; a peer that leaves does not wait): in no other count.
    unfinished_downloads: u64,
    /// Chunks not cached when their slot started, and by how much they were late in all.
    stalls: u64,
    stall_rate: f64,
    stall_s: f64,
    mean_download_s: Option<f64>,
    uploads: u64,
    upload_bytes: u64,
    /// When it left (a `signal` event), seconds after it started.
    left_at_s: Option<f64>,
    failed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub async fn run(config: PeerConfig, start: Start) -> Result<(), String> {
    let out = start.out_dir()?;
    let node = start.env.node_name();
    let identity = load_identity(&start.env)?;
    let http = crate::roles::fetch::client()
        .timeout(config.fetch_timeout)
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let shared = Arc::new(Node {
        state: Mutex::new(PeerState {
            cache: PeerCache::new(config.catalogue.cache),
            pending: BTreeMap::new(),
            tally: Tally::default(),
            records: Vec::new(),
        }),
        tracker: tokio::sync::Mutex::new(Peer::new(&config.tracker)),
        cached: tokio::sync::watch::Sender::new(Vec::new()),
        http,
        origin: Instant::now(),
        uploads: AtomicU64::new(0),
        upload_bytes: AtomicU64::new(0),
        left: Default::default(),
        identity,
        node: node.clone(),
        config: config.clone(),
    });
    let for_http = shared.clone();
    let handler = move |request: Request<hyper::body::Incoming>| {
        let node = for_http.clone();
        async move { node.serve(&request) }
    };
    let options = ServeOptions {
        role: "p2p-peer",
        access_log: false,
    };
    let server = spawn_http(any_address(config.port), handler, options, None).await?;
    // Subscribed before the play starts, so the first download's set is not missed.
    let reporter = tokio::spawn(report_cache(shared.clone(), shared.cached.subscribe()));
    let result = tokio::select! {
        result = play(shared.clone()) => result,
        signal = start.shutdown.signal() => Err(format!("stopped by {signal} before the end")),
    };
    reporter.abort();
    drop(server);
    let totals = result.map(|played| totals(&shared, &played));
    if let Ok(t) = &totals {
        write_downloads(&out, &shared.lock().records)?;
        tracing::info!("p2p-peer {node}: {} plays, {} stalls", t.played, t.stalls);
    }
    let summary = totals.and_then(|t| ClientSummary::of(&node, &t));
    summary::finish(&out, &node, summary)
}

/// Tells the tracker what the cache holds whenever a download changed it: the latest set only
/// (each replaces the last at the tracker), so reports never pile up behind a slow tracker;
/// one that fails is sent again, as it then is, a slot later.
async fn report_cache(node: Arc<Node>, mut cached: tokio::sync::watch::Receiver<Vec<u32>>) {
    let mut resend = false;
    loop {
        if !resend && cached.changed().await.is_err() {
            return;
        }
        if node.left.load(Ordering::Relaxed) {
            return;
        }
        let chunks = cached.borrow_and_update().clone();
        let answer = node.call(&TrackerRequest::Cached { chunks }).await;
        resend = answer.is_none();
        match answer {
            Some(TrackerResponse::Refused(why)) => {
                tracing::warn!(
                    "p2p-peer {}: the tracker refused its cache: {why}",
                    node.node
                )
            }
            None => tokio::time::sleep(node.config.catalogue.slot).await,
            Some(_) => {}
        }
    }
}

/// What the player counted.
#[derive(Debug, Default)]
struct Played {
    slots: u64,
    played: u64,
    /// Plays that needed no new download (cached, or already on the way, when drawn).
    replays: u64,
    stalls: u64,
    left_at_s: Option<f64>,
}

/// Plays every slot until the duration is over or SIGUSR1 says leave.
async fn play(node: Arc<Node>) -> Result<Played, String> {
    let config = &node.config;
    let popularity = cdnlab_core::zipf::weights(config.catalogue.chunks, config.zipf);
    let plays = Plays::new(config.idle, &popularity).map_err(|e| e.to_string())?;
    let mut rng = StdRng::seed_from_u64(config.seed ^ hash64(node.node.as_bytes()));
    let mut usr1 = signal(SignalKind::user_defined1()).map_err(|e| format!("SIGUSR1: {e}"))?;
    let slots = (config.duration.as_secs_f64() / config.catalogue.slot.as_secs_f64()) as u64;
    let ahead = u64::from(config.lookahead);
    // What slot k plays, drawn at slot k − lookahead; the first slots play nothing.
    let mut schedule: VecDeque<Option<u32>> = std::iter::repeat_n(None, ahead as usize).collect();
    let mut played = Played::default();
    for slot in 0..slots {
        tokio::select! {
            () = tokio::time::sleep_until(node.slot_start(slot).into()) => {}
            _ = usr1.recv() => {
                node.left.store(true, Ordering::Relaxed);
                played.left_at_s = Some(node.origin.elapsed().as_secs_f64());
                // Unheard, the tracker takes the peer for offline within three slots anyway.
                let _ = node.slot_call(&TrackerRequest::Leave).await;
                return Ok(played);
            }
        }
        played.slots += 1;
        let now = schedule.pop_front().flatten();
        if let Some(chunk) = now {
            played.played += 1;
            if !node.lock().cache.play_cached(chunk) {
                played.stalls += 1;
            }
        }
        let next = plays.draw(&mut rng);
        schedule.push_back(next);
        let want = next.filter(|&c| {
            let mut state = node.lock();
            // A chunk cached now is kept fresh until its slot; one on its way is not asked twice.
            !state.cache.play_cached(c) && !state.pending.contains_key(&c)
        });
        if next.is_some() && want.is_none() {
            played.replays += 1;
        }
        let report = TrackerRequest::Slot {
            playing: now.is_some(),
            want,
        };
        if let Some(chunk) = want {
            node.lock().pending.insert(chunk, slot + ahead);
        }
        tokio::spawn(
            node.clone()
                .ask(report, want.map(|chunk| (chunk, slot + ahead))),
        );
    }
    // Downloads still under way finish (or time out) before the summary: one asks the tracker
    // first, and one that falls back to the cloud can take two fetches' time.
    let deadline = Instant::now() + TRACKER_LIMIT + 2 * node.config.fetch_timeout;
    while !node.lock().pending.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(played)
}

fn totals(node: &Node, played: &Played) -> Totals {
    let state = node.lock();
    let tally = &state.tally;
    let delivered = tally.downloads - tally.failed;
    Totals {
        slots: played.slots,
        played: played.played,
        replays: played.replays,
        downloads: tally.downloads,
        from_own_isp: tally.from_own_isp,
        from_other_isp: tally.from_other_isp,
        from_cloud: tally.from_cloud,
        peer_fallbacks: tally.fell_back,
        tracker_unanswered: tally.unanswered,
        failed_downloads: tally.failed,
        unfinished_downloads: state.pending.len() as u64,
        stalls: played.stalls,
        stall_rate: if played.played == 0 {
            0.0
        } else {
            played.stalls as f64 / played.played as f64
        },
        stall_s: tally.late_s,
        mean_download_s: (delivered > 0).then(|| tally.delivered_s / delivered as f64),
        uploads: node.uploads.load(Ordering::Relaxed),
        upload_bytes: node.upload_bytes.load(Ordering::Relaxed),
        left_at_s: played.left_at_s,
        failed: played.played == 0,
        error: (played.played == 0).then(|| "the peer played no chunk".to_string()),
    }
}

fn write_downloads(out: &Path, records: &[Record]) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut text = String::from("slot,chunk,from,fell_back,tracker_unanswered,seconds,late_s\n");
    for r in records {
        text += &format!(
            "{},{},{},{},{},{:.6},{:.6}\n",
            r.slot,
            r.chunk,
            r.from.name(),
            r.fell_back,
            r.unanswered,
            r.seconds,
            r.late_s
        );
    }
    let path = out.join("downloads.csv");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(from: From, fell_back: bool, unanswered: bool, seconds: f64) -> Record {
        Record {
            slot: 1,
            chunk: 2,
            from,
            fell_back,
            unanswered,
            seconds,
            late_s: 0.25,
        }
    }

    #[test]
    fn tally_counts_each_source_and_times_only_the_delivered() {
        let mut tally = Tally::default();
        for r in [
            record(From::OwnIsp, false, false, 1.0),
            record(From::OtherIsp, false, false, 2.0),
            record(From::Cloud, true, false, 3.0),
            record(From::Cloud, false, true, 4.0),
            record(From::Failed, true, false, 9.0),
        ] {
            tally.add(&r);
        }
        let counts = [
            tally.downloads,
            tally.from_own_isp,
            tally.from_other_isp,
            tally.from_cloud,
            tally.failed,
            tally.fell_back,
            tally.unanswered,
        ];
        assert_eq!(counts, [5, 1, 1, 2, 1, 2, 1]);
        assert_eq!(tally.delivered_s, 10.0);
        assert_eq!(tally.late_s, 1.25);
    }
}
