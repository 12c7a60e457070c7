//! The fog roles' control-plane messages (QUIC, bincode 2, lab certificates): FDNs register
//! their caches with the cloud's metadata manager and read the metadata back (only the FDNs the
//! cloud is configured with may); the cloud's fog monitor sends heartbeats to the FDNs (only the
//! FDN's configured cloud may).

use serde::{Deserialize, Serialize};

/// A segment: (video, index).
pub type SegmentId = (u32, u32);

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum CloudRequest {
    /// The calling FDN's pre-processed segments. Which FDN registers is the caller's
    /// certificate name, never a field here, so no FDN can register as another; `index` is
    /// the one its config gives it, which the cloud refuses unless it is the caller's place
    /// in the cloud's `fdns` (an FDN with another's index would take its placement and
    /// mistake it for itself).
    Register { index: u32, cached: Vec<SegmentId> },
    /// Every FDN the monitor holds up, with its cached segments.
    Metadata,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum CloudResponse {
    Registered,
    Metadata(Metadata),
    Refused(String),
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Metadata {
    pub fdns: Vec<FdnEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FdnEntry {
    pub index: u32,
    pub name: String,
    pub up: bool,
    /// The monitor's heartbeat round trips to it (mean, sd), seconds.
    pub rtt_mean_s: f64,
    pub rtt_sd_s: f64,
    /// Empty while it is down: its segments leave the metadata.
    pub cached: Vec<SegmentId>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum FdnRequest {
    Heartbeat,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum FdnResponse {
    Alive,
}
