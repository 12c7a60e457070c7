//! The real-time player: fetch the manifest, then per segment wait until the buffer has room,
//! ask the ABR for a quality, download (timing each hop), and hand the segment to the playback
//! model and the observation to the ABR. All decisions are the sans-IO `has` types'; this loop
//! only reads the clock, sleeps and downloads.
//!
//! The clock is monotonic (`Instant`), in nanoseconds since the manifest request. When the last
//! download ends the session ends too: the rest of the buffer plays out without a possible stall,
//! so [`Playback::end_of_stream`] accounts it at once instead of the client sleeping through it.

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::has::{
    make_abr, Abr, DecisionContext, DownloadObservation, Playback, PlaybackConfig, QoeMetrics,
    RedirectSummary, SegmentRecord,
};

use super::config::ClientConfig;
use super::fetch::{Body, Fetcher};
use super::load::{load, Stream};
use super::report::{empty_qoe, SegmentLog, StoppedBy, Summary};

/// Plays the session `config` describes as node `node`, appending to `out_dir/segments.csv` as
/// segments arrive, and returns its summary (the caller writes it). `stop` ends the session early
/// as a failure with the reason it yields (a signal); `config.max_duration` ends it without
/// failure. Never panics on what servers send.
pub async fn run(
    config: &ClientConfig,
    node: &str,
    out_dir: &Path,
    stop: impl Future<Output = String>,
) -> Summary {
    let parts = PlaybackConfig::new(config.buffer_s, config.startup_segments).and_then(|pc| {
        Ok((
            Playback::new(pc),
            make_abr(&config.abr, config.buffer_s)?,
            Fetcher::new(config.timeout, config.http2, config.keep_alive)?,
            SegmentLog::create(out_dir)?,
        ))
    });
    let (playback, abr, fetcher, log) = match parts {
        Ok(parts) => parts,
        Err(error) => return early_failure(config, node, error),
    };
    let mut session = Session {
        config,
        origin: Instant::now(),
        fetcher,
        playback,
        abr,
        log,
        records: Vec::new(),
        manifest_time_s: None,
        first_request_ns: None,
        last_end_ns: 0,
        bytes: 0,
        manifest_bytes: 0,
        retries: 0,
    };
    let deadline = config
        .max_duration
        .map(|d| tokio::time::Instant::from_std(session.origin) + d);
    let outcome = tokio::select! {
        played = until(deadline, session.play()) => match played {
            Some(Ok(())) => Ok(StoppedBy::End),
            Some(Err(error)) => Err(error),
            None => Ok(StoppedBy::MaxDuration),
        },
        reason = stop => Err(reason),
    };
    session.finish(node, outcome)
}

/// Runs `future` to completion, or until `deadline` (`None` when it passed first).
async fn until<F: Future>(deadline: Option<tokio::time::Instant>, future: F) -> Option<F::Output> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, future).await.ok(),
        None => Some(future.await),
    }
}

struct Session<'a> {
    config: &'a ClientConfig,
    /// The manifest request: time 0.
    origin: Instant,
    fetcher: Fetcher,
    playback: Playback,
    abr: Box<dyn Abr>,
    log: SegmentLog,
    records: Vec<SegmentRecord>,
    manifest_time_s: Option<f64>,
    /// The first media request: where the paper's start-up delay begins.
    first_request_ns: Option<u64>,
    /// The end of the last completed download.
    last_end_ns: u64,
    bytes: u64,
    manifest_bytes: u64,
    retries: u64,
}

