//! Each role's configuration: the node's `config` table from the topology, as TOML.
//!
//! ```toml
//! # ucs: the origin
//! port = 80                     # HTTP (default 80)
//! url = "http://ucs"            # its own origin, which its manifests point at (default http://NODE[:PORT])
//! videos = [{ name = "video", segments = 100, segment_duration = "2s",
//!             qualities = ["500kbit", "1mbit", "2mbit"], container = "ts" }]   # the defaults
//! media_dir = "/srv/media"      # real files instead of synthetic payloads (layout: `content_server`)
//! access_log = false
//!
//! # dcs
//! port = 80
//! control_port = 4433           # UDP, QUIC: receives its assignment from the dRR
//! drr_node = "drr"              # the only node allowed to assign chunks to it
//! media_dir = "/srv/media"
//! fetch_from_origin = "http://ucs"   # fetch chunks it was not assigned once, keep them (default off)
//! origin_timeout = "10s"
//!
//! # urr
//! port = 80
//! url = "http://urr"            # its own origin (manifests point at it)
//! videos = [...]                # as the uCS's: both must describe the same videos
//! upstream = ["http://ucs"]     # the upstream CDN's content servers
//! assign = "consistent-hash"    # | consistent-hash:VNODES | round-robin | least-loaded
//! offload = "all"               # | none | fraction:F | first:K | most-popular:K
//! offload_seed = 0              # for fraction and most-popular (Zipf-ranked chunks)
//! drr = "http://drr"            # or { url = "http://drr", control = "drr:4433", node = "drr" }
//! exchange_timeout = "30s"      # how long to keep offering the placement to the dRR
//!
//! # drr
//! port = 80
//! control_port = 4433
//! dcs = ["http://dcs1", "http://dcs2"]   # or tables { url, control, node } as `drr` above
//! assign = "consistent-hash"
//! urr_node = "urr"              # the only node allowed to offload to it
//! exchange_timeout = "30s"      # how long to keep trying to reach each dCS
//! ```
//!
//! Times are tc units; a number may be given as a string (`segments = "${chunks}"`). An unknown
//! key is an error that names it, so a typo never silently falls back to a default.

use std::path::PathBuf;
use std::time::Duration;

use netem::units::parse_rate_bps;
use toml::{Table, Value};

use crate::cdn::{
    paper_video, quality_for_bitrate, Assign, BaseUrl, Container, Offload, Quality, Video,
    VideoSpec, DEFAULT_VNODES, PAPER_BITRATES, PAPER_SEGMENT_S,
};
use crate::roles::config::Keys;
use crate::roles::control::DEFAULT_CONTROL_PORT;

/// HTTP port when none is configured.
pub const DEFAULT_HTTP_PORT: u16 = 80;
/// How long the routers keep trying to reach their peers at start.
pub const DEFAULT_EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a dCS waits for the origin's answer to one fetch.
pub const DEFAULT_ORIGIN_TIMEOUT: Duration = Duration::from_secs(10);
/// What a time limit on one exchange or fetch may be: `0s` would fail every one at once.
const LIMITS: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(100)..=Duration::from_secs(600);

const UCS_KEYS: &[&str] = &["port", "url", "videos", "media_dir", "access_log"];
const DCS_KEYS: &[&str] = &[
    "port",
    "control_port",
    "drr_node",
    "media_dir",
    "fetch_from_origin",
    "origin_timeout",
    "access_log",
];
const URR_KEYS: &[&str] = &[
    "port",
    "url",
    "videos",
    "upstream",
    "assign",
    "offload",
    "offload_seed",
    "drr",
    "exchange_timeout",
    "access_log",
];
const DRR_KEYS: &[&str] = &[
    "port",
    "control_port",
    "dcs",
    "assign",
    "urr_node",
    "exchange_timeout",
    "access_log",
];
const PEER_KEYS: &[&str] = &["url", "control", "node"];

