//! The viewers of one region (`fog-viewers`): a workload trace of stream requests, each
//! arriving at its time, sent to the FDN the cloud's ingestion processor picks from the
//! latencies the viewers measured, and played segment by segment in order. A segment that
//! arrives after its presentation time missed its deadline; it is still taken (video on
//! demand). Writes `deadlines.csv` as segments arrive (when, which, and whether it missed: what
//! `cdnlab web` shows live), then at the end `segments.csv` (one row per segment),
//! `viewers.csv` (one row per stream request: a viewer) and `summary.json` with
//! `deadline_miss_rate` overall.

use super::config::ViewersConfig;
use crate::fog::catalog::Catalog;
use crate::fog::stats::PathModel;
use crate::fog::workload::{deadline_s, Trace};
use crate::roles::fetch::{body_at_most, exact_body};
use crate::roles::rows::RowLog;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// One segment as the viewer saw it.
#[derive(Debug, Clone)]
struct Record {
    request: usize,
    video: usize,
    /// Seconds after the trace began that the request arrived.
    arrival_s: f64,
    fdn: String,
    index: usize,
    deadline_s: f64,
    /// The deadline the FDN's estimator decided against (its `x-deadline`), seconds after the
    /// trace began: `deadline_s` to the millisecond when the arrival reached it whole.
    fdn_deadline_s: Option<f64>,
    /// Seconds after the trace began; `None` if it never arrived.
    received_s: Option<f64>,
    source: String,
}

impl Record {
    fn missed(&self) -> bool {
        self.received_s.is_none_or(|r| r > self.deadline_s)
    }
}

/// The header of `deadlines.csv`: a row per segment as it arrives (or fails), its wall-clock
/// time, its stream request and index, and whether it missed its deadline.
pub const DEADLINES_HEADER: &str = "time_unix_s,request,index,missed";

/// Every request but a segment's (bounded by `segment_timeout`) gets this long, body included:
/// a cloud or FDN that takes the connection and never answers must not hold the viewers.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// GETs `url` as JSON within `timeout`.
async fn get_json(client: &reqwest::Client, url: &str, timeout: Duration) -> Result<Value, String> {
    let response = client
        .get(url)
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let body = body_at_most(response, MAX_JSON)
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        return Err(format!("{url}: {status}: {}", text.trim()));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url}: {e}"))
}

/// The largest JSON answer read from the cloud or an FDN: the FDN list of a large lab is a few
/// kilobytes.
const MAX_JSON: u64 = 1 << 20;

/// The size of a probe transfer.
const PROBE_BYTES: u64 = 250_000;

/// Times `probes` transfers of `PROBE_BYTES` from each FDN: the viewers' path models.
async fn measure(
    client: &reqwest::Client,
    fdns: &[String],
    probes: usize,
) -> BTreeMap<String, PathModel> {
    let mut paths = BTreeMap::new();
    for fdn in fdns {
        let mut path = PathModel::default();
        for _ in 0..probes.max(2) {
            let start = Instant::now();
            let Ok(response) = client
                .get(format!("http://{fdn}/probe?bytes={PROBE_BYTES}"))
                .timeout(REQUEST_TIMEOUT)
                .send()
                .await
            else {
                continue;
            };
            let first = start.elapsed().as_secs_f64();
            if !response.status().is_success() {
                continue;
            }
            if let Ok(body) = exact_body(response, PROBE_BYTES).await {
                path.observe(body.len() as u64, first, start.elapsed().as_secs_f64());
            }
        }
        if path.known() {
            paths.insert(fdn.clone(), path);
        }
    }
    paths
}

/// What every stream request of a trace shares.
struct Context {
    client: reqwest::Client,
    config: ViewersConfig,
    catalog: Catalog,
    paths: BTreeMap<String, PathModel>,
    /// When the trace began, and the same instant on the wall clock (seconds since the Unix
    /// epoch), which requests carry to the FDN.
    origin: Instant,
    origin_unix_s: f64,
    /// `deadlines.csv`, a row appended per segment.
    deadlines: std::sync::Mutex<RowLog>,
}