impl Session<'_> {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Fetches the manifest and plays every segment. May be dropped at any await (deadline or
    /// signal); the state it leaves is consistent, since each segment is recorded at once.
    async fn play(&mut self) -> Result<(), String> {
        let loaded = load(&self.fetcher, &self.config.url).await?;
        self.manifest_time_s = Some(self.now_ns() as f64 / 1e9);
        self.manifest_bytes = loaded.bytes;
        self.retries += u64::from(loaded.retries);
        let stream = Stream::new(loaded.presentation, self.config.segments)
            .map_err(|e| format!("manifest {}: {e}", self.config.url))?;
        let mut inits_fetched = vec![false; stream.renditions.len()];
        let mut last_quality = None;
        for index in 0..stream.segments {
            let nominal_s = stream.nominal_duration_s(index);
            self.wait_for_room(index, nominal_s).await?;
            let ctx = DecisionContext {
                now_ns: self.now_ns(),
                buffer_s: self.playback.buffer_s(),
                ladder: &stream.ladder,
                segment_s: nominal_s,
                last_quality,
                index,
            };
            let quality = self.abr.next_quality(&ctx).min(stream.ladder.top());
            let rendition = &stream.renditions[quality];
            let segment = &rendition.segments[index];
            let bitrate_bps = stream.ladder.bitrate_bps(quality);
            self.first_request_ns.get_or_insert(ctx.now_ns);
            // A quality's init segment comes once, before its first media segment, and is not
            // part of that segment's download time.
            if let Some(init) = rendition.init.as_ref().filter(|_| !inits_fetched[quality]) {
                let fetched = self
                    .fetcher
                    .get(&init.url, init.byte_range, Body::Count)
                    .await
                    .map_err(|e| format!("init segment of quality {quality}: {e}"))?;
                self.bytes += fetched.bytes;
                self.retries += u64::from(fetched.attempts - 1);
                inits_fetched[quality] = true;
            }
            let start_ns = self.now_ns();
            let fetched = self
                .fetcher
                .get(&segment.url, segment.byte_range, Body::Count)
                .await
                .map_err(|e| format!("segment {index}: {e}"))?;
            let end_ns = self.now_ns();
            self.last_end_ns = end_ns;
            self.bytes += fetched.bytes;
            self.retries += u64::from(fetched.attempts - 1);
            self.playback
                .segment_arrived(end_ns, index, quality, bitrate_bps, segment.duration_s)
                .map_err(|e| format!("segment {index} ({}): {e}", segment.url))?;
            let observation = DownloadObservation {
                index,
                quality,
                bytes: fetched.bytes,
                start_ns,
                end_ns,
                segment_s: segment.duration_s,
                buffer_s: self.playback.buffer_s(),
            };
            self.abr.on_download(&observation);
            let record = SegmentRecord::new(
                &observation,
                bitrate_bps,
                0,
                self.playback.stalls().len(),
                fetched.hops,
            );
            self.log.append(&record)?;
            self.records.push(record);
            last_quality = Some(quality);
        }
        Ok(())
    }

    /// Sleeps until the player has room for a segment of `duration_s`.
    async fn wait_for_room(&mut self, index: usize, duration_s: f64) -> Result<(), String> {
        loop {
            let now = self.now_ns();
            match self.playback.wait_for_room_ns(now, duration_s) {
                Some(0) => return Ok(()),
                Some(wait_ns) => tokio::time::sleep(Duration::from_nanos(wait_ns)).await,
                None => {
                    return Err(format!(
                        "segment {index}: the player has no room and is not playing"
                    ))
                }
            }
        }
    }

    /// Ends playback and gathers the summary.
    fn finish(mut self, node: &str, outcome: Result<StoppedBy, String>) -> Summary {
        let now = self.now_ns();
        self.playback.end_of_stream(now);
        let qoe = QoeMetrics::from_playback(&self.playback, 0, self.first_request_ns);
        let redirects = RedirectSummary::from_records(&self.records);
        let redirect_time_total_s = redirects.redirect_time_s;
        let (stopped_by, error) = match outcome {
            Ok(stopped_by) => (stopped_by, None),
            Err(error) => (StoppedBy::Error, Some(error)),
        };
        Summary {
            node: node.to_string(),
            policy: self.config.policy.clone(),
            abr: self.config.abr.clone(),
            buffer_s: self.config.buffer_s,
            startup_segments: self.config.startup_segments,
            url: self.config.url.clone(),
            http_version: http_version(self.config),
            qoe,
            segments_downloaded: self.records.len(),
            redirects_per_chunk: redirects.redirects_per_chunk,
            redirect_time_s: if self.records.is_empty() {
                0.0
            } else {
                redirect_time_total_s / self.records.len() as f64
            },
            redirect_time_total_s,
            manifest_time_s: self.manifest_time_s,
            bytes: self.bytes,
            manifest_bytes: self.manifest_bytes,
            retries: self.retries,
            session_time_s: self.last_end_ns as f64 / 1e9,
            stopped_by,
            failed: error.is_some(),
            error,
        }
    }
}

fn http_version(config: &ClientConfig) -> &'static str {
    if config.http2 {
        "2"
    } else {
        "1.1"
    }
}

/// The summary of a session that could not start (e.g. its log could not be created).
fn early_failure(config: &ClientConfig, node: &str, error: String) -> Summary {
    Summary {
        node: node.to_string(),
        policy: config.policy.clone(),
        abr: config.abr.clone(),
        buffer_s: config.buffer_s,
        startup_segments: config.startup_segments,
        url: config.url.clone(),
        http_version: http_version(config),
        qoe: empty_qoe(),
        segments_downloaded: 0,
        redirects_per_chunk: 0.0,
        redirect_time_s: 0.0,
        redirect_time_total_s: 0.0,
        manifest_time_s: None,
        bytes: 0,
        manifest_bytes: 0,
        retries: 0,
        session_time_s: 0.0,
        stopped_by: StoppedBy::Error,
        failed: true,
        error: Some(error),
    }
}
