//! Typed reading of a role's TOML config table, where every error names its key.
//!
//! Topology variables substitute into strings only, so wherever a number or boolean is
//! expected a string holding one is accepted too (`segments = "${chunks}"`).

use std::str::FromStr;
use std::time::Duration;

use netem::units::{parse_duration_ns, parse_rate_bps};
use toml::{Table, Value};

use crate::cdn::{Assign, BaseUrl, Container, Offload, Quality, Video, VideoSpec, DEFAULT_VNODES};

/// A config table (or a nested one) and the name its keys are reported under.
pub(crate) struct Keys<'a> {
    table: &'a Table,
    /// `""` at the top; `videos[0].` inside the first video.
    prefix: String,
}

impl<'a> Keys<'a> {
    pub(crate) fn new(table: &'a Table) -> Keys<'a> {
        Keys {
            table,
            prefix: String::new(),
        }
    }

    fn nested(table: &'a Table, prefix: String) -> Keys<'a> {
        Keys { table, prefix }
    }

    /// The full name of `key` for messages.
    pub(crate) fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn fail<T>(&self, key: &str, message: impl std::fmt::Display) -> Result<T, String> {
        Err(format!("config key `{}`: {message}", self.name(key)))
    }

    /// Fails on the first key not in `known`.
    pub(crate) fn only(&self, known: &[&str], role: &str) -> Result<(), String> {
        match self.table.keys().find(|key| !known.contains(&key.as_str())) {
            Some(key) => Err(format!(
                "unknown config key `{}` for role {role} (known: {})",
                self.name(key),
                known.join(", ")
            )),
            None => Ok(()),
        }
    }

    pub(crate) fn string(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => self.fail(
                key,
                format!("expected a string, found {}", other.type_str()),
            ),
        }
    }

    /// A value parsed with `FromStr`, from a string or (for numbers) a bare TOML value.
    fn parsed<T: FromStr>(&self, key: &str, what: &str) -> Result<Option<T>, String>
    where
        T::Err: std::fmt::Display,
    {
        let text = match self.table.get(key) {
            None => return Ok(None),
            Some(Value::String(text)) => text.trim().to_string(),
            Some(Value::Integer(n)) => n.to_string(),
            Some(Value::Boolean(b)) => b.to_string(),
            Some(other) => {
                return self.fail(key, format!("expected {what}, found {}", other.type_str()))
            }
        };
        match text.parse::<T>() {
            Ok(value) => Ok(Some(value)),
            Err(e) => self.fail(key, format!("{text:?} is not {what}: {e}")),
        }
    }

    pub(crate) fn integer(&self, key: &str) -> Result<Option<u64>, String> {
        self.parsed(key, "a non-negative integer")
    }

    pub(crate) fn boolean(&self, key: &str) -> Result<Option<bool>, String> {
        self.parsed(key, "true or false")
    }

    pub(crate) fn port(&self, key: &str, default: u16) -> Result<u16, String> {
        Ok(self
            .parsed::<u16>(key, "a port (0-65535)")?
            .unwrap_or(default))
    }

    /// A time in tc units (`"30s"`).
    pub(crate) fn duration(&self, key: &str) -> Result<Option<Duration>, String> {
        match self.string(key)? {
            None => Ok(None),
            Some(text) => match parse_duration_ns(text) {
                Ok(ns) => Ok(Some(Duration::from_nanos(ns))),
                Err(e) => self.fail(key, e),
            },
        }
    }

    pub(crate) fn url(&self, key: &str) -> Result<Option<BaseUrl>, String> {
        match self.string(key)? {
            None => Ok(None),
            Some(text) => BaseUrl::parse(text)
                .map(Some)
                .or_else(|e| self.fail(key, e)),
        }
    }

    /// One URL or an array of them.
    pub(crate) fn urls(&self, key: &str) -> Result<Vec<BaseUrl>, String> {
        match self.table.get(key) {
            None => Ok(Vec::new()),
            Some(Value::String(_)) => Ok(self.url(key)?.into_iter().collect()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(text) => {
                        BaseUrl::parse(text).or_else(|e| self.fail(&format!("{key}[{i}]"), e))
                    }
                    other => self.fail(
                        &format!("{key}[{i}]"),
                        format!("expected a URL string, found {}", other.type_str()),
                    ),
                })
                .collect(),
            Some(other) => self.fail(
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
    pub(crate) fn assign(&self, key: &str) -> Result<Assign, String> {
        let Some(text) = self.string(key)? else {
            return Ok(Assign::ConsistentHash {
                vnodes: DEFAULT_VNODES,
            });
        };
        let bad = || {
            self.fail(
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

    /// `all` (the default), `none`, `fraction:F`, `first:K` or `most-popular:K`.
    pub(crate) fn offload(&self, key: &str) -> Result<Offload, String> {
        match self.string(key)? {
            None => Ok(Offload::All),
            Some(text) => text.parse().or_else(|e| self.fail(key, e)),
        }
    }

    /// `videos`: an array of video tables; the paper's video when absent.
    pub(crate) fn videos(&self, key: &str) -> Result<Vec<Video>, String> {
        match self.table.get(key) {
            None => Ok(vec![paper_video(DEFAULT_VIDEO, DEFAULT_SEGMENTS)?]),
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::Table(table) => {
                        video(&Keys::nested(table, format!("{}[{i}].", self.name(key))))
                    }
                    other => self.fail(
                        &format!("{key}[{i}]"),
                        format!("expected a table, found {}", other.type_str()),
                    ),
                })
                .collect(),
            Some(other) => self.fail(
                key,
                format!(
                    "expected a non-empty array of video tables, found {}",
                    other.type_str()
                ),
            ),
        }
    }

    /// A table, for nested settings such as `drr = { url = ..., control = ... }`.
    pub(crate) fn table(&self, key: &str) -> Result<Option<Keys<'a>>, String> {
        match self.table.get(key) {
            Some(Value::Table(table)) => {
                Ok(Some(Keys::nested(table, format!("{}.", self.name(key)))))
            }
            _ => Ok(None),
        }
    }

    /// The raw value, for keys with several accepted shapes.
    pub(crate) fn value(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }

    pub(crate) fn nested_at(&self, key: &str, index: usize, table: &'a Table) -> Keys<'a> {
        Keys::nested(table, format!("{}[{index}].", self.name(key)))
    }
}

/// The video a config without `videos` serves.
pub const DEFAULT_VIDEO: &str = "video";
/// Its length: the paper's 100 chunks of 2 s.
pub const DEFAULT_SEGMENTS: usize = 100;
/// The paper's ladder: 500 kbit/s, 1 and 2 Mbit/s.
const PAPER_BITRATES: [u64; 3] = [500_000, 1_000_000, 2_000_000];
/// The paper's chunk duration.
const PAPER_SEGMENT_S: f64 = 2.0;

const VIDEO_KEYS: &[&str] = &[
    "name",
    "segments",
    "segment_duration",
    "qualities",
    "container",
];
const QUALITY_KEYS: &[&str] = &["id", "bitrate", "codecs"];

fn paper_video(name: &str, segments: usize) -> Result<Video, String> {
    Video::new(VideoSpec {
        name: name.to_string(),
        segment_duration_s: PAPER_SEGMENT_S,
        qualities: PAPER_BITRATES.iter().map(|&b| quality_for(b)).collect(),
        segments,
        container: Container::Ts,
    })
    .map_err(|e| e.to_string())
}

/// A quality named after its bitrate: `500k` for 500 kbit/s, `1000k` for 1 Mbit/s (the ids
/// `crate::cdn`'s tests and the paper's ladder use), the bare bit/s otherwise.
fn quality_for(bitrate_bps: u64) -> Quality {
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

/// One `videos` entry: `name` (default `video`), `segments` (100), `segment_duration` (`2s`),
/// `qualities` (the paper's ladder; each a rate string such as `"500kbit"`, or a table
/// `{ id, bitrate, codecs }`), `container` (`ts` or `fmp4`).
fn video(keys: &Keys) -> Result<Video, String> {
    keys.only(VIDEO_KEYS, "video")?;
    let segments = match keys.integer("segments")? {
        None => DEFAULT_SEGMENTS,
        Some(n) => usize::try_from(n).or_else(|_| keys.fail("segments", "too large"))?,
    };
    let segment_duration_s = match keys.duration("segment_duration")? {
        None => PAPER_SEGMENT_S,
        Some(d) => d.as_secs_f64(),
    };
    let qualities = match keys.value("qualities") {
        None => PAPER_BITRATES.iter().map(|&b| quality_for(b)).collect(),
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
    Video::new(spec).map_err(|e| format!("config key `{}`: {e}", keys.prefix.trim_end_matches('.')))
}

fn quality(keys: &Keys, index: usize, item: &Value) -> Result<Quality, String> {
    let key = format!("qualities[{index}]");
    let rate = |text: &str, key: &str| parse_rate_bps(text).or_else(|e| keys.fail(key, e));
    match item {
        Value::String(text) => Ok(quality_for(rate(text, &key)?)),
        Value::Table(table) => {
            let inner = keys.nested_at("qualities", index, table);
            inner.only(QUALITY_KEYS, "quality")?;
            let Some(bitrate) = inner.string("bitrate")? else {
                return inner.fail("bitrate", "missing (e.g. \"500kbit\")");
            };
            let bitrate_bps = parse_rate_bps(bitrate).or_else(|e| inner.fail("bitrate", e))?;
            let default = quality_for(bitrate_bps);
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

/// `assign` with `least-loaded`'s start loads sized to `servers` (all empty).
pub(crate) fn sized_assign(assign: &Assign, servers: usize) -> Assign {
    match assign {
        Assign::LeastLoaded { loads } if loads.is_empty() => Assign::LeastLoaded {
            loads: vec![0; servers],
        },
        other => other.clone(),
    }
}
