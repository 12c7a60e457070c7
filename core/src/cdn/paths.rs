//! Request paths: the one place that knows the URL scheme, both directions.
//!
//! ```text
//! [/p/POLICY]/VIDEO/master.m3u8          HLS master playlist
//! [/p/POLICY]/VIDEO/manifest.mpd         DASH MPD
//! [/p/POLICY]/VIDEO/Q/playlist.m3u8      HLS media playlist of quality Q
//! /VIDEO/Q/init.mp4                      init segment (fMP4 videos only)
//! /VIDEO/Q/seg-00042.ts | .m4s           segment 42 (0-based, at least 5 digits)
//! ```
//!
//! The policy prefix (`upstream-rr`, `direct-rr`, `direct-cs`) selects how the uRR writes chunk
//! URLs into manifests; without it a manifest is the original (UpstreamRR). Media paths have no
//! prefix: a chunk has one canonical path, so caches and consistent hashing see one key whichever
//! policy the client follows. A query string is ignored. Parsing is strict because the result
//! names files: no percent-encoding (names never need it, so `%2e%2e` is refused outright), no
//! empty, `.` or `..` segments, no leading zeros beyond the 5-digit padding.

use std::fmt;

use super::content::{valid_name, Container, MAX_SEGMENTS, POLICY_PREFIX};
use super::policy::Policy;

/// Longest request target accepted; real ones are well under 200 bytes.
pub const MAX_TARGET_LEN: usize = 1024;

/// What a path names, before it is looked up in a video.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind<'a> {
    Master,
    Mpd,
    MediaPlaylist {
        quality: &'a str,
    },
    Init {
        quality: &'a str,
    },
    Segment {
        quality: &'a str,
        index: usize,
        container: Container,
    },
}

impl Kind<'_> {
    /// Manifests (master, media playlist, MPD) as opposed to media (init and segments).
    pub fn is_manifest(&self) -> bool {
        matches!(self, Kind::Master | Kind::Mpd | Kind::MediaPlaylist { .. })
    }
}

/// A parsed request path; borrows from the request target so parsing allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The `/p/POLICY` prefix of a manifest path; always `None` for media.
    pub policy: Option<Policy>,
    pub video: &'a str,
    pub kind: Kind<'a>,
}

impl Request<'_> {
    /// The policy a manifest is written for: the prefix's, or UpstreamRR (the unrewritten
    /// manifest) without one.
    pub fn effective_policy(&self) -> Policy {
        self.policy.unwrap_or(Policy::UpstreamRr)
    }

    /// Appends the canonical path to `out`: how a router builds a `Location` in one buffer
    /// (a segment's path, the one asked for at every 302, without the formatter).
    pub fn write_path(&self, out: &mut String) {
        match self.kind {
            Kind::Segment {
                quality,
                index,
                container,
            } => push_segment_path(out, self.video, quality, index, container),
            _ => out.push_str(&self.path()),
        }
    }

    /// The canonical path; `parse_path(&r.path()) == Ok(r)`.
    pub fn path(&self) -> String {
        let policy = self.policy;
        match self.kind {
            Kind::Master => master_path(policy, self.video),
            Kind::Mpd => mpd_path(policy, self.video),
            Kind::MediaPlaylist { quality } => media_playlist_path(policy, self.video, quality),
            Kind::Init { quality } => init_path(self.video, quality),
            Kind::Segment {
                quality,
                index,
                container,
            } => segment_path(self.video, quality, index, container),
        }
    }
}

