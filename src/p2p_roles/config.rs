//! The config tables of the hybrid P2P-cloud roles. The tracker and every peer share the
//! catalogue (`Catalogue`: J chunks of `chunk_size` bytes, caches of B, slots of `slot`), which
//! they must agree on.

use crate::p2p::tracker::TrackerParams;
use crate::p2p::Policy;
use crate::roles::config::Keys;
use crate::roles::control::DEFAULT_CONTROL_PORT;
use crate::topology::{Program, Topology};
use std::time::Duration;
use toml::Table;

/// The chunks, caches and slots every role agrees on.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    /// J: chunks `0 … J−1`, chunk 0 the most popular.
    pub chunks: usize,
    /// B, chunks a peer caches.
    pub cache: usize,
    /// One slot plays one chunk.
    pub slot: Duration,
    pub chunk_size: u64,
}

impl Catalogue {
    const KEYS: [&'static str; 4] = ["chunks", "cache", "slot", "chunk_size"];

    fn read(keys: &Keys) -> Result<Catalogue, String> {
        let (chunks, chunk_size) = chunks_and_size(keys)?;
        let cache = keys.count("cache")?.unwrap_or(8);
        if cache == 0 || cache > chunks {
            return keys.fail(
                "cache",
                format!("B = {cache} must be 1 to the number of chunks J = {chunks}"),
            );
        }
        let slot = keys.duration("slot")?.unwrap_or(Duration::from_millis(500));
        if !(Duration::from_millis(50)..=Duration::from_secs(60)).contains(&slot) {
            return keys.fail("slot", "must be 50ms to 60s");
        }
        Ok(Catalogue {
            chunks,
            cache,
            slot,
            chunk_size,
        })
    }
}

/// What a tracker and its peers must agree on: J, B and the slot (the chunk size is the
/// peers' and the cloud's).
fn tracker_terms(catalogue: &Catalogue) -> (usize, usize, Duration) {
    (catalogue.chunks, catalogue.cache, catalogue.slot)
}

/// [`tracker_terms`] in words.
fn describe_terms((chunks, cache, slot): (usize, usize, Duration)) -> String {
    let slot = netem::units::format_duration_ns(slot.as_nanos() as u64);
    format!("chunks {chunks}, cache {cache}, slot {slot}")
}

/// Where the P2P roles of a topology describe different systems: a peer whose tracker or cloud
/// is no node of the topology or one running another role, whose J, B or slot are not its
/// tracker's (the tracker would dispatch for caches and slots the peers do not have), or whose
/// chunks are not its cloud's. A node running a command of the user's own may be either.
pub fn disagreements(topology: &Topology) -> Vec<String> {
    let program_of = |name: &str| {
        (topology.nodes.iter())
            .find(|node| node.name == name)
            .map(|node| &node.program)
    };
    let mut problems = Vec::new();
    for node in &topology.nodes {
        let Program::Role { role, config } = &node.program else {
            continue;
        };
        if role != "p2p-peer" {
            continue;
        }
        let Ok(own) = peer(config) else { continue };
        let mut differs = |what: String| {
            problems.push(format!("node {} (role p2p-peer): {what}", node.name));
        };
        let mut other = |what: &str, name: &str, wanted: &str| match program_of(name) {
            None => {
                differs(format!("its {what} `{name}` is no node of the topology"));
                None
            }
            Some(Program::Role { role, config }) if role == wanted => Some(config),
            Some(Program::Role { role, .. }) => {
                differs(format!(
                    "its {what} `{name}` runs role {role}, not {wanted}"
                ));
                None
            }
            Some(_) => None,
        };
        let tracker = other("tracker", &own.tracker, "p2p-tracker").and_then(|t| tracker(t).ok());
        let cloud = other("cloud", &own.cloud, "p2p-cloud").and_then(|c| cloud(c).ok());
        if let Some(tracker) = tracker {
            let (ours, theirs) = (
                tracker_terms(&own.catalogue),
                tracker_terms(&tracker.catalogue),
            );
            if ours != theirs {
                differs(format!(
                    "its {} are not its tracker {}'s ({})",
                    describe_terms(ours),
                    own.tracker,
                    describe_terms(theirs)
                ));
            }
        }
        let (chunks, chunk_size) = (own.catalogue.chunks, own.catalogue.chunk_size);
        if let Some(cloud) = cloud.filter(|c| (c.chunks, c.chunk_size) != (chunks, chunk_size)) {
            differs(format!(
                "its chunks {chunks} of {chunk_size} bytes are not its cloud {}'s ({} of {})",
                own.cloud, cloud.chunks, cloud.chunk_size
            ));
        }
    }
    problems
}

/// J and the chunks' size, which the cloud needs too.
fn chunks_and_size(keys: &Keys) -> Result<(usize, u64), String> {
    let chunks = keys.count("chunks")?.unwrap_or(40);
    if !(1..=100_000).contains(&chunks) {
        return keys.fail("chunks", "must be 1 to 100000");
    }
    let chunk_size = keys.integer("chunk_size")?.unwrap_or(25_000);
    if !(1..=64 << 20).contains(&chunk_size) {
        return keys.fail("chunk_size", "must be 1 byte to 64 MiB");
    }
    Ok((chunks, chunk_size))
}

/// The most ISPs a tracker dispatches among.
pub const MAX_ISPS: usize = 32;

fn policy(keys: &Keys) -> Result<Policy, String> {
    match keys.string("dispatch")? {
        None => Ok(Policy::Optimal),
        Some(text) => text.parse().or_else(|e| keys.fail("dispatch", e)),
    }
}

#[derive(Debug, Clone)]
pub struct TrackerConfig {
    pub catalogue: Catalogue,
    /// The peers' node names, peer i the i-th.
    pub peers: Vec<String>,
    /// The ISP gateway of each ISP (its node on the ISP's LAN), for the record.
    pub gateways: Vec<String>,
    pub params: TrackerParams,
    /// The port of `GET /`, the tracker's state.
    pub port: u16,
    pub control_port: u16,
    /// How often the record is written while the tracker runs.
    pub record_every: Duration,
    pub seed: u64,
}

pub fn tracker(table: &Table) -> Result<TrackerConfig, String> {
    let keys = Keys::new(table);
    let mut known = vec![
        "peers",
        "peer_isp",
        "upload",
        "gateways",
        "dispatch",
        "port",
        "control_port",
        "record_every",
        "seed",
    ];
    known.extend(Catalogue::KEYS);
    keys.only(&known, "role p2p-tracker")?;
    let catalogue = Catalogue::read(&keys)?;
    let peers = keys.node_names("peers", 4096)?;
    let upload = keys.numbers("upload")?;
    let isps = upload.len();
    if isps > MAX_ISPS {
        // `dispatch.csv` keeps isps² shares a slot.
        return keys.fail("upload", format!("{isps} ISPs: at most {MAX_ISPS}"));
    }
    if let Some(m) = upload.iter().position(|&u| u <= 0.0) {
        return keys.fail(
            "upload",
            format!("the upload of ISP {} must be above 0", m + 1),
        );
    }
    let isp_of = (keys.items("peer_isp")?.iter())
        .map(|text| match text.parse::<usize>() {
            Ok(m) if (1..=isps).contains(&m) => Ok(m - 1),
            _ => keys.fail(
                "peer_isp",
                format!("`{text}` is not an ISP number from 1 to {isps} (one per upload)"),
            ),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if isp_of.len() != peers.len() {
        return keys.fail(
            "peer_isp",
            format!("{} ISP numbers for {} peers", isp_of.len(), peers.len()),
        );
    }
    let gateways = match keys.value("gateways") {
        None => Vec::new(),
        Some(_) => (keys.items("gateways")?.iter())
            .map(|g| keys.node_name("gateways", g))
            .collect::<Result<Vec<_>, _>>()?,
    };
    if !gateways.is_empty() && gateways.len() != isps {
        return keys.fail(
            "gateways",
            format!("{} gateways for {isps} ISPs", gateways.len()),
        );
    }
    let params = TrackerParams {
        isp_of,
        upload,
        chunks: catalogue.chunks,
        cache: catalogue.cache,
        policy: policy(&keys)?,
        slot_s: catalogue.slot.as_secs_f64(),
    };
    // Every other check of the ISPs (one without peers, …) is the tracker's own.
    crate::p2p::tracker::Tracker::new(params.clone()).or_else(|e| {
        let key = match &e {
            crate::p2p::P2pError::Invalid { name, .. } if name.starts_with("peers of") => {
                "peer_isp"
            }
            _ => "upload",
        };
        keys.fail(key, e)
    })?;
    let record_every = keys
        .duration("record_every")?
        .unwrap_or(Duration::from_secs(5));
    if record_every < Duration::from_millis(100) {
        return keys.fail("record_every", "must be at least 100ms");
    }
    Ok(TrackerConfig {
        catalogue,
        peers,
        gateways,
        params,
        port: keys.port("port", 80)?,
        control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
        record_every,
        seed: keys.integer("seed")?.unwrap_or(1),
    })
}

#[derive(Debug, Clone)]
pub struct PeerConfig {
    pub catalogue: Catalogue,
    pub tracker: String,
    pub cloud: String,
    /// π_0, the chance that the peer is idle (offline) in a slot.
    pub idle: f64,
    /// The Zipf exponent of chunk popularity.
    pub zipf: f64,
    /// How many slots ahead a chunk is fetched: the time a download has.
    pub lookahead: u32,
    pub duration: Duration,
    pub port: u16,
    pub cloud_port: u16,
    pub control_port: u16,
    /// Every download (from a peer or the cloud) is given up after this long.
    pub fetch_timeout: Duration,
    pub seed: u64,
}

pub fn peer(table: &Table) -> Result<PeerConfig, String> {
    let keys = Keys::new(table);
    let mut known = vec![
        "tracker",
        "cloud",
        "idle",
        "zipf",
        "lookahead",
        "duration",
        "port",
        "cloud_port",
        "control_port",
        "fetch_timeout",
        "seed",
    ];
    known.extend(Catalogue::KEYS);
    keys.only(&known, "role p2p-peer")?;
    let catalogue = Catalogue::read(&keys)?;
    let idle = keys.number("idle")?.unwrap_or(0.2);
    if !(0.0..1.0).contains(&idle) {
        return keys.fail("idle", "π_0 must be at least 0 and below 1");
    }
    let zipf = keys.number("zipf")?.unwrap_or(0.8);
    if !(zipf.is_finite() && zipf >= 0.0) {
        return keys.fail("zipf", "must be a number ≥ 0");
    }
    let lookahead = keys.integer("lookahead")?.unwrap_or(4);
    if !(1..=100).contains(&lookahead) {
        return keys.fail("lookahead", "must be 1 to 100 slots");
    }
    let duration = keys.duration_within(
        "duration",
        Duration::from_secs(60),
        Duration::ZERO..=Duration::from_secs(24 * 3600),
    )?;
    if duration < catalogue.slot * (lookahead as u32 + 1) {
        return keys.fail("duration", "must last more than the lookahead's slots");
    }
    let tracker = keys.string("tracker")?.unwrap_or("tracker");
    let cloud = keys.string("cloud")?.unwrap_or("cloud");
    let fetch_timeout = keys
        .duration("fetch_timeout")?
        .unwrap_or(Duration::from_secs(10));
    if !(Duration::from_millis(100)..=Duration::from_secs(600)).contains(&fetch_timeout) {
        return keys.fail("fetch_timeout", "must be 100ms to 600s");
    }
    Ok(PeerConfig {
        tracker: keys.node_name("tracker", tracker)?,
        cloud: keys.node_name("cloud", cloud)?,
        catalogue,
        idle,
        zipf,
        lookahead: lookahead as u32,
        duration,
        port: keys.port("port", 80)?,
        cloud_port: keys.port("cloud_port", 80)?,
        control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
        fetch_timeout,
        seed: keys.integer("seed")?.unwrap_or(1),
    })
}

#[derive(Debug, Clone)]
pub struct CloudConfig {
    pub chunks: usize,
    pub chunk_size: u64,
    pub port: u16,
    /// How often the counts are written while the cloud runs.
    pub record_every: Duration,
}

pub fn cloud(table: &Table) -> Result<CloudConfig, String> {
    let keys = Keys::new(table);
    keys.only(
        &["chunks", "chunk_size", "port", "record_every"],
        "role p2p-cloud",
    )?;
    let (chunks, chunk_size) = chunks_and_size(&keys)?;
    let record_every = keys
        .duration("record_every")?
        .unwrap_or(Duration::from_secs(1));
    if record_every < Duration::from_millis(100) {
        return keys.fail("record_every", "must be at least 100ms");
    }
    Ok(CloudConfig {
        chunks,
        chunk_size,
        port: keys.port("port", 80)?,
        record_every,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer whose J, B or slot are not its tracker's, whose chunks are not its cloud's, or
    /// whose tracker or cloud is missing or runs another role, is named with both sides; one
    /// that agrees is not, nor one whose tracker is a command of the user's own.
    #[test]
    fn peers_that_disagree_with_their_tracker_or_cloud_are_named() {
        let text = r#"name = "t"
[nodes.tracker]
role = "p2p-tracker"
config = { peers = ["p1", "p2", "p3"], upload = "1.0", peer_isp = ["1", "1", "1"], chunks = "24", cache = "8" }
[nodes.cloud]
role = "p2p-cloud"
config = { chunks = "24", chunk_size = "1000" }
[nodes.own]
command = ["sleep", "60"]
[nodes.p1]
role = "p2p-peer"
config = { chunks = "24", cache = "8", chunk_size = "1000" }
[nodes.p2]
role = "p2p-peer"
config = { chunks = "24", cache = "8", slot = "1s", chunk_size = "1000" }
[nodes.p3]
role = "p2p-peer"
config = { chunks = "30", cache = "8", chunk_size = "1000" }
[nodes.p4]
role = "p2p-peer"
config = { tracker = "nowhere", cloud = "tracker" }
[nodes.p5]
role = "p2p-peer"
config = { tracker = "own", chunks = "24", chunk_size = "1000" }
[[lans]]
name = "all"
members = ["tracker", "cloud", "own", "p1", "p2", "p3", "p4", "p5"]
"#;
        let topology =
            crate::topology::parse(text, "t.toml", &crate::topology::LoadOptions::default())
                .expect("the topology reads");
        assert_eq!(
            disagreements(&topology),
            [
                "node p2 (role p2p-peer): its chunks 24, cache 8, slot 1s are not its tracker \
                 tracker's (chunks 24, cache 8, slot 500ms)",
                "node p3 (role p2p-peer): its chunks 30, cache 8, slot 500ms are not its tracker \
                 tracker's (chunks 24, cache 8, slot 500ms)",
                "node p3 (role p2p-peer): its chunks 30 of 1000 bytes are not its cloud cloud's \
                 (24 of 1000)",
                "node p4 (role p2p-peer): its tracker `nowhere` is no node of the topology",
                "node p4 (role p2p-peer): its cloud `tracker` runs role p2p-tracker, not p2p-cloud",
            ]
        );
    }

    #[test]
    fn a_peer_listed_twice_is_refused() {
        let table: Table = r#"peers = ["i1-1", "i2-1", "i1-1"]"#.parse().expect("TOML");
        let refused = tracker(&table).expect_err("a peer listed twice");
        assert!(
            refused.contains("`peers`") && refused.contains("`i1-1` is listed twice"),
            "{refused}"
        );
    }

    #[test]
    fn too_many_isps_and_too_long_a_play_are_refused() {
        let upload = vec!["1.0"; MAX_ISPS + 1].join(", ");
        let table: Table = format!("peers = [\"a\"]\nupload = [{upload}]")
            .parse()
            .expect("TOML");
        let refused = tracker(&table).expect_err("33 ISPs");
        assert!(
            refused.contains("`upload`") && refused.contains("at most 32"),
            "{refused}"
        );
        let table: Table = r#"duration = "86401s""#.parse().expect("TOML");
        let refused = peer(&table).expect_err("a day and a second");
        assert!(refused.contains("must be 0ns to 86400s"), "{refused}");
    }

    #[test]
    fn a_fetch_timeout_out_of_range_is_refused_and_the_default_taken() {
        for timeout in ["0s", "601s"] {
            let table: Table = format!("fetch_timeout = \"{timeout}\"")
                .parse()
                .expect("TOML");
            let refused = peer(&table).expect_err(timeout);
            assert!(
                refused.contains("`fetch_timeout`") && refused.contains("must be 100ms to 600s"),
                "{timeout}: {refused}"
            );
        }
        let default = peer(&Table::new()).expect("every key has a default");
        assert_eq!(default.fetch_timeout, Duration::from_secs(10));
    }
}
