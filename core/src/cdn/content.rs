//! The content model: a video in several qualities cut into equal-length segments, and the
//! lookup of a parsed request path in it (unknown video, quality or segment → `LookupError`,
//! which servers answer with 404).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::paths::{Kind, Request};

/// Most segments a video may have; larger indices in paths are rejected before any lookup
/// (a million 2-second segments is 23 days of video).
pub const MAX_SEGMENTS: usize = 1_000_000;
/// Most qualities per video: ladders have a handful; this bounds manifest sizes.
pub const MAX_QUALITIES: usize = 32;
/// Longest video name or quality id.
pub const MAX_NAME_LEN: usize = 64;
/// The first path segment reserved for the policy prefix (`/p/POLICY/...`), so it cannot be a
/// video name.
pub const POLICY_PREFIX: &str = "p";

/// How segments are packaged, which decides their extension and whether an init segment exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Container {
    /// MPEG-2 TS (`seg-NNNNN.ts`): self-initializing, HLS version 3, the default.
    #[default]
    Ts,
    /// Fragmented MP4 (`seg-NNNNN.m4s` plus `init.mp4` per quality): what dash.js needs.
    Fmp4,
}

impl Container {
    /// The segment file extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Container::Ts => "ts",
            Container::Fmp4 => "m4s",
        }
    }
}

/// One rung of the bitrate ladder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quality {
    /// Its directory name in paths (`/VIDEO/ID/...`), e.g. `500k`.
    pub id: String,
    /// Encoded bitrate; synthetic segments are exactly `bitrate × duration / 8` bytes.
    pub bitrate_bps: u64,
    /// RFC 6381 codecs string for real media (`avc1.64001f`); players such as dash.js need it.
    #[serde(default)]
    pub codecs: Option<String>,
}

/// A video as written in configuration files and control-plane messages; `Video::new`
/// validates it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VideoSpec {
    pub name: String,
    pub segment_duration_s: f64,
    pub qualities: Vec<Quality>,
    pub segments: usize,
    #[serde(default)]
    pub container: Container,
}

/// A validated video: names are safe as path segments, the duration is a whole number of
/// milliseconds (so sizes and manifest durations are exact), and indices are bounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "VideoSpec", into = "VideoSpec")]
pub struct Video {
    name: String,
    segment_duration_ms: u64,
    qualities: Vec<Quality>,
    segments: usize,
    container: Container,
}

/// Why a video description was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentError(pub String);

impl fmt::Display for ContentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ContentError {}

/// True for names usable as one path segment: 1–64 ASCII letters, digits, `-`, `_` or `.`,
/// starting with a letter or digit (so never `.`, `..` or a hidden file).
pub fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_NAME_LEN
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Codecs strings go inside quoted HLS attributes and XML attributes: allow only the
/// characters RFC 6381 strings use.
fn valid_codecs(codecs: &str) -> bool {
    !codecs.is_empty()
        && codecs.len() <= 256
        && codecs
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b',' | b'-' | b'_' | b' '))
}

/// Exact synthetic segment size: `bitrate × duration / 8` bytes, rounded down when the product
/// is not a whole number of bytes.
pub fn segment_size(bitrate_bps: u64, duration_ms: u64) -> u64 {
    let bits_times_1000 = u128::from(bitrate_bps) * u128::from(duration_ms);
    // At most 100 Gbit/s × 600 s / 8 = 7.5e12: fits in u64.
    (bits_times_1000 / 8000) as u64
}

