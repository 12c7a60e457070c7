//! `cdnlab p2p report RUN_DIR…`: runs of `topologies/hybrid-p2p-cloud.toml` side by side, from
//! what was measured, not computed — the cloud's upload from its own counters
//! (`nodes/cloud/usage.json`), inter-ISP traffic from the peering links' counters
//! (`links.json`: every direction of a link between two ISP gateways, frames and all), where
//! the peers' downloads came from and their stalls (each peer's summary), and the tracker's
//! last measured dispatch (`nodes/tracker/tracker.json`).

use crate::regular_file::{Beneath, MAX_RUN_FILE};
use crate::table::Table;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// One run's measurements.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    pub run: String,
    pub dispatch: String,
    pub churn: String,
    /// Bytes the cloud served, and how many chunks.
    pub cloud_bytes: u64,
    pub cloud_chunks: u64,
    /// Bytes on the peering links, both directions (Ethernet frames, as the shaper or the
    /// kernel qdisc counts).
    pub inter_isp_bytes: u64,
    /// The peers' downloads by source, their plays and stalls.
    pub from_own_isp: u64,
    pub from_other_isp: u64,
    pub from_cloud: u64,
    pub failed_downloads: u64,
    /// Downloads still under way when their peer wrote its summary.
    pub unfinished_downloads: u64,
    /// Downloads the tracker sent to a peer that did not deliver (the cloud did instead).
    pub peer_fallbacks: u64,
    /// Downloads asked of the cloud because the tracker's answer came too late: the tracker
    /// may have counted them as sent to a peer.
    pub tracker_unanswered: u64,
    pub played: u64,
    pub stalls: u64,
    pub stall_rate: f64,
    pub peers: usize,
    pub failed_peers: usize,
}

/// A run's file `relative` to its directory `dir`, as JSON. The directory may be anyone's, so
/// only a regular file reached through no link below it is read, and a FIFO is not waited on.
fn read_json(dir: &Path, relative: &str) -> Result<Value, String> {
    let file = Beneath::new(dir, relative);
    let failed = |e: String| format!("{}: {e}", file.path().display());
    let text = file.read(MAX_RUN_FILE).map_err(|e| failed(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| failed(e.to_string()))
}

/// Reads one run directory.
pub fn read(dir: &Path) -> Result<RunReport, String> {
    let summary = read_json(dir, "summary.json")?;
    let tracker = read_json(dir, "nodes/tracker/tracker.json")?;
    let usage = read_json(dir, "nodes/cloud/usage.json")?;
    let links = read_json(dir, "links.json")?;
    let gateways: Vec<&str> = (tracker["gateways"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    if gateways.is_empty() {
        return Err(format!(
            "{}: the tracker names no ISP gateways",
            dir.display()
        ));
    }
    let mut inter_isp_bytes = 0;
    let mut peering = 0;
    for direction in links.as_array().into_iter().flatten() {
        let from = direction["from"].as_str().unwrap_or("");
        let to: Vec<&str> = (direction["to"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        if gateways.contains(&from) && to.len() == 1 && gateways.contains(&to[0]) {
            peering += 1;
            // `counters` since both backends had them; the shaper's own before.
            let bytes = (direction["counters"]["bytes"].as_u64())
                .or_else(|| direction["shaper"]["stats"]["bytes"].as_u64())
                .ok_or_else(|| {
                    format!(
                        "{}: links.json gives {from} → {} no `counters.bytes`: inter-ISP bytes need them",
                        dir.display(),
                        to[0]
                    )
                })?;
            inter_isp_bytes = u64::saturating_add(inter_isp_bytes, bytes);
        }
    }
    if peering == 0 {
        return Err(format!(
            "{}: no peering link between the gateways {gateways:?}",
            dir.display()
        ));
    }
    let clients = summary["clients"].as_array().cloned().unwrap_or_default();
    let sum = |key: &str| {
        (clients.iter())
            .filter_map(|c| c[key].as_u64())
            .fold(0, u64::saturating_add)
    };
    let (played, stalls) = (sum("played"), sum("stalls"));
    let var = |key: &str| summary["vars"][key].as_str().unwrap_or("").to_string();
    Ok(RunReport {
        run: dir.display().to_string(),
        dispatch: tracker["dispatch"].as_str().unwrap_or("").to_string(),
        churn: var("churn"),
        cloud_bytes: usage["bytes"].as_u64().unwrap_or(0),
        cloud_chunks: usage["requests"].as_u64().unwrap_or(0),
        inter_isp_bytes,
        from_own_isp: sum("from_own_isp"),
        from_other_isp: sum("from_other_isp"),
        from_cloud: sum("from_cloud"),
        failed_downloads: sum("failed_downloads"),
        unfinished_downloads: sum("unfinished_downloads"),
        peer_fallbacks: sum("peer_fallbacks"),
        tracker_unanswered: sum("tracker_unanswered"),
        played,
        stalls,
        stall_rate: if played == 0 {
            0.0
        } else {
            stalls as f64 / played as f64
        },
        peers: clients.len(),
        failed_peers: clients.iter().filter(|c| c["failed"] == true).count(),
    })
}

/// The runs as a markdown table.
pub fn table(reports: &[RunReport]) -> String {
    let mut table = Table::new(&[
        "run",
        "dispatch",
        "churn",
        "cloud MB (its counters)",
        "inter-ISP MB (peering links)",
        "chunks: own ISP / other ISP / cloud",
        "fallbacks to the cloud: peer failed / tracker late",
        "stall rate",
        "peers failed",
    ]);
    let mb = |b: u64| format!("{:.2}", b as f64 / 1e6);
    for r in reports {
        table.push(vec![
            r.run.clone(),
            r.dispatch.clone(),
            r.churn.clone(),
            mb(r.cloud_bytes),
            mb(r.inter_isp_bytes),
            format!(
                "{} / {} / {}",
                r.from_own_isp, r.from_other_isp, r.from_cloud
            ),
            format!("{} / {}", r.peer_fallbacks, r.tracker_unanswered),
            format!("{:.3}", r.stall_rate),
            format!("{} of {}", r.failed_peers, r.peers),
        ]);
    }
    table.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run directory's files are read through no link: one that points elsewhere is refused,
    /// naming the file, and what it points at is not read.
    #[test]
    fn a_linked_file_in_the_run_is_refused() {
        let dir = crate::testing::TempDir::new("p2p-report-link");
        let tracker = dir.0.join("nodes/tracker");
        std::fs::create_dir_all(&tracker).unwrap();
        std::fs::write(dir.0.join("summary.json"), "{}").unwrap();
        let elsewhere = dir.0.join("elsewhere.json");
        std::fs::write(&elsewhere, r#"{"gateways": ["gw"]}"#).unwrap();
        std::os::unix::fs::symlink(&elsewhere, tracker.join("tracker.json")).unwrap();
        let refused = read(&dir.0).unwrap_err();
        assert!(
            refused.contains("nodes/tracker/tracker.json: "),
            "{refused}"
        );
        assert!(!refused.contains("ISP gateways"), "{refused}");
    }
}
