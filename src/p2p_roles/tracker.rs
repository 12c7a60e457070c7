//! `p2p-tracker`: dispatches every peer's chunk download (papers/002) — to a peer of the ISP
//! the policy picks that caches the chunk, plays now and has upload left, or to the cloud —
//! with the core's `Tracker`, which recomputes the dispatch every slot from the request rates
//! and upload it measures. Peers reach it on the control plane only (each call authorized by
//! the caller's certificate name, which is the peer it speaks for); `GET /` shows its state.
//!
//! Writes to `$CDNLAB_OUT_DIR` every `record_every` and when it stops: `tracker.json` (the
//! settings, the totals of its decisions, the ISPs' gateways) and `dispatch.csv` (every slot:
//! r_l, C_m and a_lm as measured and used).

use super::config::TrackerConfig;
use super::messages::{Source, TrackerRequest, TrackerResponse};
use crate::atomic_write::write_atomically;
use crate::control::{Callers, PeerName};
use crate::newest::Newest;
use crate::p2p::tracker::{Choice, Tracker};
use crate::roles::control::load_identity;
use crate::roles::env::NodeEnv;
use crate::roles::http::any_address;
use crate::roles::http::semantics::{self as http};
use crate::roles::http::{spawn_http, ServeOptions};
use bytes::Bytes;
use hyper::Request;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::{json, Value};
use std::fmt::Write;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The most slots `dispatch.csv` keeps (the oldest go first): a day of 500 ms slots, or as many
/// as fit in `MAX_SAMPLE_BYTES` (a row holds isps² shares).
const MAX_SAMPLES: usize = 172_800;
const MAX_SAMPLE_BYTES: usize = 128 << 20;

struct State {
    tracker: Tracker,
    rng: StdRng,
    /// One row of `dispatch.csv` per slot.
    samples: Newest,
    refused: u64,
}

struct Shared {
    config: TrackerConfig,
    origin: Instant,
    state: Mutex<State>,
    out: PathBuf,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now_s(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }

    fn handle(&self, caller: &PeerName, request: TrackerRequest) -> TrackerResponse {
        // Callers admits only the configured peers, so the name is one of them.
        let Some(peer) = self.config.peers.iter().position(|p| p == caller.as_str()) else {
            return TrackerResponse::Refused(format!("{} is not a peer", caller.as_str()));
        };
        self.handle_peer(peer, request)
    }

    /// `request` from the `peer`-th configured peer.
    fn handle_peer(&self, peer: usize, request: TrackerRequest) -> TrackerResponse {
        let mut state = self.lock();
        // Read under the lock, so the tracker sees its calls' times in order.
        let now = self.now_s();
        match request {
            TrackerRequest::Slot { playing, want } => {
                let chunks = self.config.catalogue.chunks;
                if let Some(chunk) = want.filter(|&chunk| chunk as usize >= chunks) {
                    state.refused += 1;
                    return TrackerResponse::Refused(format!(
                        "chunk {chunk} is past the catalogue of {chunks} chunks"
                    ));
                }
                if let Err(why) = state.tracker.heard(peer, now, playing) {
                    state.refused += 1;
                    return TrackerResponse::Refused(why);
                }
                let source = want.map(|chunk| {
                    let State { tracker, rng, .. } = &mut *state;
                    match tracker.locate(peer, chunk, now, rng).choice {
                        Choice::Peer(p) => Source::Peer {
                            name: self.config.peers[p].clone(),
                            same_isp: self.config.params.isp_of[p]
                                == self.config.params.isp_of[peer],
                        },
                        Choice::Cloud => Source::Cloud,
                    }
                });
                TrackerResponse::Slot { source }
            }
            TrackerRequest::Cached { chunks } => match state.tracker.cached(peer, &chunks) {
                Ok(()) => TrackerResponse::Noted,
                Err(why) => {
                    state.refused += 1;
                    TrackerResponse::Refused(why)
                }
            },
            TrackerRequest::Leave => {
                state.tracker.left(peer);
                tracing::info!("p2p-tracker: peer {} left", self.config.peers[peer]);
                TrackerResponse::Noted
            }
        }
    }

    /// Ends a slot: the core folds it into r_l and C_m and recomputes the dispatch.
    fn end_slot(&self) {
        let mut state = self.lock();
        let now = self.now_s();
        if let Err(e) = state.tracker.end_slot(now) {
            tracing::warn!("p2p-tracker: keeping the last dispatch: {e}");
        }
        let t = &state.tracker;
        let mut row = format!("{now:.3}");
        for v in t
            .requests()
            .iter()
            .chain(t.capacities())
            .chain(t.dispatch().iter().flatten())
        {
            let _ = write!(row, ",{v:.4}");
        }
        state.samples.push(row.into());
    }

    fn status(&self) -> Value {
        let state = self.lock();
        let t = &state.tracker;
        json!({
            "dispatch": self.config.params.policy.name(),
            "peers": self.config.peers,
            "peer_isp": self.config.params.isp_of.iter().map(|m| m + 1).collect::<Vec<_>>(),
            "upload": self.config.params.upload,
            "gateways": self.config.gateways,
            "chunks": self.config.catalogue.chunks,
            "cache": self.config.catalogue.cache,
            "slot_s": self.config.catalogue.slot.as_secs_f64(),
            "requests": t.requests(),
            "capacities": t.capacities(),
            "a": t.dispatch(),
            "totals": t.totals(),
            "refused_reports": state.refused,
            "elapsed_s": self.now_s(),
        })
    }