#[derive(Debug, Clone, PartialEq)]
pub struct UcsConfig {
    pub port: u16,
    pub url: BaseUrl,
    pub videos: Vec<Video>,
    pub media_dir: Option<PathBuf>,
    pub access_log: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DcsConfig {
    pub port: u16,
    pub control_port: u16,
    pub drr_node: String,
    pub media_dir: Option<PathBuf>,
    pub fetch_from_origin: Option<BaseUrl>,
    pub origin_timeout: Duration,
    pub access_log: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UrrConfig {
    pub port: u16,
    pub url: BaseUrl,
    pub videos: Vec<Video>,
    pub upstream: Vec<BaseUrl>,
    /// How chunks kept upstream are spread over `upstream`.
    pub assign: Assign,
    pub offload: Offload,
    pub offload_seed: u64,
    /// `None` only with `offload = "none"`: an upstream CDN alone.
    pub drr: Option<Peer>,
    pub exchange_timeout: Duration,
    pub access_log: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DrrConfig {
    pub port: u16,
    pub control_port: u16,
    pub dcs: Vec<Peer>,
    /// How offloaded chunks are spread over `dcs`.
    pub assign: Assign,
    pub urr_node: String,
    pub exchange_timeout: Duration,
    pub access_log: bool,
}

/// Another role server: where clients reach it over HTTP and where its control plane listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub url: BaseUrl,
    /// `HOST:PORT` of its QUIC control server.
    pub control: String,
    /// The node name its certificate must carry.
    pub node: String,
}

/// The origin `http://NODE` (or `http://NODE:PORT` off port 80) a server is reached at.
pub fn default_url(node: &str, port: u16) -> Result<BaseUrl, String> {
    let text = if port == DEFAULT_HTTP_PORT {
        format!("http://{node}")
    } else {
        format!("http://{node}:{port}")
    };
    BaseUrl::parse(&text).map_err(|e| format!("the default URL of node {node:?}: {e}; set `url`"))
}

/// The host of an origin URL (brackets of an IPv6 literal removed).
pub fn url_host(url: &BaseUrl) -> &str {
    let authority = url
        .as_str()
        .split_once("://")
        .map_or(url.as_str(), |(_, rest)| rest);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split_once(']').map_or(v6, |(host, _)| host);
    }
    authority
        .split_once(':')
        .map_or(authority, |(host, _)| host)
}

impl UcsConfig {
    /// `node` names the defaults (`url`).
    pub fn parse(table: &Table, node: &str) -> Result<UcsConfig, String> {
        let keys = Keys::new(table);
        keys.only(UCS_KEYS, "role ucs")?;
        let port = keys.port("port", DEFAULT_HTTP_PORT)?;
        Ok(UcsConfig {
            port,
            url: own_url(&keys, node, port)?,
            videos: videos(&keys, "videos")?,
            media_dir: keys.string("media_dir")?.map(PathBuf::from),
            access_log: keys.boolean("access_log")?.unwrap_or(false),
        })
    }
}

impl DcsConfig {
    pub fn parse(table: &Table) -> Result<DcsConfig, String> {
        let keys = Keys::new(table);
        keys.only(DCS_KEYS, "role dcs")?;
        Ok(DcsConfig {
            port: keys.port("port", DEFAULT_HTTP_PORT)?,
            control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
            drr_node: keys.string("drr_node")?.unwrap_or("drr").to_string(),
            media_dir: keys.string("media_dir")?.map(PathBuf::from),
            fetch_from_origin: base_url(&keys, "fetch_from_origin")?,
            origin_timeout: keys.duration_within(
                "origin_timeout",
                DEFAULT_ORIGIN_TIMEOUT,
                LIMITS,
            )?,
            access_log: keys.boolean("access_log")?.unwrap_or(false),
        })
    }
}

impl UrrConfig {
    /// `node` names the defaults (`url`).
    pub fn parse(table: &Table, node: &str) -> Result<UrrConfig, String> {
        let keys = Keys::new(table);
        keys.only(URR_KEYS, "role urr")?;
        let port = keys.port("port", DEFAULT_HTTP_PORT)?;
        let upstream = base_urls(&keys, "upstream")?;
        if upstream.is_empty() {
            return Err(
                "config key `upstream` is missing: the upstream content servers' URLs, e.g. [\"http://ucs\"]"
                    .to_string(),
            );
        }
        let offload = offload(&keys, "offload")?;
        let drr = peer(&keys, "drr")?;
        if drr.is_none() && offload != Offload::None {
            return Err(format!(
                "config key `drr` is missing: offload = {offload} needs the downstream request router (or set offload = \"none\")"
            ));
        }
        Ok(UrrConfig {
            port,
            url: own_url(&keys, node, port)?,
            videos: videos(&keys, "videos")?,
            assign: sized_assign(&assign(&keys, "assign")?, upstream.len()),
            upstream,
            offload,
            offload_seed: keys.integer("offload_seed")?.unwrap_or(0),
            drr,
            exchange_timeout: keys.duration_within(
                "exchange_timeout",
                DEFAULT_EXCHANGE_TIMEOUT,
                LIMITS,
            )?,
            access_log: keys.boolean("access_log")?.unwrap_or(false),
        })
    }
}

impl DrrConfig {
    pub fn parse(table: &Table) -> Result<DrrConfig, String> {
        let keys = Keys::new(table);
        keys.only(DRR_KEYS, "role drr")?;
        let dcs = peers(&keys, "dcs")?;
        if dcs.is_empty() {
            return Err(
                "config key `dcs` is missing: the downstream content servers, e.g. [\"http://dcs1\"]"
                    .to_string(),
            );
        }
        Ok(DrrConfig {
            port: keys.port("port", DEFAULT_HTTP_PORT)?,
            control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
            assign: sized_assign(&assign(&keys, "assign")?, dcs.len()),
            dcs,
            urr_node: keys.string("urr_node")?.unwrap_or("urr").to_string(),
            exchange_timeout: keys.duration_within(
                "exchange_timeout",
                DEFAULT_EXCHANGE_TIMEOUT,
                LIMITS,
            )?,
            access_log: keys.boolean("access_log")?.unwrap_or(false),
        })
    }
}

fn own_url(keys: &Keys, node: &str, port: u16) -> Result<BaseUrl, String> {
    match base_url(keys, "url")? {
        Some(url) => Ok(url),
        None => default_url(node, port),
    }
}

/// A peer as a URL string (control at the URL's host, port 4433) or a table
/// `{ url, control = "HOST:PORT", node }` (node defaults to the control address's host).
fn peer(keys: &Keys, key: &str) -> Result<Option<Peer>, String> {
    match keys.value(key) {
        None => Ok(None),
        Some(Value::String(_)) => {
            Ok(base_url(keys, key)?.map(|url| peer_from_url(url, None, None)))
        }
        Some(Value::Table(_)) => {
            let Some(inner) = keys.table(key) else {
                return Ok(None);
            };
            peer_table(&inner).map(Some)
        }
        Some(other) => Err(format!(
            "config key `{}`: expected a URL or a table {{ url, control, node }}, found {}",
            keys.name(key),
            other.type_str()
        )),
    }
}

fn peer_table(keys: &Keys) -> Result<Peer, String> {
    keys.only(PEER_KEYS, "a peer")?;
    let Some(url) = base_url(keys, "url")? else {
        return Err(format!("config key `{}` is missing", keys.name("url")));
    };
    let control = keys.string("control")?.map(str::to_string);
    if let Some(control) = &control {
        // Checked here, where the file is read, not when the first exchange fails to resolve.
        if !is_host_port(control) {
            return Err(format!(
                "config key `{}`: {control:?} must be HOST:PORT, a port from 1 to 65535 \
                 (an IPv6 address in brackets, as [fd00::1]:4433)",
                keys.name("control")
            ));
        }
    }
    Ok(peer_from_url(
        url,
        control,
        keys.string("node")?.map(str::to_string),
    ))
}

/// `HOST:PORT` as a socket address is looked up: a name or IPv4 address, or an IPv6 address in
/// brackets, then a port from 1 to 65535.
fn is_host_port(text: &str) -> bool {
    let Some((host, port)) = text.rsplit_once(':') else {
        return false;
    };
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => !host.is_empty() && !host.contains([':', '[', ']']),
    };
    host_ok && port.parse::<u16>().is_ok_and(|p| p > 0)
}

