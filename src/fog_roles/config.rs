//! The config tables of the fog roles (`cloud`, `fdn`, `fog-viewers`), read with the shared
//! `Keys` reader: every error names its key.

use crate::fog::catalog::CatalogSpec;
use crate::fog::estimator::Method;
use crate::roles::config::Keys;
use crate::roles::control::DEFAULT_CONTROL_PORT;
use std::time::Duration;
use toml::Table;

/// What a period (a heartbeat, a metadata refresh) may be: it must tick.
const PERIODS: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(10)..=Duration::from_secs(600);
/// What a time limit on one request may be.
const LIMITS: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(100)..=Duration::from_secs(600);

/// The most segments a catalogue may have (videos × `segments_max`): every fog role generates
/// it in memory, and an FDN's registration and the cloud's metadata carry segment lists.
const MAX_CATALOGUE_SEGMENTS: u64 = 1_000_000;
/// The most the cloud's metadata may hold: every FDN's list, were each to cache the whole
/// catalogue, within the control plane's 16 MiB frame at up to 10 bytes a segment (bincode
/// writes each of a segment's two numbers in 1, 3 or 5 bytes).
const MAX_METADATA_SEGMENTS: u64 = 1_500_000;
/// The longest on-demand processing of one segment, and the longest segment.
const MAX_PROCESSING: Duration = Duration::from_secs(600);
/// The highest bitrate of a video: 100 Gbit/s.
const MAX_BITRATE_BPS: u64 = 100_000_000_000;
/// The largest spread of processing times (σ / μ).
const MAX_PROCESSING_CV: f64 = 10.0;
/// The most FDNs one cloud serves (an FDN's `index` is below it).
const MAX_FDNS: usize = 4096;
/// The most sessions an FDN may keep open at once (each holds its video's segments).
const MAX_SESSIONS: usize = 10_000;
/// The longest start-up delay a viewer may ask for (an FDN refuses longer ones).
pub const MAX_STARTUP: Duration = Duration::from_secs(3600);

/// The catalog every fog role of a run generates alike; `catalog = { ... }` overrides a part.
pub fn default_catalog(seed: u64) -> CatalogSpec {
    CatalogSpec {
        seed,
        videos: 40,
        segments_min: 10,
        segments_max: 30,
        segment_duration_s: 1.0,
        bitrate_min_bps: 1_000_000,
        bitrate_max_bps: 4_000_000,
        processing_min_s: 0.3,
        processing_max_s: 0.9,
        processing_cv: 0.2,
    }
}

const CATALOG_KEYS: &[&str] = &[
    "videos",
    "segments_min",
    "segments_max",
    "segment_duration",
    "bitrate_min",
    "bitrate_max",
    "processing_min",
    "processing_max",
    "processing_cv",
];

fn catalog(keys: &Keys, seed: u64) -> Result<CatalogSpec, String> {
    let mut spec = default_catalog(seed);
    let Some(table) = keys.table("catalog") else {
        return Ok(spec);
    };
    table.only(CATALOG_KEYS, "`catalog`")?;
    let rate = |key: &str| -> Result<Option<u64>, String> {
        table
            .string(key)?
            .map(|text| netem::units::parse_rate_bps(text).or_else(|e| table.fail(key, e)))
            .transpose()
    };
    spec.videos = table.count_within("videos", spec.videos, 1..=100_000)?;
    spec.segments_min = table.count_within("segments_min", spec.segments_min, 1..=100_000)?;
    spec.segments_max = table.count_within("segments_max", spec.segments_max, 1..=100_000)?;
    if let Some(d) = table.duration("segment_duration")? {
        spec.segment_duration_s = d.as_secs_f64();
    }
    spec.bitrate_min_bps = rate("bitrate_min")?.unwrap_or(spec.bitrate_min_bps);
    spec.bitrate_max_bps = rate("bitrate_max")?.unwrap_or(spec.bitrate_max_bps);
    if let Some(d) = table.duration("processing_min")? {
        spec.processing_min_s = d.as_secs_f64();
    }
    if let Some(d) = table.duration("processing_max")? {
        spec.processing_max_s = d.as_secs_f64();
    }
    spec.processing_cv = table.number("processing_cv")?.unwrap_or(spec.processing_cv);
    if !(0.0..=MAX_PROCESSING_CV).contains(&spec.processing_cv) {
        return table.fail("processing_cv", format!("must be 0 to {MAX_PROCESSING_CV}"));
    }
    if spec.processing_max_s > MAX_PROCESSING.as_secs_f64() {
        return table.fail(
            "processing_max",
            format!("must be at most {MAX_PROCESSING:?}"),
        );
    }
    if spec.segments_max < spec.segments_min {
        return keys.fail("catalog", "needs segments_min ≤ segments_max");
    }
    if spec.bitrate_max_bps > MAX_BITRATE_BPS {
        return table.fail(
            "bitrate_max",
            format!("must be at most {MAX_BITRATE_BPS} bit/s"),
        );
    }
    if !(0.0..=MAX_PROCESSING.as_secs_f64()).contains(&spec.segment_duration_s) {
        return table.fail(
            "segment_duration",
            format!("must be at most {MAX_PROCESSING:?}"),
        );
    }
    let segments = spec.videos as u64 * spec.segments_max as u64;
    if segments > MAX_CATALOGUE_SEGMENTS {
        return keys.fail(
            "catalog",
            format!("videos × segments_max is {segments}, above {MAX_CATALOGUE_SEGMENTS} segments"),
        );
    }
    if spec.processing_max_s < spec.processing_min_s || spec.bitrate_max_bps < spec.bitrate_min_bps
    {
        return keys.fail("catalog", "a maximum is below its minimum");
    }
    Ok(spec)
}

