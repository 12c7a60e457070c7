//! The client's results: `summary.json` (written once, at the end, atomically) and
//! `segments.csv` (a row appended as each segment arrives, so a killed client leaves the log of
//! what it got).

use std::path::Path;

use crate::roles::rows::RowLog;

use serde::Serialize;

use crate::has::{Playback, PlaybackConfig, QoeMetrics, SegmentRecord, CSV_HEADER};

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoppedBy {
    /// Every segment (or the configured number) was played.
    End,
    /// `max_duration` ran out; not a failure.
    MaxDuration,
    /// A failure or a stop signal: see `error`.
    Error,
}

/// One client's `summary.json`: flat snake_case names with units, as every cdnlab client's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub node: String,
    /// The routing policy label (null when neither configured nor in the URL).
    pub policy: Option<String>,
    pub abr: String,
    /// P.
    pub buffer_s: f64,
    pub startup_segments: usize,
    /// The manifest URL.
    pub url: String,
    /// "1.1" or "2".
    pub http_version: &'static str,
    #[serde(flatten)]
    pub qoe: QoeMetrics,
    /// Segments received (played ones are `segments`).
    pub segments_downloaded: usize,
    /// Mean redirects per segment.
    pub redirects_per_chunk: f64,
    /// Mean seconds per segment spent in redirects.
    pub redirect_time_s: f64,
    /// Seconds spent in redirects over the session.
    pub redirect_time_total_s: f64,
    /// From the manifest request to having every manifest (HLS: master and media playlists).
    /// Null if the manifests never came.
    pub manifest_time_s: Option<f64>,
    /// Media body bytes received (segments and init segments).
    pub bytes: u64,
    /// Manifest body bytes received.
    pub manifest_bytes: u64,
    /// Requests retried after a transient failure.
    pub retries: u64,
    /// Wall time from the manifest request to the end of the last download.
    pub session_time_s: f64,
    pub stopped_by: StoppedBy,
    pub failed: bool,
    /// Which URL failed and why; only when `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Metrics of a session that played nothing.
pub fn empty_qoe() -> QoeMetrics {
    let mut playback = Playback::new(PlaybackConfig {
        buffer_s: 1.0,
        startup_segments: 1,
    });
    playback.end_of_stream(0);
    QoeMetrics::from_playback(&playback, 0, None)
}

/// `segments.csv`, written a row at a time.
#[derive(Debug)]
pub struct SegmentLog(RowLog);

impl SegmentLog {
    /// Creates (or truncates) `dir/segments.csv` and writes the header.
    pub fn create(dir: &Path) -> Result<SegmentLog, String> {
        RowLog::create(dir, "segments.csv", CSV_HEADER).map(SegmentLog)
    }

    /// Appends a segment's row.
    pub fn append(&mut self, record: &SegmentRecord) -> Result<(), String> {
        self.0.append(&record.to_csv_row())
    }
}