impl Video {
    /// Validates `spec`; each problem is reported with the video's name.
    pub fn new(spec: VideoSpec) -> Result<Video, ContentError> {
        let name = &spec.name;
        let err = |msg: String| Err(ContentError(format!("video {name:?}: {msg}")));
        if !valid_name(name) {
            return err("name must be 1-64 letters, digits, '-', '_' or '.', starting with a letter or digit".into());
        }
        if name == POLICY_PREFIX {
            return err(format!("the name {POLICY_PREFIX:?} is reserved for the policy prefix /{POLICY_PREFIX}/POLICY/"));
        }
        let ms = spec.segment_duration_s * 1000.0;
        if !ms.is_finite()
            || !(1.0..=600_000.0).contains(&ms.round())
            || (ms - ms.round()).abs() > 1e-6
        {
            return err(format!(
                "segment_duration_s = {} must be a whole number of milliseconds between 0.001 and 600",
                spec.segment_duration_s
            ));
        }
        if spec.segments == 0 || spec.segments > MAX_SEGMENTS {
            return err(format!(
                "segments = {} must be between 1 and {MAX_SEGMENTS}",
                spec.segments
            ));
        }
        if spec.qualities.is_empty() || spec.qualities.len() > MAX_QUALITIES {
            return err(format!(
                "needs 1 to {MAX_QUALITIES} qualities, has {}",
                spec.qualities.len()
            ));
        }
        for (i, q) in spec.qualities.iter().enumerate() {
            if !valid_name(&q.id) {
                return err(format!("quality id {:?} must be 1-64 letters, digits, '-', '_' or '.', starting with a letter or digit", q.id));
            }
            if spec.qualities[..i].iter().any(|other| other.id == q.id) {
                return err(format!("quality id {:?} appears twice", q.id));
            }
            if q.bitrate_bps == 0 || q.bitrate_bps > 100_000_000_000 {
                return err(format!(
                    "quality {:?}: bitrate_bps = {} must be between 1 and 1e11",
                    q.id, q.bitrate_bps
                ));
            }
            if let Some(codecs) = &q.codecs {
                if !valid_codecs(codecs) {
                    return err(format!(
                        "quality {:?}: codecs {codecs:?} has characters outside RFC 6381",
                        q.id
                    ));
                }
            }
        }
        Ok(Video {
            segment_duration_ms: ms.round() as u64,
            name: spec.name,
            qualities: spec.qualities,
            segments: spec.segments,
            container: spec.container,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn segment_duration_ms(&self) -> u64 {
        self.segment_duration_ms
    }

    /// The qualities in configuration order (manifests list them in this order).
    pub fn qualities(&self) -> &[Quality] {
        &self.qualities
    }

    pub fn segments(&self) -> usize {
        self.segments
    }

    pub fn container(&self) -> Container {
        self.container
    }

    /// Total duration in milliseconds (every segment has the same duration).
    pub fn duration_ms(&self) -> u64 {
        self.segment_duration_ms * self.segments as u64
    }

    /// The position of quality `id` in `qualities()`.
    pub fn quality_index(&self, id: &str) -> Option<usize> {
        self.qualities.iter().position(|q| q.id == id)
    }

    /// Size in bytes of every segment of quality `quality` (an index into `qualities()`), or
    /// `None` for an index out of range.
    pub fn segment_size(&self, quality: usize) -> Option<u64> {
        let q = self.qualities.get(quality)?;
        Some(segment_size(q.bitrate_bps, self.segment_duration_ms))
    }

    /// What `kind` names in this video: quality and segment indices checked against it.
    pub fn item(&self, kind: &Kind<'_>) -> Result<Item, LookupError> {
        let quality = |id: &str| {
            self.quality_index(id)
                .ok_or_else(|| LookupError::UnknownQuality {
                    video: self.name.clone(),
                    quality: id.to_string(),
                })
        };
        match *kind {
            Kind::Master => Ok(Item::Master),
            Kind::Mpd => Ok(Item::Mpd),
            Kind::MediaPlaylist { quality: id } => Ok(Item::MediaPlaylist {
                quality: quality(id)?,
            }),
            Kind::Init { quality: id } => {
                let quality = quality(id)?;
                if self.container != Container::Fmp4 {
                    return Err(LookupError::NoInitSegment {
                        video: self.name.clone(),
                    });
                }
                Ok(Item::Init { quality })
            }
            Kind::Segment {
                quality: id,
                index,
                container,
            } => {
                let quality = quality(id)?;
                if container != self.container {
                    return Err(LookupError::WrongExtension {
                        video: self.name.clone(),
                        expected: self.container.extension(),
                    });
                }
                if index >= self.segments {
                    return Err(LookupError::SegmentOutOfRange {
                        video: self.name.clone(),
                        index,
                        segments: self.segments,
                    });
                }
                Ok(Item::Segment { quality, index })
            }
        }
    }
}

impl TryFrom<VideoSpec> for Video {
    type Error = ContentError;

    fn try_from(spec: VideoSpec) -> Result<Video, ContentError> {
        Video::new(spec)
    }
}

impl From<Video> for VideoSpec {
    fn from(video: Video) -> VideoSpec {
        VideoSpec {
            name: video.name,
            segment_duration_s: video.segment_duration_ms as f64 / 1000.0,
            qualities: video.qualities,
            segments: video.segments,
            container: video.container,
        }
    }
}

/// A request resolved against a video: indices into its qualities and segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    Master,
    Mpd,
    MediaPlaylist { quality: usize },
    Init { quality: usize },
    Segment { quality: usize, index: usize },
}

/// A well-formed path that names nothing: servers answer 404.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupError {
    UnknownVideo {
        video: String,
    },
    UnknownQuality {
        video: String,
        quality: String,
    },
    SegmentOutOfRange {
        video: String,
        index: usize,
        segments: usize,
    },
    /// `init.mp4` of a video packaged as MPEG-2 TS.
    NoInitSegment {
        video: String,
    },
    /// `.ts` asked of an fMP4 video or `.m4s` of a TS one.
    WrongExtension {
        video: String,
        expected: &'static str,
    },
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::UnknownVideo { video } => write!(f, "no video {video:?}"),
            LookupError::UnknownQuality { video, quality } => {
                write!(f, "video {video:?} has no quality {quality:?}")
            }
            LookupError::SegmentOutOfRange {
                video,
                index,
                segments,
            } => {
                write!(
                    f,
                    "video {video:?} has segments 0 to {}, not {index}",
                    segments - 1
                )
            }
            LookupError::NoInitSegment { video } => {
                write!(f, "video {video:?} is MPEG-2 TS and has no init segment")
            }
            LookupError::WrongExtension { video, expected } => {
                write!(f, "video {video:?} has .{expected} segments")
            }
        }
    }
}

