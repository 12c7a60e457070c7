//! `links.jsonl` in a run directory: every link direction's counters (bytes, frames, drops,
//! queue) every [`EVERY`] while the clients play, one JSON line per sample, so a finished run
//! shows how its links were used over time (`cdnlab web --results DIR` draws it): the shaper's
//! counters under the userspace backend, the root qdiscs' under the kernel backend.

use crate::lab::counters::LinkCounters;
use crate::lab::LabState;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const EVERY: Duration = Duration::from_millis(500);

pub struct LinksLog {
    path: PathBuf,
    /// Opened at the first sample; `None` after it could not be.
    counters: Option<Option<LinkCounters>>,
    last: Option<Instant>,
    /// Whether a failure to write was reported already (once is enough).
    warned: bool,
}

impl LinksLog {
    pub fn new(out: &Path) -> LinksLog {
        LinksLog {
            path: out.join("links.jsonl"),
            counters: None,
            last: None,
            warned: false,
        }
    }

    /// Appends a sample if the last was [`EVERY`] ago. A failure costs the sample, not the
    /// run: it is reported once.
    pub fn tick(&mut self, state: &LabState) {
        if self.last.is_some_and(|t| t.elapsed() < EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        let counters = self.counters.get_or_insert_with(|| {
            LinkCounters::open(state)
                .map_err(|e| tracing::warn!("link samples: {e}"))
                .ok()
        });
        let Some(counters) = counters else { return };
        let written = counters
            .sample(state)
            .map_err(|e| e.to_string())
            .and_then(|sample| {
                if sample.links.is_empty() {
                    return Ok(());
                }
                let line = serde_json::to_string(&sample).map_err(|e| e.to_string())?;
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)
                    .and_then(|mut file| writeln!(file, "{line}"))
                    .map_err(|e| format!("{}: {e}", self.path.display()))
            });
        if let Err(e) = written {
            if !self.warned {
                tracing::warn!("link samples: {e}");
                self.warned = true;
            }
        }
    }
}