#[derive(Debug, Clone)]
pub struct CloudConfig {
    pub catalog: CatalogSpec,
    /// The FDNs' node names, in index order.
    pub fdns: Vec<String>,
    pub port: u16,
    pub control_port: u16,
    pub heartbeat: Duration,
    /// How long a heartbeat's answer (or a new connection) is awaited.
    pub heartbeat_timeout: Duration,
    pub missed_limit: u32,
}

#[derive(Debug, Clone)]
pub struct FdnConfig {
    pub catalog: CatalogSpec,
    /// This FDN's place in the cloud's `fdns` (its cache placement follows from it).
    pub index: usize,
    pub cloud: String,
    pub method: Method,
    /// Share of all the catalog's segments held pre-processed (0–1): hot videos first, then
    /// beginnings.
    pub caching: f64,
    /// Share of the videos hot in this FDN's region, held first (`fog::catalog::Holdings`).
    pub hot_share: f64,
    /// Share of videos a CDN site holds whole (the CDN method).
    pub cdn_share: f64,
    pub workers: usize,
    pub seed: u64,
    pub port: u16,
    pub control_port: u16,
    /// Transfers from the cloud and each neighbour measured at start, to seed the path models.
    pub probes: usize,
    pub metadata_interval: Duration,
    pub fetch_timeout: Duration,
    /// Sessions open at once; `/open` past it is 503.
    pub max_sessions: usize,
    /// A session no segment has been asked of for this long is dropped, its fetches cancelled.
    pub session_idle_timeout: Duration,
}

#[derive(Debug, Clone)]
pub struct ViewersConfig {
    pub catalog: CatalogSpec,
    pub cloud: String,
    pub seed: u64,
    pub trace: u64,
    pub window: Duration,
    pub segments: usize,
    pub startup: Duration,
    pub probes: usize,
    /// Give up on a segment after this long (it counts as missed).
    pub segment_timeout: Duration,
}

fn seed(keys: &Keys) -> Result<u64, String> {
    Ok(keys.integer("seed")?.unwrap_or(1))
}

pub fn cloud(table: &Table) -> Result<CloudConfig, String> {
    let keys = Keys::new(table);
    keys.only(
        &[
            "seed",
            "catalog",
            "fdns",
            "port",
            "control_port",
            "heartbeat",
            "heartbeat_timeout",
            "missed_limit",
        ],
        "role cloud",
    )?;
    let fdns = keys.node_names("fdns", MAX_FDNS)?;
    let catalog = catalog(&keys, seed(&keys)?)?;
    let most = fdns.len() as u64 * catalog.videos as u64 * catalog.segments_max as u64;
    if most > MAX_METADATA_SEGMENTS {
        return keys.fail(
            "fdns",
            format!(
                "{} FDNs × a catalogue of up to {} segments could make the metadata hold {most} segments, above {MAX_METADATA_SEGMENTS} (the control plane's frame): fewer FDNs or a smaller catalogue",
                fdns.len(),
                catalog.videos as u64 * catalog.segments_max as u64
            ),
        );
    }
    Ok(CloudConfig {
        catalog,
        fdns,
        port: keys.port("port", 80)?,
        control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
        heartbeat: keys.duration_within(
            "heartbeat",
            Duration::from_millis(500),
            PERIODS.clone(),
        )?,
        heartbeat_timeout: keys.duration_within(
            "heartbeat_timeout",
            Duration::from_secs(1),
            LIMITS.clone(),
        )?,
        missed_limit: keys.count_within("missed_limit", 3, 1..=1000)? as u32,
    })
}