fn peer_from_url(url: BaseUrl, control: Option<String>, node: Option<String>) -> Peer {
    let host = url_host(&url).to_string();
    let control = control.unwrap_or_else(|| match host.contains(':') {
        true => format!("[{host}]:{DEFAULT_CONTROL_PORT}"),
        false => format!("{host}:{DEFAULT_CONTROL_PORT}"),
    });
    let node = node.unwrap_or_else(|| {
        control
            .rsplit_once(':')
            .map_or(control.as_str(), |(h, _)| h)
            .trim_matches(['[', ']'])
            .to_string()
    });
    Peer { url, control, node }
}

/// An array of peers (each a URL or a table), or one peer.
fn peers(keys: &Keys, key: &str) -> Result<Vec<Peer>, String> {
    match keys.value(key) {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(text) => BaseUrl::parse(text)
                    .map(|url| peer_from_url(url, None, None))
                    .map_err(|e| format!("config key `{}[{i}]`: {e}", keys.name(key))),
                Value::Table(table) => peer_table(&keys.nested_at(key, i, table)),
                other => Err(format!(
                    "config key `{}[{i}]`: expected a URL or a table, found {}",
                    keys.name(key),
                    other.type_str()
                )),
            })
            .collect(),
        _ => Ok(peer(keys, key)?.into_iter().collect()),
    }
}

