//! The paper's three request-routing policies and the chunk URL each one writes into a manifest.
//!
//! - UpstreamRR: every chunk URL points at the uRR, which redirects to a uCS or, for a
//!   downstream chunk, to the dRR (iterative CDNI redirection): the manifest is not rewritten.
//! - DirectRR: each chunk URL points at the request router of the CDN holding it: the uRR for
//!   upstream chunks, the dRR for downstream ones.
//! - DirectCS: each chunk URL points at the content server holding it (a uCS or a dCS), so the
//!   client is never redirected. The paper: "The Manifest File immediately points to the correct
//!   content server, which allows the client to download segments without being redirected" —
//!   so upstream chunks go straight to their uCS too, not via the uRR. (The paper's experiment
//!   places every chunk downstream, where the policies differ.)

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::locations::{Cdn, ChunkLocations, VideoLocations};
use super::paths::{init_path, media_playlist_path, segment_path};
use super::routing::Routers;
use super::url::BaseUrl;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    UpstreamRr,
    DirectRr,
    DirectCs,
}

impl Policy {
    pub const ALL: [Policy; 3] = [Policy::UpstreamRr, Policy::DirectRr, Policy::DirectCs];

    /// The name used in paths, configuration and summaries.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::UpstreamRr => "upstream-rr",
            Policy::DirectRr => "direct-rr",
            Policy::DirectCs => "direct-cs",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy name that is none of `upstream-rr`, `direct-rr`, `direct-cs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsePolicyError(pub String);

impl fmt::Display for ParsePolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown policy {:?} (expected upstream-rr, direct-rr or direct-cs)",
            self.0
        )
    }
}

impl std::error::Error for ParsePolicyError {}

impl FromStr for Policy {
    type Err = ParsePolicyError;

    fn from_str(s: &str) -> Result<Policy, ParsePolicyError> {
        Policy::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| ParsePolicyError(s.to_string()))
    }
}

/// The absolute URLs a manifest of one video lists under one policy. Indices passed to its
/// methods come from iterating the video, never from a request.
pub(crate) struct Links<'a> {
    policy: Policy,
    /// Whether the manifest was asked for with a `/p/POLICY` prefix, which its media playlist
    /// URLs keep (so an unprefixed master leads to unprefixed, unrewritten playlists).
    prefixed: bool,
    routers: &'a Routers,
    locations: &'a ChunkLocations,
    video: &'a VideoLocations,
}

impl<'a> Links<'a> {
    /// `request_policy` is the request's `/p/POLICY` prefix (`None`: UpstreamRR, unprefixed).
    pub(crate) fn new(
        request_policy: Option<Policy>,
        routers: &'a Routers,
        locations: &'a ChunkLocations,
        video: &'a VideoLocations,
    ) -> Links<'a> {
        Links {
            policy: request_policy.unwrap_or(Policy::UpstreamRr),
            prefixed: request_policy.is_some(),
            routers,
            locations,
            video,
        }
    }

    pub(crate) fn video(&self) -> &'a VideoLocations {
        self.video
    }

    /// The media playlist of quality `quality` (an index into the video's qualities), served
    /// by the uRR like the master playlist.
    pub(crate) fn media_playlist_url(&self, quality: usize) -> String {
        let policy = self.prefixed.then_some(self.policy);
        let video = self.video.video();
        let id = &video.qualities()[quality].id;
        self.routers
            .urr
            .join(&media_playlist_path(policy, video.name(), id))
    }

    /// Segment `index` of quality `quality`, where the policy sends the client for it.
    pub(crate) fn segment_url(&self, quality: usize, index: usize) -> String {
        let video = self.video.video();
        let path = segment_path(
            video.name(),
            &video.qualities()[quality].id,
            index,
            video.container(),
        );
        self.host(quality, index).join(&path)
    }

    /// The init segment of quality `quality`; it lives with the quality's first segment.
    pub(crate) fn init_url(&self, quality: usize) -> String {
        let video = self.video.video();
        self.host(quality, 0)
            .join(&init_path(video.name(), &video.qualities()[quality].id))
    }

    fn host(&self, quality: usize, index: usize) -> &'a BaseUrl {
        let location = self.video.location(quality, index);
        match (self.policy, location.cdn) {
            (Policy::UpstreamRr, _) | (Policy::DirectRr, Cdn::Upstream) => &self.routers.urr,
            (Policy::DirectRr, Cdn::Downstream) => &self.routers.drr,
            (Policy::DirectCs, _) => self.locations.server_of(location),
        }
    }
}
