//! Client results: each client's own `summary.json`, or a failure record when it wrote none,
//! and the table `cdnlab run` prints.

use crate::lab::{process, LabState};
use serde::Serialize;
use serde_json::{json, Value};
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

/// Writes a client's `dir/summary.json` (creating `dir`) — the file `cdnlab run` collects —
/// through a temporary file renamed into place, so a reader never sees half of it.
pub fn write_client_summary(dir: &Path, summary: &impl Serialize) -> io::Result<PathBuf> {
    let context =
        |e: io::Error, what: &Path| io::Error::new(e.kind(), format!("{}: {e}", what.display()));
    std::fs::create_dir_all(dir).map_err(|e| context(e, dir))?;
    let path = dir.join("summary.json");
    let partial = dir.join(".summary.json.partial");
    let mut text = serde_json::to_string_pretty(summary).map_err(io::Error::other)?;
    text.push('\n');
    std::fs::write(&partial, text).map_err(|e| context(e, &partial))?;
    std::fs::rename(&partial, &path).map_err(|e| context(e, &path))?;
    Ok(path)
}

/// How a role client ends: its summary (or, on an error, `{node, failed: true, error}`) is
/// written to `dir/summary.json` and printed; the client fails if the summary says it failed.
pub fn finish_client(
    dir: &Path,
    node: &str,
    result: Result<serde_json::Value, String>,
) -> Result<(), String> {
    let summary = result.unwrap_or_else(
        |error| serde_json::json!({ "node": node, "failed": true, "error": error }),
    );
    write_client_summary(dir, &summary).map_err(|e| e.to_string())?;
    println!("{summary}");
    if summary["failed"] == true {
        Err(summary["error"].as_str().unwrap_or("failed").to_string())
    } else {
        Ok(())
    }
}

/// The result of client `node`: its `summary.json` with `node` and `failed` filled in. A client
/// that exits 0 without one succeeded with no metrics; one that fails without one gets an
/// `error` naming why, with the end of its log.
pub fn client_result(
    state: &LabState,
    node: usize,
    status: Option<ExitStatus>,
    timeout: Duration,
) -> Value {
    let name = &state.topology.nodes[node].name;
    let path = state.out_dir.join(name).join("summary.json");
    let log = state.log_path(name);
    let reported: Option<Value> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .filter(Value::is_object);
    let failure = match status {
        Some(s) if s.success() => None,
        Some(s) => Some(format!("exited with {s}")),
        None => Some(format!("did not finish within {timeout:?} and was stopped")),
    };
    let mut result = match (reported, &failure) {
        (Some(value), _) => value,
        // Any program can be a client; one that succeeds without writing results still ran.
        (None, None) => json!({}),
        (None, Some(why)) => json!({
            "error": format!(
                "{why}; wrote no {}; the end of its log:\n{}",
                path.display(),
                process::log_tail(&log, 5)
            ),
            "failed": true,
        }),
    };
    if let Some(object) = result.as_object_mut() {
        object.insert("node".into(), json!(name));
        let failed = object
            .get("failed")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !failed {
            if let Some(why) = failure {
                object.insert("failed".into(), json!(true));
                object.entry("error").or_insert(json!(why));
            } else {
                object.insert("failed".into(), json!(false));
            }
        }
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
pub fn table(summary: &Value) -> String {
    let clients: Vec<&Value> = summary["clients"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let reported = |key: &str| clients.iter().any(|c| !c[key].is_null());
    let mut columns: Vec<String> = HEADLINE
        .iter()
        .filter(|k| reported(k))
        .map(|k| k.to_string())
        .collect();
    if !columns
        .iter()
        .any(|c| clients.iter().any(|cl| cl[c.as_str()].is_number()))
    {
        columns = clients
            .iter()
            .filter_map(|c| c.as_object())
            .flat_map(|o| {
                o.iter()
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
    for client in &clients {
        let mut row = vec![
            client["node"].as_str().unwrap_or("?").to_string(),
            if client["failed"] == true {
                "FAILED"
            } else {
                "ok"
            }
            .to_string(),
        ];
        for column in &columns {
            row.push(match &client[column.as_str()] {
                Value::String(text) => text.clone(),
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
    for client in clients.iter().filter(|c| c["failed"] == true) {
        text += &format!(
            "{} failed: {}\n",
            client["node"].as_str().unwrap_or("?"),
            client["error"].as_str().unwrap_or("no error given")
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_shows_headline_metrics_and_names_failures() {
        let summary = json!({"clients": [
            {"node": "a", "failed": false, "rtt_ms_p50": 40.25, "goodput_mbps": 19.5, "rtt_sent": 200},
            {"node": "b", "failed": true, "error": "target unreachable"},
        ]});
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

    #[test]
    fn clients_without_headline_metrics_get_every_number() {
        let summary =
            json!({"clients": [{"node": "a", "failed": false, "requests": 12, "label": "x"}]});
        let text = table(&summary);
        assert!(text.lines().next().unwrap().ends_with("requests"), "{text}");
    }
}