/// Why a request target is not a cdnlab path: servers answer 400 (or 404 for `UnknownFile`,
/// a well-formed path naming nothing we serve).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// Not origin-form (`/...`), or empty.
    NotAbsolute,
    TooLong {
        len: usize,
    },
    /// A `%` escape, a fragment, a backslash, whitespace, a control or non-ASCII character.
    ForbiddenCharacter {
        at: usize,
    },
    /// `//`, `/./` or `/../`.
    BadSegment {
        segment: String,
    },
    /// A video or quality name outside the allowed characters.
    BadName {
        name: String,
    },
    UnknownPolicy {
        policy: String,
    },
    /// The policy prefix on a media path, or missing its policy.
    MisplacedPolicy,
    /// A file name we never serve (`index.html`, `seg-1.mp4`).
    UnknownFile {
        file: String,
    },
    /// A segment number that is not canonical (`seg-42`, `seg-000042`, `seg-0004a`).
    BadIndex {
        file: String,
    },
    IndexTooLarge {
        index: String,
    },
    /// Too few or too many path segments for any resource.
    WrongShape,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::NotAbsolute => f.write_str("the request target must be a path starting with '/'"),
            PathError::TooLong { len } => write!(f, "the path is {len} bytes; at most {MAX_TARGET_LEN}"),
            PathError::ForbiddenCharacter { at } => write!(
                f,
                "forbidden character at byte {at}: paths use only letters, digits, '/', '-', '_' and '.'"
            ),
            PathError::BadSegment { segment } => write!(f, "path segment {segment:?} is not allowed"),
            PathError::BadName { name } => write!(f, "{name:?} is not a valid video or quality name"),
            PathError::UnknownPolicy { policy } => write!(
                f,
                "unknown policy {policy:?} (expected upstream-rr, direct-rr or direct-cs)"
            ),
            PathError::MisplacedPolicy => {
                f.write_str("/p/POLICY/ prefixes manifest paths only, and needs a policy")
            }
            PathError::UnknownFile { file } => write!(f, "no such file {file:?}"),
            PathError::BadIndex { file } => write!(
                f,
                "{file:?}: segment numbers have at least 5 digits and no extra leading zeros"
            ),
            PathError::IndexTooLarge { index } => {
                write!(f, "segment index {index} is not below {MAX_SEGMENTS}")
            }
            PathError::WrongShape => f.write_str(
                "expected /VIDEO/master.m3u8, /VIDEO/manifest.mpd, /VIDEO/Q/playlist.m3u8, /VIDEO/Q/init.mp4 or /VIDEO/Q/seg-NNNNN.EXT",
            ),
        }
    }
}

impl std::error::Error for PathError {}

/// Parses an HTTP request target (origin-form; the query is ignored) into a `Request`.
pub fn parse_path(target: &str) -> Result<Request<'_>, PathError> {
    if target.len() > MAX_TARGET_LEN {
        return Err(PathError::TooLong { len: target.len() });
    }
    let path = match target.find('?') {
        Some(q) => &target[..q],
        None => target,
    };
    let rest = path.strip_prefix('/').ok_or(PathError::NotAbsolute)?;
    if let Some(at) = path.bytes().position(|b| !allowed_path_byte(b)) {
        return Err(PathError::ForbiddenCharacter { at });
    }
    let mut parts = [""; 5];
    let mut count = 0;
    for segment in rest.split('/') {
        if segment.is_empty() || segment == "." || segment == ".." {
            return Err(PathError::BadSegment {
                segment: segment.to_string(),
            });
        }
        if count == parts.len() {
            return Err(PathError::WrongShape);
        }
        parts[count] = segment;
        count += 1;
    }
    let mut parts = &parts[..count];
    let mut policy = None;
    if parts.first() == Some(&POLICY_PREFIX) {
        let name = parts.get(1).ok_or(PathError::MisplacedPolicy)?;
        policy = Some(
            name.parse::<Policy>()
                .map_err(|_| PathError::UnknownPolicy {
                    policy: name.to_string(),
                })?,
        );
        parts = &parts[2..];
    }
    let request = match *parts {
        [video, file] => Request {
            policy,
            video: name(video)?,
            kind: video_file(file)?,
        },
        [video, quality, file] => Request {
            policy,
            video: name(video)?,
            kind: quality_file(name(quality)?, file)?,
        },
        _ => return Err(PathError::WrongShape),
    };
    if policy.is_some() && !request.kind.is_manifest() {
        return Err(PathError::MisplacedPolicy);
    }
    Ok(request)
}

/// Characters that may appear in a path at all (before names are checked): rejecting `%`
/// here refuses every encoded traversal (`%2e%2e`, `%2f`) without decoding anything.
fn allowed_path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.')
}

fn name(segment: &str) -> Result<&str, PathError> {
    if valid_name(segment) {
        Ok(segment)
    } else {
        Err(PathError::BadName {
            name: segment.to_string(),
        })
    }
}