/// Plays one stream request; returns its segments' records and the FDN's method.
async fn play(
    context: std::sync::Arc<Context>,
    request: usize,
    arrival_s: f64,
    video: usize,
) -> Result<(Vec<Record>, String), String> {
    let Context {
        client,
        config,
        catalog,
        paths,
        origin,
        origin_unix_s,
        deadlines,
    } = &*context;
    let origin = *origin;
    tokio::time::sleep_until((origin + Duration::from_secs_f64(arrival_s)).into()).await;
    let lat: Vec<String> = paths
        .iter()
        .map(|(name, p)| format!("{name}:{:.6}", p.first_byte.mean()))
        .collect();
    let ingest = get_json(
        client,
        &format!("http://{}/ingest?lat={}", config.cloud, lat.join(",")),
        REQUEST_TIMEOUT,
    )
    .await?;
    let fdn = ingest["fdn"]
        .as_str()
        .ok_or("the cloud named no FDN")?
        .to_string();
    let path = *paths
        .get(&fdn)
        .ok_or_else(|| format!("the cloud named {fdn}, which was not measured"))?;
    let opened = get_json(
        client,
        &format!(
            "http://{fdn}/open/{video}?fb={:.6},{:.6}&pb={:.12},{:.12}&arrival={:.6}&startup={:.6}",
            path.first_byte.mean(),
            path.first_byte.sd(),
            path.per_byte.mean(),
            path.per_byte.sd(),
            origin_unix_s + arrival_s,
            config.startup.as_secs_f64(),
        ),
        REQUEST_TIMEOUT,
    )
    .await?;
    let session = opened["session"].as_str().ok_or("no session")?.to_string();
    let method = opened["method"].as_str().unwrap_or_default().to_string();
    let n = catalog.videos[video].segments.len();
    let mut records = Vec::with_capacity(n);
    for index in 0..n {
        let deadline = arrival_s
            + deadline_s(
                index,
                config.startup.as_secs_f64(),
                catalog.spec.segment_duration_s,
            );
        let url = format!("http://{fdn}/segment/{session}/{index}");
        let outcome = async {
            let response = client
                .get(&url)
                .timeout(config.segment_timeout)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            let header = |name| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string()
            };
            let source = header("x-source");
            let fdn_deadline = header("x-deadline")
                .parse::<f64>()
                .ok()
                .map(|unix_s| unix_s - origin_unix_s);
            if !response.status().is_success() {
                return Err(format!("{source}: status {}", response.status()));
            }
            let size = catalog.videos[video].segments[index].bytes;
            exact_body(response, size).await?;
            Ok((source, fdn_deadline))
        };
        let (received_s, source, fdn_deadline_s) =
            match tokio::time::timeout(config.segment_timeout, outcome).await {
                Ok(Ok((source, fdn_deadline))) => {
                    (Some(origin.elapsed().as_secs_f64()), source, fdn_deadline)
                }
                Ok(Err(e)) => (None, format!("failed: {e}"), None),
                Err(_) => (None, "failed: timed out".to_string(), None),
            };
        let record = Record {
            request,
            video,
            arrival_s,
            fdn: fdn.clone(),
            index,
            deadline_s: deadline,
            fdn_deadline_s,
            received_s,
            source,
        };
        append_deadline(
            deadlines,
            origin_unix_s + origin.elapsed().as_secs_f64(),
            &record,
        );
        records.push(record);
    }
    Ok((records, method))
}

