//! The peer-level simulation: every peer plays chunks under Lemma 3's process and caches them
//! with LRU; a tracker dispatches each download to an ISP by the dispatch matrix; each ISP's
//! peers serve what Theorem 1's max flow allows within their upload, and the cloud the rest.
//! Seeded and deterministic.
//!
//! Time is slotted: one slot plays one chunk. In each slot a peer is idle with probability π_0
//! or plays chunk j with probability π_j (independently of the past, as Lemma 3 assumes). A
//! chunk it caches is replayed from its cache; any other is downloaded in that slot, from the
//! peers of the ISP the tracker picks or from the cloud, and then cached. Only peers playing
//! in the slot upload (an idle peer is offline), each ⌊U_m⌋ or ⌈U_m⌉ chunks so that the mean
//! is U_m. Caches are those at the start of the slot.

use super::cache::PeerCache;
use super::error::P2pError;
use super::flow::{served, Peer};
use super::play::Plays;
use super::system::System;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use rand_distr::weighted::WeightedAliasIndex;
use rand_distr::Distribution;

#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// a_lm, `[l][m]`: each row the shares of ISP l's downloads sent to each ISP's peers.
    pub dispatch: Vec<Vec<f64>>,
    /// Slots simulated, the first `warmup` of them not counted.
    pub slots: u64,
    pub warmup: u64,
    /// Caches are counted every this many measured slots (for ρ_j).
    pub sample_every: u64,
    pub seed: u64,
}

/// Means per slot over the measured slots.
#[derive(Debug, Clone, PartialEq)]
pub struct SimResult {
    /// r_l: downloads requested by ISP l's peers.
    pub requests: Vec<f64>,
    /// Upload slots offered by ISP m's playing peers (U_m·N_m·(1 − π_0) in expectation).
    pub capacities: Vec<f64>,
    /// Downloads the cloud served (peers could not).
    pub cloud_bandwidth: f64,
    /// Downloads served by a peer of another ISP than the requester's.
    pub inter_isp_traffic: f64,
    /// L_m: of the downloads sent to ISP m, the share its peers could not serve.
    pub miss: Vec<f64>,
    /// ρ_j: the share of all peers caching chunk j.
    pub rho: Vec<f64>,
}

/// A playing peer's chunk download in one slot.
struct Download {
    peer: usize,
    from_isp: usize,
    chunk: u32,
}

/// Runs the simulation of `system` under `config`.
pub fn simulate(system: &System, config: &SimConfig) -> Result<SimResult, P2pError> {
    let isps = system.isps().len();
    let chunks = system.chunks();
    if config.dispatch.len() != isps || config.dispatch.iter().any(|r| r.len() != isps) {
        return Err(P2pError::invalid(
            "dispatch",
            format!("must be {isps} rows of {isps} shares"),
        ));
    }
    if config.slots <= config.warmup || config.sample_every == 0 {
        return Err(P2pError::invalid(
            "slots",
            "must exceed the warm-up, with a sampling interval of at least 1",
        ));
    }
    let invalid_dispatch = |e| P2pError::invalid("dispatch", format!("{e}"));
    let route: Vec<WeightedAliasIndex<f64>> = (config.dispatch.iter())
        .map(|row| WeightedAliasIndex::new(row.clone()).map_err(invalid_dispatch))
        .collect::<Result<_, _>>()?;
    let plays = Plays::new(system.idle(), system.playing())?;

    let isp_of: Vec<usize> = (system.isps().iter().enumerate())
        .flat_map(|(m, isp)| std::iter::repeat_n(m, isp.peers as usize))
        .collect();
    let mut caches: Vec<PeerCache> = isp_of
        .iter()
        .map(|_| PeerCache::new(system.cache()))
        .collect();
    let mut rng = SmallRng::seed_from_u64(config.seed);

    let mut requests = vec![0u64; isps];
    let mut offered = vec![0u64; isps];
    let mut sent = vec![0u64; isps];
    let mut missed = vec![0u64; isps];
    let mut cloud = 0u64;
    let mut inter = 0.0f64;
    let mut cached = vec![0u64; chunks];
    let mut samples = 0u64;

    let mut online: Vec<Vec<usize>> = vec![Vec::new(); isps];
    let mut downloads: Vec<Download> = Vec::new();
    for slot in 0..config.slots {
        let measured = slot >= config.warmup;
        online.iter_mut().for_each(Vec::clear);
        downloads.clear();
        for (peer, &isp) in isp_of.iter().enumerate() {
            let Some(chunk) = plays.draw(&mut rng) else {
                continue;
            };
            online[isp].push(peer);
            if !caches[peer].play_cached(chunk) {
                downloads.push(Download {
                    peer,
                    from_isp: isp,
                    chunk,
                });
            }
        }
        // Where each download is sent, and of those, how many come from another ISP.
        let mut asked = vec![vec![0u64; chunks]; isps];
        let mut remote = vec![vec![0u64; chunks]; isps];
        for d in &downloads {
            let to = route[d.from_isp].sample(&mut rng);
            asked[to][d.chunk as usize] += 1;
            if to != d.from_isp {
                remote[to][d.chunk as usize] += 1;
            }
        }
        for m in 0..isps {
            let upload = system.isps()[m].upload;
            let peers: Vec<Peer> = (online[m].iter())
                .map(|&p| Peer {
                    chunks: caches[p].chunks().collect(),
                    slots: upload.floor() as u64 + u64::from(rng.random_bool(upload.fract())),
                })
                .collect();
            let flow = served(&asked[m], &peers);
            if measured {
                let total: u64 = asked[m].iter().sum();
                sent[m] += total;
                missed[m] += total - flow.total;
                cloud += total - flow.total;
                offered[m] += peers.iter().map(|p| p.slots).sum::<u64>();
                // A chunk's served requests are shared between local and remote requesters in
                // proportion (the flow does not tell one request of a chunk from another).
                for (j, &s) in flow.per_chunk.iter().enumerate().filter(|(_, &s)| s > 0) {
                    inter += s as f64 * remote[m][j] as f64 / asked[m][j] as f64;
                }
            }
        }
        for d in &downloads {
            if measured {
                requests[d.from_isp] += 1;
            }
            caches[d.peer].store(d.chunk);
        }
        if measured && (slot - config.warmup).is_multiple_of(config.sample_every) {
            samples += 1;
            for cache in &caches {
                for c in cache.chunks() {
                    cached[c as usize] += 1;
                }
            }
        }
    }
    let slots = (config.slots - config.warmup) as f64;
    let per_slot = |v: &[u64]| v.iter().map(|&x| x as f64 / slots).collect::<Vec<_>>();
    let peers = isp_of.len() as f64;
    Ok(SimResult {
        requests: per_slot(&requests),
        capacities: per_slot(&offered),
        cloud_bandwidth: cloud as f64 / slots,
        inter_isp_traffic: inter / slots,
        miss: (sent.iter().zip(&missed))
            .map(|(&s, &l)| if s == 0 { 0.0 } else { l as f64 / s as f64 })
            .collect(),
        rho: (cached.iter())
            .map(|&c| c as f64 / (samples as f64 * peers))
            .collect(),
    })
}