fn base_url(keys: &Keys, key: &str) -> Result<Option<BaseUrl>, String> {
    keys.string(key)?
        .map(|text| BaseUrl::parse(text).or_else(|e| keys.fail(key, e)))
        .transpose()
}

/// One URL or an array of them.
fn base_urls(keys: &Keys, key: &str) -> Result<Vec<BaseUrl>, String> {
    match keys.value(key) {
        None => Ok(Vec::new()),
        Some(Value::String(_)) => Ok(base_url(keys, key)?.into_iter().collect()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(text) => {
                    BaseUrl::parse(text).or_else(|e| keys.fail(&format!("{key}[{i}]"), e))
                }
                other => keys.fail(
                    &format!("{key}[{i}]"),
                    format!("expected a URL string, found {}", other.type_str()),
                ),
            })
            .collect(),
        Some(other) => keys.fail(
            key,
            format!(
                "expected a URL or an array of URLs, found {}",
                other.type_str()
            ),
        ),
    }
}

/// `consistent-hash` (the default), `consistent-hash:VNODES`, `round-robin` or
/// `least-loaded` (starting from empty servers).
fn assign(keys: &Keys, key: &str) -> Result<Assign, String> {
    let Some(text) = keys.string(key)? else {
        return Ok(Assign::ConsistentHash {
            vnodes: DEFAULT_VNODES,
        });
    };
    let bad = || {
        keys.fail(
            key,
            format!("{text:?}: expected consistent-hash[:VNODES], round-robin or least-loaded"),
        )
    };
    match text.split_once(':') {
        None if text == "consistent-hash" => Ok(Assign::ConsistentHash {
            vnodes: DEFAULT_VNODES,
        }),
        None if text == "round-robin" => Ok(Assign::RoundRobin),
        // The loads vector is sized when the server count is known (`sized_assign`).
        None if text == "least-loaded" => Ok(Assign::LeastLoaded { loads: Vec::new() }),
        Some(("consistent-hash", n)) => match n.parse::<usize>() {
            Ok(vnodes) if vnodes > 0 => Ok(Assign::ConsistentHash { vnodes }),
            _ => bad(),
        },
        _ => bad(),
    }
}

/// `assign` with `least-loaded`'s start loads sized to `servers` (all empty).
pub(crate) fn sized_assign(assign: &Assign, servers: usize) -> Assign {
    match assign {
        Assign::LeastLoaded { loads } if loads.is_empty() => Assign::LeastLoaded {
            loads: vec![0; servers],
        },
        other => other.clone(),
    }
}

/// `all` (the default), `none`, `fraction:F`, `first:K` or `most-popular:K`.
fn offload(keys: &Keys, key: &str) -> Result<Offload, String> {
    match keys.string(key)? {
        None => Ok(Offload::All),
        Some(text) => text.parse().or_else(|e| keys.fail(key, e)),
    }
}

/// The video a config without `videos` serves.
pub const DEFAULT_VIDEO: &str = "video";
/// Its length: the paper's 100 chunks of 2 s.
pub const DEFAULT_SEGMENTS: usize = 100;

const VIDEO_KEYS: &[&str] = &[
    "name",
    "segments",
    "segment_duration",
    "qualities",
    "container",
];
const QUALITY_KEYS: &[&str] = &["id", "bitrate", "codecs"];

