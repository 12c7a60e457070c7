//! The tracker's decisions, sans-IO: which peer serves a chunk download, by the dispatch policy
//! over what the peers report. The real tracker (`p2p-tracker`) feeds it messages and the
//! clock; the decisions are the model's: ISP l's download goes to ISP m with probability a_lm,
//! to a peer there that caches the chunk, is playing (an idle peer is offline) and has upload
//! left, or, when none has, to the cloud — a miss of ISP m.
//!
//! Upload is a token bucket per peer: U_m chunks per slot, holding at most max(1, U_m), one
//! token per download sent to the peer. The dispatch is recomputed every slot from what the
//! tracker measures: r_l, downloads asked by ISP l's peers per slot, and C_m = U_m × ISP m's
//! playing peers, each an exponentially weighted moving average over slots.

use super::dispatch::Policy;
use super::error::P2pError;
use rand::{Rng, RngExt};
use rand_distr::weighted::WeightedAliasIndex;
use rand_distr::Distribution;
use serde::Serialize;
use std::collections::BTreeSet;

/// The weight of the latest slot in the moving averages of r_l and C_m (about ten slots).
const SMOOTHING: f64 = 0.1;
/// A peer not heard from for this many slots is offline (its messages are one a slot).
const SILENCE_SLOTS: f64 = 2.5;
/// A peer reports once a slot; this many reports may come at once (after its link or the
/// tracker held some up), more are refused: each report's download counts in its ISP's r_l
/// and can take an upload token.
const REPORT_BURST: f64 = 4.0;

#[derive(Debug, Clone, PartialEq)]
pub struct TrackerParams {
    /// The ISP (0-based) of every peer, peer i the i-th.
    pub isp_of: Vec<usize>,
    /// U_m, chunks per slot, of each ISP's peers.
    pub upload: Vec<f64>,
    /// J.
    pub chunks: usize,
    /// B: a peer reporting more cached chunks is refused.
    pub cache: usize,
    pub policy: Policy,
    /// The slot's length in seconds.
    pub slot_s: f64,
}

/// Where a download goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Choice {
    /// Peer i serves it.
    Peer(usize),
    /// The cloud: no peer of the chosen ISP could.
    Cloud,
}

/// A download's dispatch: the ISP chosen and who serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub isp: usize,
    pub choice: Choice,
}

#[derive(Debug, Clone, Default)]
struct PeerState {
    cached: BTreeSet<u32>,
    tokens: f64,
    /// When the tokens were last refilled, and when the peer was last heard from.
    refilled_s: f64,
    heard_s: Option<f64>,
    /// Slot reports it may still make now (see `REPORT_BURST`).
    reports: f64,
    playing: bool,
    gone: bool,
}

/// What the tracker decided, for its record.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    /// `[l][m]`: ISP l's downloads sent to a peer of ISP m.
    pub to_peers: Vec<Vec<u64>>,
    /// `[l][m]`: ISP l's downloads sent to ISP m that went to the cloud (a miss of m).
    pub to_cloud: Vec<Vec<u64>>,
}

pub struct Tracker {
    params: TrackerParams,
    peers: Vec<PeerState>,
    /// Per ISP: the members' indices.
    members: Vec<Vec<usize>>,
    routes: Vec<WeightedAliasIndex<f64>>,
    dispatch: Vec<Vec<f64>>,
    /// Downloads asked per ISP since the last slot.
    asked: Vec<u64>,
    requests: Vec<f64>,
    capacities: Vec<f64>,
    totals: Totals,
}

impl Tracker {
    /// Checks the parameters: every ISP has peers and positive upload, peers name ISPs that
    /// exist, J ≥ B ≥ 1, a slot of at least a millisecond.
    pub fn new(params: TrackerParams) -> Result<Tracker, P2pError> {
        let isps = params.upload.len();
        if isps == 0 {
            return Err(P2pError::invalid("upload", "at least one ISP is needed"));
        }
        for (m, &u) in params.upload.iter().enumerate() {
            super::error::positive(&format!("upload of ISP {}", m + 1), u)?;
        }
        let mut members = vec![Vec::new(); isps];
        for (i, &m) in params.isp_of.iter().enumerate() {
            let Some(list) = members.get_mut(m) else {
                return Err(P2pError::invalid(
                    format!("ISP of peer {}", i + 1),
                    format!("ISP {} does not exist ({isps} ISPs)", m + 1),
                ));
            };
            list.push(i);
        }
        if let Some(m) = members.iter().position(Vec::is_empty) {
            return Err(P2pError::invalid(
                format!("peers of ISP {}", m + 1),
                "must be at least 1",
            ));
        }
        if params.cache == 0 || params.cache > params.chunks {
            return Err(P2pError::invalid(
                "cache",
                format!(
                    "B = {} must be 1 to the number of chunks J = {}",
                    params.cache, params.chunks
                ),
            ));
        }
        if !(params.slot_s.is_finite() && params.slot_s >= 1e-3) {
            return Err(P2pError::invalid("slot", "must be at least 1ms"));
        }
        let capacities: Vec<f64> = (params.upload.iter().zip(&members))
            .map(|(u, list)| u * list.len() as f64)
            .collect();
        let peer = PeerState {
            reports: REPORT_BURST,
            ..PeerState::default()
        };
        let peers = vec![peer; params.isp_of.len()];
        let mut tracker = Tracker {
            peers,
            members,
            routes: Vec::new(),
            dispatch: Vec::new(),
            asked: vec![0; isps],
            requests: vec![0.0; isps],
            capacities,
            totals: Totals {
                to_peers: vec![vec![0; isps]; isps],
                to_cloud: vec![vec![0; isps]; isps],
            },
            params,
        };
        tracker.redispatch()?;
        Ok(tracker)
    }