/// Runs the trace; the summary (also written with the CSVs to `out`).
pub async fn run(config: ViewersConfig, node: &str, out: &Path) -> Result<Value, String> {
    let client = crate::roles::fetch::client()
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let catalog = Catalog::generate(&config.catalog);
    let fdns_url = format!("http://{}/fdns", config.cloud);
    let deadline = Instant::now() + Duration::from_secs(30);
    // Every FDN the cloud knows, once its monitor holds them all up: the viewers measure only
    // the FDNs listed, and one still starting would never be measured, nor ingested to. After
    // the deadline, those up (at least one) will do. Every poll has a whole request's time, so
    // the last, after the deadline, can cross a slow path to the cloud (a black-hole cloud
    // ends the wait one timeout after the deadline).
    let fdns: Vec<String> = loop {
        let listed = get_json(&client, &fdns_url, REQUEST_TIMEOUT)
            .await
            .ok()
            .and_then(|v| {
                let up = v["fdns"].as_array().map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect::<Vec<_>>()
                })?;
                Some((up, v["known"].as_u64().unwrap_or(0) as usize))
            });
        match listed {
            Some((up, known)) if !up.is_empty() && up.len() >= known => break up,
            Some((up, _)) if !up.is_empty() && Instant::now() > deadline => break up,
            _ if Instant::now() > deadline => return Err(format!("{fdns_url} lists no FDN")),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    let paths = measure(&client, &fdns, config.probes).await;
    if paths.is_empty() {
        return Err(format!("no FDN answered a probe ({})", fdns.join(", ")));
    }
    let trace = Trace::generate(
        &catalog,
        config.seed,
        config.trace,
        config.window.as_secs_f64(),
        config.segments,
    );
    let deadlines = RowLog::create(out, "deadlines.csv", DEADLINES_HEADER)?;
    let (origin, origin_unix_s) = (Instant::now(), crate::wall_clock::unix_now_s());
    let context = std::sync::Arc::new(Context {
        client,
        config,
        catalog,
        paths,
        origin,
        origin_unix_s,
        deadlines: std::sync::Mutex::new(deadlines),
    });
    let mut plays = tokio::task::JoinSet::new();
    for (r, request) in trace.requests.iter().enumerate() {
        // A request that never plays (its ingest or open failed) misses every segment of its
        // video, so the rates weigh it as the segments it would have had.
        let segments = context.catalog.videos[request.video].segments.len();
        let play = play(context.clone(), r, request.arrival_s, request.video);
        plays.spawn(async move { play.await.map_err(|e| (segments, e)) });
    }
    let mut records = Vec::new();
    let mut methods = Vec::new();
    let mut errors = Vec::new();
    let mut unplayed = 0;
    for result in plays.join_all().await {
        match result {
            Ok((mut r, method)) => {
                records.append(&mut r);
                methods.push(method);
            }
            Err((segments, e)) => {
                unplayed += segments;
                errors.push(e);
            }
        }
    }
    records.sort_by_key(|r| (r.request, r.index));
    write_outputs(out, &records)?;
    let rates = MissRates::of(&records, errors.len(), unplayed);
    let mut by_source: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for r in &records {
        let kind = r.source.split(':').next().unwrap_or("").to_string();
        let entry = by_source.entry(kind).or_default();
        entry.0 += 1;
        entry.1 += usize::from(r.missed());
    }
    // How far the FDN's deadlines lay from the viewers' (none reported counts as unknown).
    let deadline_gap = records
        .iter()
        .filter_map(|r| r.fdn_deadline_s.map(|d| (d - r.deadline_s).abs()))
        .fold(None, |max: Option<f64>, gap| {
            Some(max.map_or(gap, |m| m.max(gap)))
        });
    methods.sort();
    methods.dedup();
    Ok(json!({
        "node": node,
        "method": methods.join(","),
        "trace": context.config.trace,
        "origin_unix_s": origin_unix_s,
        "requests": trace.requests.len(),
        "segments": records.len(),
        "segments_unplayed": unplayed,
        "failed_requests": errors.len(),
        "request_errors": errors.iter().take(5).collect::<Vec<_>>(),
        "deadline_misses": rates.missed,
        "fdn_deadline_gap_max_s": deadline_gap,
        "fdn_deadlines_reported": records.iter().filter(|r| r.fdn_deadline_s.is_some()).count(),
        "deadline_miss_rate": rates.segments,
        "viewer_miss_rate_mean": rates.viewers,
        "segments_by_source": by_source.iter().map(|(k, (n, m))| (k.clone(), json!({"segments": n, "missed": m}))).collect::<serde_json::Map<_, _>>(),
        "failed": rates.total == 0 || errors.len() == trace.requests.len(),
    }))
}

/// Appends `record`'s row to `deadlines.csv`; a failed write costs the live view a row, not
/// the run (the results are written at the end).
fn append_deadline(log: &std::sync::Mutex<RowLog>, now_unix_s: f64, record: &Record) {
    let row = format!(
        "{now_unix_s:.3},{},{},{}",
        record.request,
        record.index,
        record.missed()
    );
    let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = log.append(&row) {
        tracing::warn!("{e}");
    }
}

/// The summary's deadline-miss rates (the paper's deadline miss rate, over segments, and its
/// mean over viewers). A stream request that never played (`failed` of them, their videos
/// `unplayed` segments in all) missed every segment: it weighs as those segments in the
/// first and as a viewer who missed everything in the second.
struct MissRates {
    missed: usize,
    total: usize,
    segments: f64,
    viewers: f64,
}

