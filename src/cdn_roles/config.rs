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

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

use super::config_table::{sized_assign, Keys};
use crate::cdn::{Assign, BaseUrl, Offload, Video};

/// HTTP port when none is configured.
pub const DEFAULT_HTTP_PORT: u16 = 80;
/// Control-plane (QUIC) port when none is configured.
pub const DEFAULT_CONTROL_PORT: u16 = 4433;
/// How long the routers keep trying to reach their peers at start.
pub const DEFAULT_EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a dCS waits for the origin's answer to one fetch.
pub const DEFAULT_ORIGIN_TIMEOUT: Duration = Duration::from_secs(10);

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

/// Reads a config file into a table; errors name the file.
pub fn read_table(path: &Path) -> Result<Table, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    text.parse().map_err(|e| format!("{}: {e}", path.display()))
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
        keys.only(UCS_KEYS, "ucs")?;
        let port = keys.port("port", DEFAULT_HTTP_PORT)?;
        Ok(UcsConfig {
            port,
            url: own_url(&keys, node, port)?,
            videos: keys.videos("videos")?,
            media_dir: keys.string("media_dir")?.map(PathBuf::from),
            access_log: keys.boolean("access_log")?.unwrap_or(false),
        })
    }
}

impl DcsConfig {
    pub fn parse(table: &Table) -> Result<DcsConfig, String> {
        let keys = Keys::new(table);
        keys.only(DCS_KEYS, "dcs")?;
        Ok(DcsConfig {
            port: keys.port("port", DEFAULT_HTTP_PORT)?,
            control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
            drr_node: keys.string("drr_node")?.unwrap_or("drr").to_string(),
            media_dir: keys.string("media_dir")?.map(PathBuf::from),
            fetch_from_origin: keys.url("fetch_from_origin")?,
            origin_timeout: keys
                .duration("origin_timeout")?
                .unwrap_or(DEFAULT_ORIGIN_TIMEOUT),
            access_log: keys.boolean("access_log")?.unwrap_or(false),
        })
    }
}

impl UrrConfig {
    /// `node` names the defaults (`url`).
    pub fn parse(table: &Table, node: &str) -> Result<UrrConfig, String> {
        let keys = Keys::new(table);
        keys.only(URR_KEYS, "urr")?;
        let port = keys.port("port", DEFAULT_HTTP_PORT)?;
        let upstream = keys.urls("upstream")?;
        if upstream.is_empty() {
            return Err(
                "config key `upstream` is missing: the upstream content servers' URLs, e.g. [\"http://ucs\"]"
                    .to_string(),
            );
        }
        let offload = keys.offload("offload")?;
        let drr = peer(&keys, "drr")?;
        if drr.is_none() && offload != Offload::None {
            return Err(format!(
                "config key `drr` is missing: offload = {offload} needs the downstream request router (or set offload = \"none\")"
            ));
        }
        Ok(UrrConfig {
            port,
            url: own_url(&keys, node, port)?,
            videos: keys.videos("videos")?,
            assign: sized_assign(&keys.assign("assign")?, upstream.len()),
            upstream,
            offload,
            offload_seed: keys.integer("offload_seed")?.unwrap_or(0),
            drr,
            exchange_timeout: keys
                .duration("exchange_timeout")?
                .unwrap_or(DEFAULT_EXCHANGE_TIMEOUT),
            access_log: keys.boolean("access_log")?.unwrap_or(false),
        })
    }
}

impl DrrConfig {
    pub fn parse(table: &Table) -> Result<DrrConfig, String> {
        let keys = Keys::new(table);
        keys.only(DRR_KEYS, "drr")?;
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
            assign: sized_assign(&keys.assign("assign")?, dcs.len()),
            dcs,
            urr_node: keys.string("urr_node")?.unwrap_or("urr").to_string(),
            exchange_timeout: keys
                .duration("exchange_timeout")?
                .unwrap_or(DEFAULT_EXCHANGE_TIMEOUT),
            access_log: keys.boolean("access_log")?.unwrap_or(false),
        })
    }
}

fn own_url(keys: &Keys, node: &str, port: u16) -> Result<BaseUrl, String> {
    match keys.url("url")? {
        Some(url) => Ok(url),
        None => default_url(node, port),
    }
}

/// A peer as a URL string (control at the URL's host, port 4433) or a table
/// `{ url, control = "HOST:PORT", node }` (node defaults to the control address's host).
fn peer(keys: &Keys, key: &str) -> Result<Option<Peer>, String> {
    match keys.value(key) {
        None => Ok(None),
        Some(Value::String(_)) => Ok(keys.url(key)?.map(|url| peer_from_url(url, None, None))),
        Some(Value::Table(_)) => {
            let Some(inner) = keys.table(key)? else {
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
    keys.only(PEER_KEYS, "peer")?;
    let Some(url) = keys.url("url")? else {
        return Err(format!("config key `{}` is missing", keys.name("url")));
    };
    let control = keys.string("control")?.map(str::to_string);
    if let Some(control) = &control {
        if !control.contains(':') {
            return Err(format!(
                "config key `{}`: {control:?} must be HOST:PORT",
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
