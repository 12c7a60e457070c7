//! Client results: each client's own `summary.json`, or a failure record when it wrote none,
//! and the table `cdnlab run` prints.

use crate::lab::{process, LabState};
use crate::roles::summary::ClientSummary;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::ExitStatus;
use std::time::Duration;

/// A run's `summary.json`: the lab, its variables, and every client's summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub lab: String,
    pub vars: BTreeMap<String, String>,
    pub link_backend: String,
    pub seed: u64,
    pub duration_s: f64,
    pub clients: Vec<ClientSummary>,
    /// The nodes other than clients that ended by themselves while the clients ran (a
    /// server that failed, say), with how each ended; a run with any fails.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers_ended: Vec<ServerEnded>,
}

/// A node other than a client whose process ended by itself during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerEnded {
    pub node: String,
    /// `exited with status N`, `was killed by signal N (NAME)`, or `is gone`.
    pub how: String,
}

/// The result of client `node`: its `summary.json` with `node` and `failed` filled in. A client
/// that exits 0 without one succeeded with no metrics; one that fails without one gets an
/// `error` naming why, with the end of its log.
pub fn client_result(
    state: &LabState,
    node: usize,
    status: Option<ExitStatus>,
    timeout: Duration,
) -> ClientSummary {
    let name = &state.topology.nodes[node].name;
    let path = state.out_dir.join(name).join("summary.json");
    let log = state.log_path(name);
    let reported: Option<ClientSummary> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    let failure = match status {
        Some(s) if s.success() => None,
        Some(s) => Some(format!("exited with {s}")),
        None => Some(format!("did not finish within {timeout:?} and was stopped")),
    };
    let mut result = match (reported, &failure) {
        (Some(summary), _) => summary,
        // Any program can be a client; one that succeeds without writing results still ran.
        (None, None) => ClientSummary::default(),
        (None, Some(why)) => ClientSummary::failure(
            name,
            format!(
                "{why}; wrote no {}; the end of its log:\n{}",
                path.display(),
                process::log_tail(&log, 5)
            ),
        ),
    };
    result.node = name.clone();
    if let (false, Some(why)) = (result.failed, failure) {
        result.failed = true;
        result.error.get_or_insert(why);
    }
    result
}

/// The metrics a run's table shows when clients report them (scenario families: HAS clients,
/// link probes); everything else stays in summary.json. Clients reporting none of these get a
/// column for every number they report.
const HEADLINE: &[&str] = &[
    "policy",
    "abr",
    "startup_delay_s",
    "avg_quality_mbps",
    "stall_time_s",
    "stall_count",
    "switches",
    "redirects_per_chunk",
    "redirect_time_s",
    "rtt_ms_p50",
    "rtt_ms_p99",
    "rtt_ms_stdev",
    "rtt_loss_rate",
    "goodput_mbps",
];

/// A table with one row per client: its node, whether it failed, and its headline metrics (or
/// every numeric metric, for clients that report no headline one).
pub fn table(summary: &RunSummary) -> String {
    let clients = &summary.clients;
    let reported = |key: &str| {
        clients
            .iter()
            .any(|c| c.get(key).is_some_and(|v| !v.is_null()))
    };
    let mut columns: Vec<String> = HEADLINE
        .iter()
        .filter(|k| reported(k))
        .map(|k| k.to_string())
        .collect();
    if !columns.iter().any(|c| {
        clients
            .iter()
            .any(|cl| cl.fields.get(c).is_some_and(Value::is_number))
    }) {
        columns = clients
            .iter()
            .flat_map(|c| {
                c.fields
                    .iter()
                    .filter(|(_, v)| v.is_number())
                    .map(|(k, _)| k.clone())
            })
            .collect();
        columns.sort();
        columns.dedup();
    }
    let mut header = vec!["node".to_string(), "status".to_string()];
    header.extend(columns.iter().cloned());
    let mut rows = vec![header];
    for client in clients {
        let mut row = vec![
            client.node.clone(),
            if client.failed { "FAILED" } else { "ok" }.to_string(),
        ];
        for column in &columns {
            row.push(match client.get(column).unwrap_or(Value::Null) {
                Value::String(text) => text,
                value => match value.as_f64() {
                    Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
                    Some(v) => format!("{v:.3}"),
                    None => "-".into(),
                },
            });
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:>width$}"))
            .collect();
        text += cells.join("  ").trim_end();
        text.push('\n');
    }
    for client in clients.iter().filter(|c| c.failed) {
        text += &format!(
            "{} failed: {}\n",
            client.node,
            client.error.as_deref().unwrap_or("no error given")
        );
    }
    text
}

/// A run summary of these clients, for tests.
#[cfg(test)]
pub(crate) fn clients(clients: Value) -> RunSummary {
    RunSummary {
        clients: serde_json::from_value(clients).unwrap(),
        ..RunSummary::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table_shows_headline_metrics_and_names_failures() {
        let summary = clients(json!([
            {"node": "a", "failed": false, "rtt_ms_p50": 40.25, "goodput_mbps": 19.5, "rtt_sent": 200},
            {"node": "b", "failed": true, "error": "target unreachable"},
        ]));
        let text = table(&summary);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("goodput_mbps") && lines[0].contains("rtt_ms_p50"));
        assert!(
            !lines[0].contains("rtt_sent"),
            "not a headline metric: {}",
            lines[0]
        );
        assert!(lines[1].contains("19.500") && lines[1].contains("40.250"));
        assert!(lines[2].contains("FAILED"));
        assert_eq!(lines[3], "b failed: target unreachable");
    }
}

#[cfg(test)]
mod generic_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clients_without_headline_metrics_get_every_number() {
        let summary =
            clients(json!([{"node": "a", "failed": false, "requests": 12, "label": "x"}]));
        let text = table(&summary);
        assert!(text.lines().next().unwrap().ends_with("requests"), "{text}");
    }
}