/// `30%` or `0.3`: a share in [0, 1].
fn share(keys: &Keys, key: &str, default: f64) -> Result<f64, String> {
    let value = match keys.value(key) {
        Some(toml::Value::String(text)) if text.trim().ends_with('%') => {
            netem::units::parse_percent(text).or_else(|e| keys.fail(key, e))?
        }
        _ => keys.number(key)?.unwrap_or(default),
    };
    if !(0.0..=1.0).contains(&value) {
        return keys.fail(
            key,
            format!("{value} is not a share between 0 and 1 (or 0% and 100%)"),
        );
    }
    Ok(value)
}

pub fn fdn(table: &Table) -> Result<FdnConfig, String> {
    let keys = Keys::new(table);
    keys.only(
        &[
            "seed",
            "catalog",
            "index",
            "cloud",
            "method",
            "caching",
            "hot_share",
            "cdn_share",
            "workers",
            "port",
            "control_port",
            "probes",
            "metadata_interval",
            "fetch_timeout",
            "max_sessions",
            "session_idle_timeout",
        ],
        "role fdn",
    )?;
    let method = match keys.string("method")? {
        Some(name) => Method::parse(name).or_else(|e| keys.fail("method", e))?,
        None => return keys.fail("method", "is required"),
    };
    let seed = seed(&keys)?;
    Ok(FdnConfig {
        catalog: catalog(&keys, seed)?,
        index: match keys.count("index")? {
            Some(i) if i < MAX_FDNS => i,
            Some(i) => return keys.fail("index", format!("{i} is not 0 to {}", MAX_FDNS - 1)),
            None => {
                return keys.fail(
                    "index",
                    "is required: this FDN's place in the cloud's `fdns`, counted from 0",
                )
            }
        },
        cloud: keys.node_name("cloud", keys.string("cloud")?.unwrap_or("cloud"))?,
        method,
        caching: share(&keys, "caching", 0.3)?,
        hot_share: share(&keys, "hot_share", 0.05)?,
        cdn_share: share(&keys, "cdn_share", 0.75)?,
        workers: keys.count_within("workers", 3, 1..=1024)?,
        seed,
        port: keys.port("port", 80)?,
        control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
        probes: keys.count_within("probes", 3, 0..=100)?,
        metadata_interval: keys.duration_within(
            "metadata_interval",
            Duration::from_millis(500),
            PERIODS.clone(),
        )?,
        fetch_timeout: keys.duration_within(
            "fetch_timeout",
            Duration::from_secs(10),
            LIMITS.clone(),
        )?,
        max_sessions: keys.count_within("max_sessions", 256, 1..=MAX_SESSIONS)?,
        session_idle_timeout: keys.duration_within(
            "session_idle_timeout",
            Duration::from_secs(30),
            Duration::from_millis(100)..=Duration::from_secs(24 * 3600),
        )?,
    })
}

