//! The chunk-location exchange between the CDNs (CDNI style), as typed control-plane messages,
//! and the sans-IO steps around them.
//!
//! ```text
//! uRR ──DrrRequest::Offload{upstream servers, assign, videos + placements}──▶ dRR
//!                                      dRR ──DcsRequest::Hold(Assignment)──▶ each dCS
//!                                      dRR ◀──DcsResponse::Holding{chunks}── each dCS
//! uRR ◀──DrrResponse::Locations(ChunkLocations)── dRR
//! ```
//!
//! The uRR decides *which* chunk indices go downstream (placement); the dRR decides *which dCS*
//! holds each (its own assignment strategy) and answers with the whole table, which the uRR
//! checks against what it offered before routing with it. A dCS learns the whole table and its
//! own index in it, so it knows every video (for synthetic payloads) and which chunks are its.
//! Each service refuses callers other than the one node configured to call it.

use serde::{Deserialize, Serialize};

use super::config::sized_assign;
use super::config::UrrConfig;
use crate::cdn::hashing::{hash64, mix64};
use crate::cdn::{
    place, Assign, BaseUrl, Cdn, ChunkLocations, Location, Placement, Popularity, Video,
};

/// What the dRR's control service is asked (only by the configured uRR).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DrrRequest {
    /// The upstream CDN offloads these chunks; answer where each will be.
    Offload(OffloadRequest),
}

/// The upstream CDN's offer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffloadRequest {
    /// The uCS origins, so the dRR's table is the complete one both routers use.
    pub upstream_servers: Vec<BaseUrl>,
    /// How the uRR spreads the chunks it keeps over `upstream_servers`.
    pub upstream_assign: Assign,
    pub videos: Vec<OffloadedVideo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffloadedVideo {
    pub video: Video,
    /// Which chunk indices (all qualities) go downstream.
    pub placement: Placement,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DrrResponse {
    /// Every chunk's location: offloaded ones on the dCS that now holds them.
    Locations(ChunkLocations),
    /// The offer could not be carried out (bad offer, a dCS unreachable). Worth retrying.
    Failed(String),
}

/// What a dCS's control service is asked (only by the configured dRR).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DcsRequest {
    /// Hold and serve the chunks at `Location { Downstream, server }` of the table.
    Hold(Assignment),
}

/// A dCS's share of the downstream CDN: the whole table and its own server index in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    pub locations: ChunkLocations,
    pub server: u32,
}

impl Assignment {
    /// This dCS's location in the table.
    pub fn location(&self) -> Location {
        Location {
            cdn: Cdn::Downstream,
            server: self.server,
        }
    }

    /// How many chunks (quality × index) the dCS holds.
    pub fn chunks(&self) -> u64 {
        let mine = self.location();
        self.locations
            .videos()
            .map(|v| {
                v.chunks_in(Cdn::Downstream)
                    .filter(|&(q, i)| v.get(q, i) == Some(mine))
                    .count() as u64
            })
            .sum()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DcsResponse {
    Holding {
        chunks: u64,
    },
    /// The assignment is unusable (its server index is not in the table).
    Failed(String),
}

/// The uRR's offer for its configuration: each video placed with `offload`, under a seed that
/// mixes `offload_seed` with the video's name (so videos differ, runs repeat).
pub fn offload_request(config: &UrrConfig) -> Result<OffloadRequest, String> {
    let videos = config
        .videos
        .iter()
        .map(|video| {
            let seed = mix64(config.offload_seed ^ hash64(video.name().as_bytes()));
            let placement = place(
                &config.offload,
                video.segments(),
                &Popularity::ZipfRank,
                seed,
            )
            .map_err(|e| format!("video {:?}: {e}", video.name()))?;
            Ok(OffloadedVideo {
                video: video.clone(),
                placement,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(OffloadRequest {
        upstream_servers: config.upstream.clone(),
        upstream_assign: config.assign.clone(),
        videos,
    })
}

/// The table for `request` with offloaded chunks spread over `downstream` by `assign` (the
/// dRR's step; with no downstream servers, the uRR's table when nothing is offloaded).
pub fn build_locations(
    request: &OffloadRequest,
    downstream: &[BaseUrl],
    assign: &Assign,
) -> Result<ChunkLocations, String> {
    let mut table = ChunkLocations::new(request.upstream_servers.clone(), downstream.to_vec())
        .map_err(|e| e.to_string())?;
    let upstream_assign = sized_assign(&request.upstream_assign, request.upstream_servers.len());
    let downstream_assign = sized_assign(assign, downstream.len());
    for offered in &request.videos {
        table
            .add_video(
                offered.video.clone(),
                &offered.placement,
                &upstream_assign,
                &downstream_assign,
            )
            .map_err(|e| e.to_string())?;
    }
    Ok(table)
}

/// Checks the dRR's answer against the offer: the same upstream servers and videos, exactly
/// the offered indices downstream, and every upstream chunk where the uRR itself puts it. So a
/// faulty or stale dRR cannot make the uRR route somewhere it did not mean to.
pub fn check_locations(request: &OffloadRequest, table: &ChunkLocations) -> Result<(), String> {
    if table.upstream_servers() != request.upstream_servers.as_slice() {
        return Err("the answer lists other upstream servers than offered".into());
    }
    let ours = build_locations(request, table.downstream_servers(), &Assign::RoundRobin)?;
    if table.videos().count() != request.videos.len() {
        return Err(format!(
            "the answer has {} videos, the offer {}",
            table.videos().count(),
            request.videos.len()
        ));
    }
    for offered in &request.videos {
        let name = offered.video.name();
        let (Some(theirs), Some(mine)) = (table.video(name), ours.video(name)) else {
            return Err(format!("the answer lacks video {name:?}"));
        };
        if theirs.video() != &offered.video {
            return Err(format!("the answer describes video {name:?} differently"));
        }
        for q in 0..offered.video.qualities().len() {
            for i in 0..offered.video.segments() {
                let (Some(got), Some(want)) = (theirs.get(q, i), mine.get(q, i)) else {
                    return Err(format!("video {name:?}: chunk ({q}, {i}) is missing"));
                };
                let fine = match want.cdn {
                    Cdn::Upstream => got == want,
                    Cdn::Downstream => got.cdn == Cdn::Downstream,
                };
                if !fine {
                    return Err(format!(
                        "video {name:?}: chunk {i} of quality {q} is at {got:?}, offered {:?}",
                        want.cdn
                    ));
                }
            }
        }
    }
    Ok(())
}
