//! The role configuration of `has-client --config FILE`: the node's `config` table.
//!
//! ```toml
//! url = "http://urr/p/direct-rr/video/master.m3u8"   # or …/manifest.mpd; required
//! abr = "mss"               # mss | mss-unscaled | throughput | bba | bola
//! buffer = "20s"            # P: the most media the player holds (tc time, or seconds)
//! startup_segments = 1      # segments buffered before playback starts
//! segments = 20             # play at most this many (default: every segment listed)
//! timeout = "10s"           # per HTTP request (each hop of each attempt)
//! policy = "direct-rr"      # label for the summary; default: the URL's /p/POLICY part
//! http2 = false             # true: HTTP/2 with prior knowledge (h2c); false: HTTP/1.1 only
//! keep_alive = true         # false: a new TCP connection for every request (HTTP/1.1 only)
//! max_duration = "60s"      # stop playing after this long (default: never; "0" = never)
//! ```
//! Read with `crate::roles::config::Keys`: topology variables arrive as strings
//! (`segments = "${chunks}"`), so integers and booleans may also be strings holding one, and times
//! may be numbers of seconds. An unknown key is an error that names it, so a typo does not
//! silently fall back to a default.

use std::time::Duration;

use toml::{Table, Value};

use crate::cdn::{parse_path, Kind};
use crate::has::{ABR_NAMES, DEFAULT_STARTUP_SEGMENTS};
use crate::roles::config::Keys;

/// The longest a client may be told to play: a day.
const MAX_PLAY: Duration = Duration::from_secs(24 * 3600);

/// Every key the config may have.
pub const CONFIG_KEYS: &[&str] = &[
    "url",
    "abr",
    "buffer",
    "startup_segments",
    "segments",
    "timeout",
    "policy",
    "http2",
    "keep_alive",
    "max_duration",
];

/// The paper's client buffer (and Smooth Streaming's maximum).
pub const DEFAULT_BUFFER: Duration = Duration::from_secs(20);

/// Per-request timeout unless configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed `has-client` configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    /// The manifest's absolute `http://` URL.
    pub url: String,
    /// One of [`ABR_NAMES`].
    pub abr: String,
    /// P, in seconds.
    pub buffer_s: f64,
    pub startup_segments: usize,
    /// Play at most this many segments; `None`: all the manifest lists.
    pub segments: Option<usize>,
    pub timeout: Duration,
    /// The label the summary carries; `None` when neither configured nor in the URL.
    pub policy: Option<String>,
    pub http2: bool,
    /// False: no connection is reused, every request pays TCP's handshake.
    pub keep_alive: bool,
    pub max_duration: Option<Duration>,
}

impl ClientConfig {
    /// A config with every default, for `url`.
    pub fn new(url: &str) -> Result<ClientConfig, String> {
        let mut table = Table::new();
        table.insert("url".into(), Value::String(url.into()));
        parse_config(&table)
    }
}

/// Parses a config table.
pub fn parse_config(table: &Table) -> Result<ClientConfig, String> {
    let config = Keys::new(table);
    config.only(CONFIG_KEYS, "role has-client")?;
    let url = config
        .string("url")?
        .ok_or("config key `url` is missing (the manifest URL, e.g. \"http://urr/p/direct-rr/video/master.m3u8\")")?;
    check_url(url).or_else(|e| config.fail("url", e))?;
    let abr = config.string("abr")?.unwrap_or("mss");
    if !ABR_NAMES.contains(&abr) {
        return Err(format!(
            "config key `abr`: unknown rate adaptation `{abr}` (use {})",
            ABR_NAMES.join(", ")
        ));
    }
    let buffer = config.time("buffer")?.unwrap_or(DEFAULT_BUFFER);
    if buffer.is_zero() {
        return Err("config key `buffer`: the player buffer must be longer than 0".into());
    }
    let startup_segments = config
        .count("startup_segments")?
        .unwrap_or(DEFAULT_STARTUP_SEGMENTS);
    if startup_segments == 0 {
        return Err("config key `startup_segments`: playback needs at least 1 segment".into());
    }
    let segments = config.count("segments")?;
    if segments == Some(0) {
        return Err("config key `segments`: play at least 1 segment (omit the key for all)".into());
    }
    let timeout = config.time("timeout")?.unwrap_or(DEFAULT_TIMEOUT);
    if timeout.is_zero() {
        return Err("config key `timeout`: a request timeout must be longer than 0".into());
    }
    let policy = match config.string("policy")? {
        Some(label) => Some(label.to_string()),
        None => policy_of_url(url),
    };
    let http2 = config.boolean("http2")?.unwrap_or(false);
    let keep_alive = config.boolean("keep_alive")?.unwrap_or(true);
    if http2 && !keep_alive {
        return Err(
            "keep_alive = false needs HTTP/1.1: HTTP/2 always multiplexes one connection".into(),
        );
    }
    Ok(ClientConfig {
        url: url.to_string(),
        abr: abr.to_string(),
        buffer_s: buffer.as_secs_f64(),
        startup_segments,
        segments,
        timeout,
        policy,
        http2,
        keep_alive,
        max_duration: match config.time("max_duration")? {
            Some(d) if d > MAX_PLAY => {
                return config.fail("max_duration", format!("must be at most {MAX_PLAY:?}"))
            }
            d => d.filter(|duration| !duration.is_zero()),
        },
    })
}

/// The URL must be absolute `http://` with a host: the client is built without TLS.
fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    match parsed.scheme() {
        "http" if parsed.host_str().is_some() => Ok(()),
        "http" => Err(format!("`{url}` has no host")),
        "https" => Err(format!(
            "`{url}`: https is not supported (the lab's servers speak plain HTTP)"
        )),
        other => Err(format!("`{url}`: scheme `{other}` is not http")),
    }
}

/// The policy a cdnlab manifest URL asks for: its `/p/POLICY` prefix, or `upstream-rr` for a
/// cdnlab manifest path without one (the unrewritten manifest); `None` for other URLs.
pub fn policy_of_url(url: &str) -> Option<String> {
    let path = reqwest::Url::parse(url).ok()?.path().to_string();
    if let Ok(request) = parse_path(&path) {
        if matches!(request.kind, Kind::Master | Kind::Mpd) {
            return Some(request.effective_policy().as_str().to_string());
        }
    }
    // A prefix naming a policy cdnlab does not know is still the experimenter's label.
    let rest = path.strip_prefix("/p/")?;
    let label = rest.split('/').next().filter(|l| !l.is_empty())?;
    Some(label.to_string())
}