    fn record(&self) -> Result<(), String> {
        std::fs::create_dir_all(&self.out).map_err(|e| format!("{}: {e}", self.out.display()))?;
        let isps = self.config.params.upload.len();
        let mut csv = String::from("t_s");
        for m in 1..=isps {
            let _ = write!(csv, ",r{m}");
        }
        for m in 1..=isps {
            let _ = write!(csv, ",c{m}");
        }
        for l in 1..=isps {
            for m in 1..=isps {
                let _ = write!(csv, ",a{l}{m}");
            }
        }
        csv.push('\n');
        // The rows are shared, not copied, under the lock the control calls need.
        let rows: Vec<Bytes> = self.lock().samples.iter().cloned().collect();
        for row in &rows {
            csv += &String::from_utf8_lossy(row);
            csv.push('\n');
        }
        let write = |name: &str, text: String| {
            write_atomically(&self.out.join(name), text.as_bytes()).map_err(|e| e.to_string())
        };
        write("dispatch.csv", csv)?;
        write("tracker.json", self.status().to_string())
    }
}

pub async fn run(
    config: TrackerConfig,
    env: NodeEnv,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let identity = load_identity(&env)?;
    let tracker = Tracker::new(config.params.clone()).map_err(|e| e.to_string())?;
    let shared = Arc::new(Shared {
        origin: Instant::now(),
        state: Mutex::new(State {
            tracker,
            rng: StdRng::seed_from_u64(config.seed),
            samples: Newest::new(MAX_SAMPLES, MAX_SAMPLE_BYTES),
            refused: 0,
        }),
        out: env.out_dir.clone().unwrap_or_else(|| PathBuf::from(".")),
        config: config.clone(),
    });
    let for_control = shared.clone();
    let control = crate::control::serve(
        any_address(config.control_port),
        &identity,
        Callers::only("p2p tracker", config.peers.clone()),
        move |caller: PeerName, request: TrackerRequest| {
            let shared = for_control.clone();
            async move { shared.handle(&caller, request) }
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    tracing::info!(
        "p2p-tracker: {} peers in {} ISPs, dispatch {}",
        config.peers.len(),
        config.params.upload.len(),
        config.params.policy
    );
    let slots = shared.clone();
    let ticker = tokio::spawn(async move {
        let mut slot = tokio::time::interval(slots.config.catalogue.slot);
        slot.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_record = Instant::now();
        slot.tick().await;
        loop {
            slot.tick().await;
            slots.end_slot();
            if last_record.elapsed() >= slots.config.record_every {
                last_record = Instant::now();
                if let Err(e) = slots.record() {
                    tracing::warn!("p2p-tracker: {e}");
                }
            }
        }
    });
    let for_http = shared.clone();
    let handler = move |request: Request<hyper::body::Incoming>| {
        let shared = for_http.clone();
        async move {
            if let Some(refusal) = http::refuse_method(request.method()) {
                return refusal;
            }
            http::json(&shared.status())
        }
    };
    let options = ServeOptions {
        role: "p2p-tracker",
        access_log: false,
    };
    let result = spawn_http(any_address(config.port), handler, options, Some(control))
        .await?
        .run_until(shutdown)
        .await;
    ticker.abort();
    shared.record()?;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk past the catalogue is refused and counted, not sent to the cloud, and the
    /// slot it came with is not heard.
    #[test]
    fn a_chunk_past_the_catalogue_is_refused() {
        let table: toml::Table = r#"
            peers = ["p1", "p2"]
            peer_isp = ["1", "1"]
            upload = ["10"]
            gateways = ["isp1"]
            "#
        .parse()
        .expect("TOML");
        let config = super::super::config::tracker(&table).expect("a tracker");
        let chunks = config.catalogue.chunks as u32;
        let shared = Shared {
            origin: Instant::now(),
            state: Mutex::new(State {
                tracker: Tracker::new(config.params.clone()).unwrap(),
                rng: StdRng::seed_from_u64(1),
                samples: Newest::new(MAX_SAMPLES, MAX_SAMPLE_BYTES),
                refused: 0,
            }),
            out: PathBuf::from("."),
            config,
        };
        let slot = |want| TrackerRequest::Slot {
            playing: true,
            want: Some(want),
        };
        let TrackerResponse::Refused(why) = shared.handle_peer(0, slot(chunks)) else {
            panic!("a chunk past the catalogue was dispatched");
        };
        assert_eq!(
            why,
            format!("chunk {chunks} is past the catalogue of {chunks} chunks")
        );
        assert_eq!(shared.lock().refused, 1);
        let answer = shared.handle_peer(0, slot(chunks - 1));
        assert!(
            matches!(answer, TrackerResponse::Slot { source: Some(_) }),
            "{answer:?}"
        );
        assert_eq!(
            shared.lock().refused,
            1,
            "a chunk in the catalogue was refused"
        );
    }
}
