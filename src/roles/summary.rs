//! What a client reports when it ends: `summary.json` in its output directory, which
//! `cdnlab run` collects (`run::summary`) and `cdnlab sweep` tabulates (`sweep::table`). One
//! type for every client of every family, and for any program run as a client.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A client's `summary.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientSummary {
    /// The client's node; `cdnlab run` fills it in when a client leaves it out.
    #[serde(default)]
    pub node: String,
    /// Whether the client failed (a failed session, an error before it could start).
    #[serde(default)]
    pub failed: bool,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The family's own fields by name: a HAS client's `startup_delay_s`, `stall_count`, …, a
    /// probe's `rtt_ms_p50`, `goodput_mbps`, …, the F-FDN viewers' and ICN load's counts, or
    /// whatever a program run as a client reports. Tables show the numbers and strings.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

impl ClientSummary {
    /// The summary of a family's own result type; its `node`, `failed` and `error` fields, if
    /// it has them, become the typed ones.
    pub fn of(node: &str, result: &impl Serialize) -> Result<ClientSummary, String> {
        let value = serde_json::to_value(result).map_err(|e| e.to_string())?;
        let mut summary: ClientSummary = match value {
            Value::Object(_) => serde_json::from_value(value).map_err(|e| e.to_string())?,
            other => return Err(format!("a client summary is an object, not {other}")),
        };
        if summary.node.is_empty() {
            summary.node = node.to_string();
        }
        Ok(summary)
    }

    /// A client that failed before it had results.
    pub fn failure(node: &str, error: impl Into<String>) -> ClientSummary {
        ClientSummary {
            node: node.to_string(),
            failed: true,
            error: Some(error.into()),
            fields: Map::new(),
        }
    }

    /// Field `key`: a family field, or `node`, `failed` or `error` as JSON values.
    pub fn get(&self, key: &str) -> Option<Value> {
        match key {
            "node" => Some(Value::from(self.node.as_str())),
            "failed" => Some(Value::from(self.failed)),
            "error" => self.error.as_deref().map(Value::from),
            _ => self.fields.get(key).cloned(),
        }
    }
}

/// Writes a client's `dir/summary.json` (creating `dir`) through a temporary file renamed into
/// place, so a reader never sees half of it.
pub fn write(dir: &Path, summary: &ClientSummary) -> io::Result<PathBuf> {
    let context =
        |e: io::Error, what: &Path| io::Error::new(e.kind(), format!("{}: {e}", what.display()));
    std::fs::create_dir_all(dir).map_err(|e| context(e, dir))?;
    let path = dir.join("summary.json");
    let mut text = serde_json::to_string_pretty(summary).map_err(io::Error::other)?;
    text.push('\n');
    crate::atomic_write::write_atomically(&path, text.as_bytes())?;
    Ok(path)
}

/// How a client ends: its summary (or, on an error, a failure naming it) is written to
/// `dir/summary.json` and printed as one line; the client fails if the summary says it failed.
pub fn finish(dir: &Path, node: &str, result: Result<ClientSummary, String>) -> Result<(), String> {
    let summary = result.unwrap_or_else(|error| ClientSummary::failure(node, error));
    write(dir, &summary).map_err(|e| e.to_string())?;
    crate::say!(
        "{}",
        serde_json::to_string(&summary).map_err(|e| e.to_string())?
    );
    match (summary.failed, summary.error) {
        (false, _) => Ok(()),
        (true, error) => Err(error.unwrap_or_else(|| "failed".to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_family_result_keeps_its_fields_and_types_the_common_ones() {
        let result = json!({"failed": true, "error": "no route", "startup_delay_s": 0.4});
        let summary = ClientSummary::of("c1", &result).unwrap();
        assert_eq!(summary.node, "c1");
        assert!(summary.failed);
        assert_eq!(summary.error.as_deref(), Some("no route"));
        assert_eq!(summary.get("startup_delay_s"), Some(json!(0.4)));
        let back: ClientSummary =
            serde_json::from_str(&serde_json::to_string(&summary).unwrap()).unwrap();
        assert_eq!(back, summary);
        assert!(ClientSummary::of("c1", &json!([1, 2])).is_err());
    }

    #[test]
    fn finishing_writes_the_file_and_fails_with_the_error() {
        let dir = crate::testing::TempDir::new("summary-finish");
        let failed = finish(&dir.0, "c1", Err("target unreachable".into()));
        assert_eq!(failed, Err("target unreachable".to_string()));
        let text = std::fs::read_to_string(dir.0.join("summary.json")).unwrap();
        let written: ClientSummary = serde_json::from_str(&text).unwrap();
        assert_eq!(written, ClientSummary::failure("c1", "target unreachable"));
        let ok = ClientSummary::of("c1", &json!({"requests": 3})).unwrap();
        assert_eq!(finish(&dir.0, "c1", Ok(ok)), Ok(()));
    }
}
