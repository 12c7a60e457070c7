//! The per-segment record of a streaming session: one CSV row per downloaded segment, with the
//! host and time of every HTTP hop (each redirect, then the server that sent the body), so a
//! reader can see where a slow download spent its time.

use serde::Serialize;

use super::abr::DownloadObservation;

/// One HTTP exchange of a segment download: the host asked and the seconds from sending the
/// request to the end of its response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hop {
    pub host: String,
    pub seconds: f64,
}

/// One downloaded segment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SegmentRecord {
    pub index: usize,
    pub quality: usize,
    pub bitrate_bps: u64,
    pub bytes: u64,
    /// When the first request was sent, in seconds since the session started.
    pub request_time_s: f64,
    /// From the first request to the last byte, redirects included.
    pub download_time_s: f64,
    /// bytes × 8 / download time, in Mbit/s.
    pub throughput_mbps: f64,
    /// Seconds of media buffered right after the segment arrived.
    pub buffer_s: f64,
    /// Stalls of the session so far, the one this segment ended included.
    pub stalls: usize,
    /// Redirects first, the server that sent the body last (filled in by the HTTP client).
    pub hops: Vec<Hop>,
}

/// The CSV header, in the order of [`SegmentRecord::to_csv_row`].
pub const CSV_HEADER: &str =
    "index,quality,bitrate_bps,bytes,request_time_s,download_time_s,throughput_mbps,buffer_s,stalls,hops";

impl SegmentRecord {
    /// The record of download `d` of a segment encoded at `bitrate_bps`, with request times
    /// counted from `origin_ns` (the session's start), after `stalls` stalls.
    pub fn new(
        d: &DownloadObservation,
        bitrate_bps: u64,
        origin_ns: u64,
        stalls: usize,
        hops: Vec<Hop>,
    ) -> SegmentRecord {
        SegmentRecord {
            index: d.index,
            quality: d.quality,
            bitrate_bps,
            bytes: d.bytes,
            request_time_s: d.start_ns.saturating_sub(origin_ns) as f64 / 1e9,
            download_time_s: d.download_s(),
            throughput_mbps: d.throughput_bps() / 1e6,
            buffer_s: d.buffer_s,
            stalls,
            hops,
        }
    }

    /// Redirects followed: every hop but the last.
    pub fn redirects(&self) -> usize {
        self.hops.len().saturating_sub(1)
    }

    /// Seconds spent in redirects (every hop but the last).
    pub fn redirect_time_s(&self) -> f64 {
        let n = self.redirects();
        self.hops[..n].iter().map(|h| h.seconds).sum()
    }

    /// The record as a CSV line (no newline) under [`CSV_HEADER`]; hops as
    /// `host:seconds;host:seconds`, quoted by the csv crate where a host name needs it.
    pub fn to_csv_row(&self) -> String {
        let hops: Vec<String> = self
            .hops
            .iter()
            .map(|h| format!("{}:{:.6}", h.host, h.seconds))
            .collect();
        let cells = [
            self.index.to_string(),
            self.quality.to_string(),
            self.bitrate_bps.to_string(),
            self.bytes.to_string(),
            format!("{:.6}", self.request_time_s),
            format!("{:.6}", self.download_time_s),
            format!("{:.4}", self.throughput_mbps),
            format!("{:.3}", self.buffer_s),
            self.stalls.to_string(),
            hops.join(";"),
        ];
        let mut line = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        // Writing into memory cannot fail.
        let _ = line.write_record(&cells);
        let bytes = line.into_inner().unwrap_or_default();
        String::from_utf8_lossy(bytes.strip_suffix(b"\n").unwrap_or(&bytes)).into_owned()
    }
}

/// Redirect totals of a session, for its summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RedirectSummary {
    /// Mean redirects followed per segment.
    pub redirects_per_chunk: f64,
    /// Total seconds spent in redirects.
    pub redirect_time_s: f64,
}

impl RedirectSummary {
    pub fn from_records(records: &[SegmentRecord]) -> RedirectSummary {
        let redirects: usize = records.iter().map(SegmentRecord::redirects).sum();
        RedirectSummary {
            redirects_per_chunk: if records.is_empty() {
                0.0
            } else {
                redirects as f64 / records.len() as f64
            },
            // Folded from +0.0: an empty f64 `sum()` is -0.0, which JSON would show.
            redirect_time_s: records
                .iter()
                .map(SegmentRecord::redirect_time_s)
                .fold(0.0, |a, b| a + b),
        }
    }
}
