//! The interconnected-CDN scenario's logic, without I/O: what the uRR, uCS, dRR and dCS
//! servers and the HAS client call (the servers own sockets and clocks).
//!
//! - `content`, `paths`, `payload`: videos, the URL scheme (documented in `paths`), synthetic
//!   segment bytes.
//! - `placement`, `assign`, `hashing`, `locations`: which chunks the upstream CDN offloads,
//!   which server of each CDN holds each chunk, and the `ChunkLocations` table the CDNs
//!   exchange over the control plane.
//! - `policy`, `routing`, `manifest*`: the paper's UpstreamRR / DirectRR / DirectCS policies —
//!   manifests rewritten per policy and the routers' 302 decisions — and manifest parsers.
//!
//! One lab serves all three policies at once: the policy is a path prefix on manifests
//! (`/p/direct-cs/VIDEO/master.m3u8`), chunks have one canonical path on every host.

pub mod assign;
pub mod content;
pub mod hashing;
pub mod locations;
pub mod manifest;
pub mod manifest_dash;
pub mod manifest_hls;
pub mod paths;
pub mod payload;
pub mod placement;
pub mod policy;
pub mod routing;
pub mod url;
mod xml;

#[cfg(test)]
mod tests;

pub use assign::{assign, Assign, AssignError};
pub use content::{
    paper_video, quality_for_bitrate, segment_size, Catalog, Container, ContentError, Item,
    LookupError, Quality, Video, VideoSpec, PAPER_BITRATES, PAPER_SEGMENT_S,
};
pub use hashing::{HashRing, HashRingError, DEFAULT_VNODES};
pub use locations::{Cdn, ChunkLocations, Location, LocationError, VideoLocations};
pub use manifest::{
    render, ByteRange, InitRef, Manifest, ManifestError, Presentation, Rendition, SegmentRef,
};
pub use paths::{parse_path, Kind, PathError, Request};
pub use payload::{fill, Payload};
pub use placement::{place, Offload, Placement, PlacementError, Popularity};
pub use policy::{ParsePolicyError, Policy};
pub use routing::{route_drr, route_urr, Decision, NotFound, Routers};
pub use url::{resolve, BaseUrl, UrlError};