/// `videos`: an array of video tables; the paper's video when absent.
/// The most chunks (segments × qualities, over every video) a role's table may hold: the
/// table is kept whole by every role and sent whole over the control plane to each dCS.
const MAX_CHUNKS: usize = 1_000_000;

/// The `videos` at `key`, within `MAX_CHUNKS` in all.
fn videos(keys: &Keys, key: &str) -> Result<Vec<Video>, String> {
    let videos = listed_videos(keys, key)?;
    let chunks: usize = (videos.iter())
        .map(|v| v.segments() * v.qualities().len())
        .sum();
    if chunks > MAX_CHUNKS {
        return keys.fail(
            key,
            format!("{chunks} chunks (segments × qualities) in all, above {MAX_CHUNKS}"),
        );
    }
    Ok(videos)
}

fn listed_videos(keys: &Keys, key: &str) -> Result<Vec<Video>, String> {
    match keys.value(key) {
        None => Ok(vec![paper_video(
            DEFAULT_VIDEO,
            DEFAULT_SEGMENTS,
            Container::Ts,
        )
        .map_err(|e| e.to_string())?]),
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Table(table) => video(&keys.nested_at(key, i, table)),
                other => keys.fail(
                    &format!("{key}[{i}]"),
                    format!("expected a table, found {}", other.type_str()),
                ),
            })
            .collect(),
        Some(other) => keys.fail(
            key,
            format!(
                "expected a non-empty array of video tables, found {}",
                other.type_str()
            ),
        ),
    }
}

/// One `videos` entry: `name` (default `video`), `segments` (100), `segment_duration` (`2s`),
/// `qualities` (the paper's ladder; each a rate string such as `"500kbit"`, or a table
/// `{ id, bitrate, codecs }`), `container` (`ts` or `fmp4`).
fn video(keys: &Keys) -> Result<Video, String> {
    keys.only(VIDEO_KEYS, "a video")?;
    let segments = keys.count("segments")?.unwrap_or(DEFAULT_SEGMENTS);
    let segment_duration_s = match keys.duration("segment_duration")? {
        None => PAPER_SEGMENT_S,
        Some(d) => d.as_secs_f64(),
    };
    let qualities = match keys.value("qualities") {
        None => PAPER_BITRATES
            .iter()
            .map(|&b| quality_for_bitrate(b))
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| quality(keys, i, item))
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return keys.fail(
                "qualities",
                format!("expected an array, found {}", other.type_str()),
            )
        }
    };
    let container = match keys.string("container")? {
        None | Some("ts") => Container::Ts,
        Some("fmp4") => Container::Fmp4,
        Some(other) => return keys.fail("container", format!("{other:?}: expected ts or fmp4")),
    };
    let spec = VideoSpec {
        name: keys.string("name")?.unwrap_or(DEFAULT_VIDEO).to_string(),
        segment_duration_s,
        qualities,
        segments,
        container,
    };
    Video::new(spec).map_err(|e| format!("config key `{}`: {e}", keys.table_name()))
}

fn quality(keys: &Keys, index: usize, item: &Value) -> Result<Quality, String> {
    let key = format!("qualities[{index}]");
    match item {
        Value::String(text) => Ok(quality_for_bitrate(
            parse_rate_bps(text).or_else(|e| keys.fail(&key, e))?,
        )),
        Value::Table(table) => {
            let inner = keys.nested_at("qualities", index, table);
            inner.only(QUALITY_KEYS, "a quality")?;
            let Some(bitrate) = inner.string("bitrate")? else {
                return inner.fail("bitrate", "missing (e.g. \"500kbit\")");
            };
            let bitrate_bps = parse_rate_bps(bitrate).or_else(|e| inner.fail("bitrate", e))?;
            let default = quality_for_bitrate(bitrate_bps);
            Ok(Quality {
                id: inner.string("id")?.map_or(default.id, str::to_string),
                bitrate_bps,
                codecs: inner.string("codecs")?.map(str::to_string),
            })
        }
        other => keys.fail(
            &key,
            format!(
                "expected a rate string or a table, found {}",
                other.type_str()
            ),
        ),
    }
}
