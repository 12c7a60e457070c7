//! The lab's event log, `events.jsonl`: every link change and node stop/start with its time,
//! so a run's results can be read against what the network did.

use super::state::LabState;
use super::sys::Result;
use std::io::Write;

/// Appends one event (a JSON object) stamped with `time_unix_s`.
pub fn record(state: &LabState, mut event: serde_json::Value) -> Result<()> {
    let now = crate::wall_clock::unix_now_s();
    if let Some(object) = event.as_object_mut() {
        object.insert("time_unix_s".into(), now.into());
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(state.events_path())?;
    // One write of the whole line: appends from two processes (`run`'s timeline, a `link
    // set`) then never interleave within a line.
    file.write_all(format!("{event}\n").as_bytes())?;
    Ok(())
}
