//! A hybrid P2P-cloud system's parameters, checked: M ISPs of N_m peers with upload U_m each,
//! J chunks played with probabilities π_j, a peer idle with probability π_0, caches of B
//! chunks.

use super::error::{non_negative, positive, P2pError};
use serde::{Deserialize, Serialize};

/// One ISP's peers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Isp {
    /// N_m, peers in the ISP.
    pub peers: u32,
    /// U_m, what one peer uploads, in chunks per unit time (a unit time plays one chunk).
    pub upload: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct System {
    isps: Vec<Isp>,
    cache: usize,
    idle: f64,
    /// π_1..π_J; they sum to 1 − π_0.
    playing: Vec<f64>,
}

impl System {
    /// A system whose chunk j is played with probability proportional to `popularity[j]`
    /// (scaled so the π_j sum to 1 − `idle`). Refuses no ISP, an ISP without peers, an upload
    /// that is not positive, B = 0, B > J, π_0 outside [0, 1) and popularity weights that are
    /// not positive; each error names the parameter.
    pub fn new(
        isps: Vec<Isp>,
        cache: usize,
        idle: f64,
        popularity: &[f64],
    ) -> Result<System, P2pError> {
        if isps.is_empty() {
            return Err(P2pError::invalid("isps", "at least one ISP is needed"));
        }
        for (m, isp) in isps.iter().enumerate() {
            if isp.peers == 0 {
                return Err(P2pError::invalid(
                    format!("peers of ISP {}", m + 1),
                    "must be at least 1",
                ));
            }
            positive(&format!("upload of ISP {}", m + 1), isp.upload)?;
        }
        let chunks = popularity.len();
        if chunks == 0 {
            return Err(P2pError::invalid("chunks", "at least one chunk is needed"));
        }
        if cache == 0 {
            return Err(P2pError::invalid("cache", "B must be at least 1 chunk"));
        }
        if cache > chunks {
            return Err(P2pError::invalid(
                "cache",
                format!("B = {cache} must not exceed the number of chunks J = {chunks}"),
            ));
        }
        if non_negative("idle", idle)? >= 1.0 {
            return Err(P2pError::invalid(
                "idle",
                format!("π_0 = {idle} must be below 1"),
            ));
        }
        for (j, &w) in popularity.iter().enumerate() {
            positive(&format!("popularity of chunk {}", j + 1), w)?;
        }
        let total: f64 = popularity.iter().sum();
        let playing = popularity
            .iter()
            .map(|w| w / total * (1.0 - idle))
            .collect();
        Ok(System {
            isps,
            cache,
            idle,
            playing,
        })
    }

    pub fn isps(&self) -> &[Isp] {
        &self.isps
    }

    /// B.
    pub fn cache(&self) -> usize {
        self.cache
    }

    /// π_0.
    pub fn idle(&self) -> f64 {
        self.idle
    }

    /// π_1..π_J.
    pub fn playing(&self) -> &[f64] {
        &self.playing
    }

    /// J.
    pub fn chunks(&self) -> usize {
        self.playing.len()
    }

    /// U_m·N_m·(1 − π_0) for every ISP: what its online peers can upload per unit time
    /// (Theorem 2's peer upload; an idle peer serves no one).
    pub fn capacities(&self) -> Vec<f64> {
        (self.isps.iter())
            .map(|isp| isp.upload * f64::from(isp.peers) * (1.0 - self.idle))
            .collect()
    }
}