pub fn viewers(table: &Table) -> Result<ViewersConfig, String> {
    let keys = Keys::new(table);
    keys.only(
        &[
            "seed",
            "catalog",
            "cloud",
            "trace",
            "window",
            "segments",
            "startup",
            "probes",
            "segment_timeout",
        ],
        "role fog-viewers",
    )?;
    let seed = seed(&keys)?;
    Ok(ViewersConfig {
        catalog: catalog(&keys, seed)?,
        cloud: keys.node_name("cloud", keys.string("cloud")?.unwrap_or("cloud"))?,
        seed,
        trace: keys.integer("trace")?.unwrap_or(0),
        window: keys.duration_within(
            "window",
            Duration::from_secs(30),
            Duration::ZERO..=Duration::from_secs(24 * 3600),
        )?,
        segments: keys.count_within("segments", 350, 1..=1_000_000)?,
        startup: keys.duration_within(
            "startup",
            Duration::from_secs(1),
            Duration::ZERO..=MAX_STARTUP,
        )?,
        probes: keys.count_within("probes", 3, 0..=100)?,
        segment_timeout: keys.duration_within(
            "segment_timeout",
            Duration::from_secs(30),
            LIMITS.clone(),
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed<T>(read: fn(&Table) -> Result<T, String>, text: &str) -> Result<T, String> {
        read(&text.parse::<Table>().unwrap())
    }

    /// Sizes a role allocates by, and times it sleeps for, are refused past their bounds with
    /// the key named, instead of aborting the process.
    #[test]
    fn sizes_past_their_bounds_are_refused_by_name() {
        let fdn = "index = 0\nmethod = \"robust-ffdn\"\n";
        assert!(parsed(super::fdn, fdn).is_ok());
        for (extra, key) in [
            ("catalog = { videos = 1000000000 }", "videos"),
            ("catalog = { segments_max = 4000000000 }", "segments_max"),
            (
                "catalog = { videos = 100000, segments_max = 100 }",
                "catalog",
            ),
            ("catalog = { processing_cv = 1e20 }", "processing_cv"),
            ("catalog = { processing_max = \"2h\" }", "processing_max"),
            ("catalog = { bitrate_max = \"1000gbit\" }", "bitrate_max"),
            (
                "catalog = { segment_duration = \"1h\" }",
                "segment_duration",
            ),
            ("workers = 1000000000", "workers"),
            ("workers = 0", "workers"),
            ("probes = 1000000", "probes"),
            ("max_sessions = 1000000", "max_sessions"),
            ("session_idle_timeout = \"1000h\"", "session_idle_timeout"),
        ] {
            let refused = parsed(super::fdn, &format!("{fdn}{extra}")).unwrap_err();
            assert!(refused.contains(key), "{extra}: {refused}");
        }
        for (text, key) in [
            ("segments = 1000000000", "segments"),
            ("window = \"1000h\"", "window"),
            ("probes = 1000", "probes"),
            // An FDN refuses an `/open` whose start-up delay is past an hour.
            ("startup = \"2h\"", "startup"),
            ("segment_timeout = \"1000h\"", "segment_timeout"),
        ] {
            let refused = parsed(super::viewers, text).unwrap_err();
            assert!(refused.contains(key), "{text}: {refused}");
        }
        // The index must name a place among the most FDNs a cloud can have.
        assert!(parsed(super::fdn, "index = 4095\nmethod = \"robust-ffdn\"").is_ok());
        let refused = parsed(super::fdn, "index = 4096\nmethod = \"robust-ffdn\"").unwrap_err();
        assert!(
            refused.contains("`index`: 4096 is not 0 to 4095"),
            "{refused}"
        );
        let refused = parsed(super::fdn, "method = \"robust-ffdn\"").unwrap_err();
        assert!(refused.contains("`index`: is required"), "{refused}");
        let refused =
            parsed(super::cloud, "fdns = [\"f1\"]\nmissed_limit = 5000000000").unwrap_err();
        assert!(refused.contains("missed_limit"), "{refused}");
        // Five FDNs that could each cache a catalogue of a million segments: the metadata
        // could not cross the control plane.
        let big = "fdns = [\"f1\", \"f2\", \"f3\", \"f4\", \"f5\"]\ncatalog = { videos = 10000, segments_min = 100, segments_max = 100 }";
        let refused = parsed(super::cloud, big).unwrap_err();
        assert!(refused.contains("frame"), "{refused}");
        // Four FDNs caching all of a catalogue of 1000 × 1000: about 20 MB of metadata.
        let four = "fdns = [\"f1\", \"f2\", \"f3\", \"f4\"]\ncatalog = { videos = 1000, segments_min = 1000, segments_max = 1000 }";
        assert!(parsed(super::cloud, four).unwrap_err().contains("frame"));
        let three = "fdns = [\"f1\", \"f2\", \"f3\"]\ncatalog = { videos = 1000, segments_min = 500, segments_max = 500 }";
        assert!(parsed(super::cloud, three).is_ok());
    }
}
