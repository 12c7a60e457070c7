//! Control-plane messages of the hybrid P2P-cloud family (QUIC, bincode 2, lab certificates):
//! peers talk to the tracker, which knows each caller by its certificate's node name — a peer
//! can only speak for itself.

use serde::{Deserialize, Serialize};

/// Peer → tracker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TrackerRequest {
    /// Once a slot: whether the peer plays in it (an idle peer is offline), and the chunk it
    /// must download for a slot ahead, if any.
    Slot { playing: bool, want: Option<u32> },
    /// Every chunk the peer caches now (after a download), at most B: the tracker replaces
    /// what it knew, so a report lost on the way is made good by the next.
    Cached { chunks: Vec<u32> },
    /// The peer leaves the system (churn): it serves no one from now on.
    Leave,
}

/// Where a download comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Source {
    /// A peer, by node name; `same_isp`: in the requester's ISP.
    Peer { name: String, same_isp: bool },
    /// The cloud CDN.
    Cloud,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TrackerResponse {
    /// The answer to `Slot`: where to download `want` from (None: nothing wanted).
    Slot {
        source: Option<Source>,
    },
    Noted,
    Refused(String),
}