impl std::error::Error for LookupError {}

/// The videos a server holds, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    videos: BTreeMap<String, Video>,
}

impl Catalog {
    /// Fails on two videos with one name.
    pub fn new(videos: Vec<Video>) -> Result<Catalog, ContentError> {
        let mut map = BTreeMap::new();
        for video in videos {
            let name = video.name.clone();
            if map.insert(name.clone(), video).is_some() {
                return Err(ContentError(format!("video {name:?} appears twice")));
            }
        }
        Ok(Catalog { videos: map })
    }

    pub fn get(&self, name: &str) -> Option<&Video> {
        self.videos.get(name)
    }

    pub fn videos(&self) -> impl Iterator<Item = &Video> {
        self.videos.values()
    }

    /// The video and item a parsed request names.
    pub fn resolve(&self, request: &Request<'_>) -> Result<(&Video, Item), LookupError> {
        let video = self
            .get(request.video)
            .ok_or_else(|| LookupError::UnknownVideo {
                video: request.video.to_string(),
            })?;
        Ok((video, video.item(&request.kind)?))
    }
}

/// The HAS-over-CDNI paper's ladder: 500 kbit/s, 1 and 2 Mbit/s.
pub const PAPER_BITRATES: [u64; 3] = [500_000, 1_000_000, 2_000_000];
/// The paper's chunk duration, in seconds.
pub const PAPER_SEGMENT_S: f64 = 2.0;

/// A quality named after its bitrate: `500k` for 500 kbit/s, `1000k` for 1 Mbit/s, the bare
/// bit/s where it is not a whole kbit/s.
pub fn quality_for_bitrate(bitrate_bps: u64) -> Quality {
    let id = if bitrate_bps.is_multiple_of(1000) {
        format!("{}k", bitrate_bps / 1000)
    } else {
        bitrate_bps.to_string()
    };
    Quality {
        id,
        bitrate_bps,
        codecs: None,
    }
}

/// The paper's content: `segments` chunks of 2 s at its three bitrates.
pub fn paper_video(
    name: &str,
    segments: usize,
    container: Container,
) -> Result<Video, ContentError> {
    Video::new(VideoSpec {
        name: name.to_string(),
        segment_duration_s: PAPER_SEGMENT_S,
        qualities: PAPER_BITRATES
            .iter()
            .map(|&b| quality_for_bitrate(b))
            .collect(),
        segments,
        container,
    })
}
