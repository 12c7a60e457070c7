//! Manifests: generation for a request (the uRR's `render`) and the format-independent view the
//! parsers produce for the HAS client (`Presentation`).

use std::fmt;

use super::content::{Item, LookupError};
use super::locations::ChunkLocations;
use super::manifest_dash;
use super::manifest_hls;
use super::paths::Request;
use super::policy::Links;
use super::routing::Routers;

pub const HLS_CONTENT_TYPE: &str = "application/vnd.apple.mpegurl";
pub const DASH_CONTENT_TYPE: &str = "application/dash+xml";

/// A generated manifest, ready to be sent with its Content-Type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub content_type: &'static str,
    pub body: String,
}

/// The manifest `request` names, with chunk URLs written for the request's policy (see
/// `policy`). `Ok(None)` when the path names media rather than a manifest.
pub fn render(
    request: &Request<'_>,
    locations: &ChunkLocations,
    routers: &Routers,
) -> Result<Option<Manifest>, LookupError> {
    let (video, item) = locations.resolve(request)?;
    let links = Links::new(request.policy, routers, locations, video);
    let hls = |body| {
        Some(Manifest {
            content_type: HLS_CONTENT_TYPE,
            body,
        })
    };
    Ok(match item {
        Item::Master => hls(manifest_hls::master(&links)),
        Item::MediaPlaylist { quality } => hls(manifest_hls::media(&links, quality)),
        Item::Mpd => Some(Manifest {
            content_type: DASH_CONTENT_TYPE,
            body: manifest_dash::mpd(&links),
        }),
        Item::Init { .. } | Item::Segment { .. } => None,
    })
}

/// A byte range of a resource: `length` bytes from `offset` (HTTP `Range: bytes=o-(o+l-1)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    pub offset: u64,
    pub length: u64,
}

/// An init segment: its URL, and the range of it when it is part of a larger resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitRef {
    pub url: String,
    pub byte_range: Option<ByteRange>,
}

/// One media segment as a manifest lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentRef {
    /// Absolute URL (relative references already resolved against the manifest's URL).
    pub url: String,
    pub byte_range: Option<ByteRange>,
    pub duration_s: f64,
}

/// One quality of a parsed presentation.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendition {
    /// The DASH Representation id; HLS variants have none.
    pub id: Option<String>,
    pub bitrate_bps: u64,
    pub codecs: Option<String>,
    pub init: Option<InitRef>,
    pub segments: Vec<SegmentRef>,
}

/// What a HAS client needs from a manifest: the bitrate ladder and every segment's URL.
#[derive(Debug, Clone, PartialEq)]
pub struct Presentation {
    /// Ascending bitrate (stable for equal bitrates), the order rate adaptation indexes.
    pub renditions: Vec<Rendition>,
}

impl Presentation {
    pub(crate) fn sorted(mut renditions: Vec<Rendition>) -> Presentation {
        renditions.sort_by_key(|r| r.bitrate_bps);
        Presentation { renditions }
    }
}

/// A manifest that could not be read: what and on which line (1-based) when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    pub line: Option<usize>,
    pub message: String,
}

impl ManifestError {
    pub(crate) fn at(line: usize, message: impl Into<String>) -> ManifestError {
        ManifestError {
            line: Some(line),
            message: message.into(),
        }
    }

    pub(crate) fn whole(message: impl Into<String>) -> ManifestError {
        ManifestError {
            line: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ManifestError {}

/// Milliseconds as seconds with exactly three decimals (`2000` → `2.000`), the form both
/// EXTINF and xs:duration take without rounding error.
pub(crate) fn seconds_ms(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}