impl MissRates {
    fn of(records: &[Record], failed: usize, unplayed: usize) -> MissRates {
        let missed = records.iter().filter(|r| r.missed()).count() + unplayed;
        let total = records.len() + unplayed;
        let mut per_viewer = viewer_rates(records);
        per_viewer.extend(std::iter::repeat_n(1.0, failed));
        let mean = |sum: f64, n: usize| if n == 0 { 0.0 } else { sum / n as f64 };
        MissRates {
            missed,
            total,
            segments: mean(missed as f64, total),
            viewers: mean(per_viewer.iter().sum(), per_viewer.len()),
        }
    }
}

/// Each stream request's (viewer's) miss rate, in request order.
fn viewer_rates(records: &[Record]) -> Vec<f64> {
    let mut rates = Vec::new();
    for group in records.chunk_by(|a, b| a.request == b.request) {
        let missed = group.iter().filter(|r| r.missed()).count();
        rates.push(missed as f64 / group.len() as f64);
    }
    rates
}

fn write_outputs(out: &Path, records: &[Record]) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut segments = String::from(
        "request,video,arrival_s,fdn,index,deadline_s,fdn_deadline_s,received_s,missed,source\n",
    );
    for r in records {
        segments += &format!(
            "{},{},{:.6},{},{},{:.6},{},{},{},{}\n",
            r.request,
            r.video,
            r.arrival_s,
            r.fdn,
            r.index,
            r.deadline_s,
            r.fdn_deadline_s
                .map(|s| format!("{s:.6}"))
                .unwrap_or_default(),
            r.received_s.map(|s| format!("{s:.6}")).unwrap_or_default(),
            r.missed(),
            r.source.replace(',', ";")
        );
    }
    let mut viewers = String::from("request,video,fdn,segments,deadline_miss_rate\n");
    for group in records.chunk_by(|a, b| a.request == b.request) {
        let missed = group.iter().filter(|r| r.missed()).count();
        viewers += &format!(
            "{},{},{},{},{:.4}\n",
            group[0].request,
            group[0].video,
            group[0].fdn,
            group.len(),
            missed as f64 / group.len() as f64
        );
    }
    for (name, text) in [("segments.csv", segments), ("viewers.csv", viewers)] {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer that takes the connection and never answers costs a request its timeout, not
    /// forever.
    #[tokio::test]
    async fn a_black_hole_answers_with_a_timeout() {
        let hole = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/fdns", hole.local_addr().unwrap());
        let accepted = tokio::spawn(async move {
            let mut kept = Vec::new();
            while let Ok((socket, _)) = hole.accept().await {
                kept.push(socket);
            }
        });
        let started = Instant::now();
        let outcome = tokio::time::timeout(
            Duration::from_secs(10),
            get_json(
                &crate::roles::fetch::client().build().unwrap(),
                &url,
                Duration::from_millis(300),
            ),
        )
        .await
        .expect("the request must end by its own timeout");
        assert!(outcome.is_err());
        assert!(started.elapsed() < Duration::from_secs(2));
        accepted.abort();
    }

    /// A request that never played counts as all its video's segments missed, not as one:
    /// with one viewer of 10 segments missing 1 and one of 20 turned away, 21 of 30 missed.
    #[test]
    fn a_request_that_never_played_misses_every_segment() {
        let record = |request, index, received_s| Record {
            request,
            video: 0,
            arrival_s: 0.0,
            fdn: "fdn1".into(),
            index,
            deadline_s: 1.0,
            fdn_deadline_s: None,
            received_s,
            source: String::new(),
        };
        let records: Vec<Record> = (0..10)
            .map(|i| record(0, i, Some(if i == 0 { 2.0 } else { 0.5 })))
            .collect();
        let rates = MissRates::of(&records, 1, 20);
        assert_eq!((rates.missed, rates.total), (21, 30));
        assert!((rates.segments - 0.7).abs() < 1e-12, "{}", rates.segments);
        assert!((rates.viewers - 0.55).abs() < 1e-12, "{}", rates.viewers);
        let none = MissRates::of(&[], 0, 0);
        assert_eq!((none.segments, none.viewers, none.total), (0.0, 0.0, 0));
    }
}