fn video_file(file: &str) -> Result<Kind<'static>, PathError> {
    match file {
        MASTER => Ok(Kind::Master),
        MPD => Ok(Kind::Mpd),
        _ => Err(PathError::UnknownFile {
            file: file.to_string(),
        }),
    }
}

fn quality_file<'a>(quality: &'a str, file: &'a str) -> Result<Kind<'a>, PathError> {
    match file {
        MEDIA_PLAYLIST => return Ok(Kind::MediaPlaylist { quality }),
        INIT => return Ok(Kind::Init { quality }),
        _ => {}
    }
    let unknown = || PathError::UnknownFile {
        file: file.to_string(),
    };
    let numbered = file.strip_prefix("seg-").ok_or_else(unknown)?;
    let (digits, extension) = numbered.split_once('.').ok_or_else(unknown)?;
    let container = match extension {
        "ts" => Container::Ts,
        "m4s" => Container::Fmp4,
        _ => return Err(unknown()),
    };
    let bad_index = || PathError::BadIndex {
        file: file.to_string(),
    };
    if digits.len() < INDEX_DIGITS
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > INDEX_DIGITS && digits.starts_with('0'))
    {
        return Err(bad_index());
    }
    // More digits than MAX_SEGMENTS has cannot be below it; checking first keeps parse in range.
    let too_large = || PathError::IndexTooLarge {
        index: digits.to_string(),
    };
    if digits.len() > MAX_INDEX_DIGITS {
        return Err(too_large());
    }
    let index: usize = digits.parse().map_err(|_| bad_index())?;
    if index >= MAX_SEGMENTS {
        return Err(too_large());
    }
    Ok(Kind::Segment {
        quality,
        index,
        container,
    })
}

const MASTER: &str = "master.m3u8";
const MPD: &str = "manifest.mpd";
const MEDIA_PLAYLIST: &str = "playlist.m3u8";
const INIT: &str = "init.mp4";
/// Segment numbers are zero-padded to this many digits (`seg-00042`), more when larger.
const INDEX_DIGITS: usize = 5;
/// Digits of `MAX_SEGMENTS - 1`.
const MAX_INDEX_DIGITS: usize = 6;

fn prefix(policy: Option<Policy>) -> String {
    match policy {
        Some(policy) => format!("/{POLICY_PREFIX}/{policy}"),
        None => String::new(),
    }
}

pub fn master_path(policy: Option<Policy>, video: &str) -> String {
    format!("{}/{video}/{MASTER}", prefix(policy))
}

pub fn mpd_path(policy: Option<Policy>, video: &str) -> String {
    format!("{}/{video}/{MPD}", prefix(policy))
}

pub fn media_playlist_path(policy: Option<Policy>, video: &str, quality: &str) -> String {
    format!("{}/{video}/{quality}/{MEDIA_PLAYLIST}", prefix(policy))
}

pub fn init_path(video: &str, quality: &str) -> String {
    format!("/{video}/{quality}/{INIT}")
}

pub fn segment_path(video: &str, quality: &str, index: usize, container: Container) -> String {
    let mut path = String::with_capacity(video.len() + quality.len() + 20);
    push_segment_path(&mut path, video, quality, index, container);
    path
}

/// `/{video}/{quality}/seg-{index:05}.{extension}` appended to `out`.
fn push_segment_path(
    out: &mut String,
    video: &str,
    quality: &str,
    index: usize,
    container: Container,
) {
    for part in ["/", video, "/", quality, "/seg-"] {
        out.push_str(part);
    }
    push_padded(out, index, INDEX_DIGITS);
    out.push('.');
    out.push_str(container.extension());
}

/// `n` in decimal, zero-padded to `width` digits: `{n:0width$}` without the formatter, whose
/// padding was a tenth of a 302's instructions in the request router.
fn push_padded(out: &mut String, n: usize, width: usize) {
    let mut digits = [b'0'; 20];
    let mut start = digits.len();
    let mut rest = n;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let start = start.min(digits.len().saturating_sub(width));
    out.extend(digits[start..].iter().map(|&d| char::from(d)));
}