    /// The dispatch a_lm now, `[l][m]`.
    pub fn dispatch(&self) -> &[Vec<f64>] {
        &self.dispatch
    }

    /// r_l and C_m as the tracker measures them now.
    pub fn requests(&self) -> &[f64] {
        &self.requests
    }

    pub fn capacities(&self) -> &[f64] {
        &self.capacities
    }

    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// Peer `peer` says, at `now_s`, whether it plays in this slot. Refused (and nothing
    /// changed) for a peer reporting more often than once a slot allows ([`REPORT_BURST`]):
    /// only then may its download be dispatched.
    pub fn heard(&mut self, peer: usize, now_s: f64, playing: bool) -> Result<(), String> {
        let slot_s = self.params.slot_s;
        let state = &mut self.peers[peer];
        let since = state.heard_s.map_or(0.0, |t| (now_s - t).max(0.0));
        let reports = (state.reports + since / slot_s).min(REPORT_BURST);
        if reports < 1.0 {
            return Err(format!(
                "more than {REPORT_BURST} slot reports within {REPORT_BURST} slots"
            ));
        }
        state.reports = reports - 1.0;
        self.refill(peer, now_s);
        let state = &mut self.peers[peer];
        state.heard_s = Some(now_s);
        state.playing = playing;
        Ok(())
    }

    /// Peer `peer` left: it serves no one from now on.
    pub fn left(&mut self, peer: usize) {
        let state = &mut self.peers[peer];
        state.gone = true;
        state.playing = false;
        state.cached.clear();
    }

    /// Peer `peer` caches `chunks` now, all it caches: what the tracker knew of it is
    /// replaced, so a report lost on the way is made good by the next. Refused (and nothing
    /// changed) for a chunk past J, more than B chunks, or a peer that left.
    pub fn cached(&mut self, peer: usize, chunks: &[u32]) -> Result<(), String> {
        if let Some(chunk) = chunks.iter().find(|&&c| c as usize >= self.params.chunks) {
            return Err(format!(
                "chunk {chunk} is past the catalogue's {} chunks",
                self.params.chunks
            ));
        }
        let cache = self.params.cache;
        let state = &mut self.peers[peer];
        if state.gone {
            return Err("the peer left".into());
        }
        let cached: BTreeSet<u32> = chunks.iter().copied().collect();
        if cached.len() > cache {
            return Err(format!(
                "{} chunks are more than a cache of B = {cache} holds",
                cached.len()
            ));
        }
        state.cached = cached;
        Ok(())
    }

    /// Dispatches peer `peer`'s download of `chunk` at `now_s`.
    pub fn locate(&mut self, peer: usize, chunk: u32, now_s: f64, rng: &mut impl Rng) -> Decision {
        let from = self.params.isp_of[peer];
        self.asked[from] += 1;
        let isp = self.routes[from].sample(rng);
        let mut candidates = Vec::new();
        for i in 0..self.members[isp].len() {
            let p = self.members[isp][i];
            if p == peer {
                continue;
            }
            self.refill(p, now_s);
            let state = &self.peers[p];
            let online = state
                .heard_s
                .is_some_and(|t| now_s - t <= SILENCE_SLOTS * self.params.slot_s);
            if online
                && state.playing
                && !state.gone
                && state.tokens >= 1.0
                && state.cached.contains(&chunk)
            {
                candidates.push(p);
            }
        }
        if candidates.is_empty() {
            self.totals.to_cloud[from][isp] += 1;
            return Decision {
                isp,
                choice: Choice::Cloud,
            };
        }
        let p = candidates[rng.random_range(0..candidates.len())];
        self.peers[p].tokens -= 1.0;
        self.totals.to_peers[from][isp] += 1;
        Decision {
            isp,
            choice: Choice::Peer(p),
        }
    }

    /// Ends a slot at `now_s`: folds its downloads and playing peers into r_l and C_m and
    /// recomputes the dispatch.
    pub fn end_slot(&mut self, now_s: f64) -> Result<(), P2pError> {
        let slot = self.params.slot_s;
        for m in 0..self.asked.len() {
            let playing = (self.members[m].iter())
                .filter(|&&p| {
                    let s = &self.peers[p];
                    s.playing
                        && !s.gone
                        && s.heard_s.is_some_and(|t| now_s - t <= SILENCE_SLOTS * slot)
                })
                .count();
            let capacity = self.params.upload[m] * playing as f64;
            self.requests[m] += SMOOTHING * (self.asked[m] as f64 - self.requests[m]);
            self.capacities[m] += SMOOTHING * (capacity - self.capacities[m]);
            self.asked[m] = 0;
        }
        self.redispatch()
    }

    fn redispatch(&mut self) -> Result<(), P2pError> {
        // An ISP whose peers are all gone has no upload; the policies need it positive.
        let capacities: Vec<f64> = self.capacities.iter().map(|c| c.max(1e-9)).collect();
        let dispatch = self.params.policy.matrix(&self.requests, &capacities)?;
        self.routes = (dispatch.iter())
            .map(|row| {
                WeightedAliasIndex::new(row.iter().map(|a| a.max(0.0)).collect())
                    .map_err(|e| P2pError::invalid("dispatch", e.to_string()))
            })
            .collect::<Result<_, _>>()?;
        self.dispatch = dispatch;
        Ok(())
    }

    fn refill(&mut self, peer: usize, now_s: f64) {
        let upload = self.params.upload[self.params.isp_of[peer]];
        let state = &mut self.peers[peer];
        let elapsed = (now_s - state.refilled_s).max(0.0);
        state.tokens = (state.tokens + upload * elapsed / self.params.slot_s).min(upload.max(1.0));
        state.refilled_s = now_s;
    }
}
