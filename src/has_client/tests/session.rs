//! Whole sessions against loopback servers: a manifest server, a request router and a content
//! server, as the paper's DirectRR path has them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hyper::Version;

use super::server::{bind, Reply, Seen, TestServer};
use crate::has::CSV_HEADER;
use crate::has_client::{parse_config, run, ClientConfig, StoppedBy, Summary};

/// Segment sizes of the 3 qualities (500 kbit/s, 1 and 2 Mbit/s) for 0.5 s segments.
const SIZES: [usize; 3] = [31_250, 62_500, 125_000];
const QUALITIES: [&str; 3] = ["low", "mid", "high"];
const BITRATES: [u64; 3] = [500_000, 1_000_000, 2_000_000];

/// A fresh output directory, removed when dropped.
struct OutDir(PathBuf);

impl OutDir {
    fn new(name: &str) -> OutDir {
        let dir =
            std::env::temp_dir().join(format!("cdnlab-has-client-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        OutDir(dir)
    }

    fn csv_rows(&self) -> Vec<Vec<String>> {
        let path = self.0.join("segments.csv");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().next(), Some(CSV_HEADER));
        csv::Reader::from_path(&path)
            .unwrap()
            .records()
            .map(|r| r.unwrap().iter().map(str::to_string).collect())
            .collect()
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn config(text: &str) -> ClientConfig {
    parse_config(&text.parse().unwrap()).unwrap()
}

/// Runs a session with no stop signal, bounded at 30 s.
async fn play(config: &ClientConfig, out: &Path) -> Summary {
    tokio::time::timeout(
        Duration::from_secs(30),
        run(config, "client1", out, std::future::pending()),
    )
    .await
    .expect("the session ended within 30 s")
}

/// The quality index of a media path `/video/Q/seg-NNNNN.ts` or `/video/Q/init.mp4`.
fn quality_of(path: &str) -> Option<usize> {
    let q = path.split('/').nth(2)?;
    QUALITIES.iter().position(|&name| name == q)
}

/// A content server for `/video/Q/seg-N.ts` (and `/video/Q/init.mp4`, 1000 bytes); the segment
/// `die_at` (if any) is half sent before the server dies.
fn content_server(listener: tokio::net::TcpListener, die_at: Option<usize>) -> TestServer {
    TestServer::serve(
        listener,
        Arc::new(move |seen: &Seen| {
            let reply = match quality_of(&seen.path) {
                Some(_) if seen.path.ends_with("init.mp4") => Reply::Bytes(1000),
                Some(q) => {
                    let index: Option<usize> = seen
                        .path
                        .rsplit_once("seg-")
                        .and_then(|(_, rest)| rest.split('.').next())
                        .and_then(|n| n.parse().ok());
                    match index {
                        Some(i) if Some(i) == die_at => Reply::Die {
                            len: SIZES[q],
                            sent: SIZES[q] / 2,
                        },
                        Some(_) => Reply::Bytes(SIZES[q]),
                        None => Reply::Text(404, "no such segment".into()),
                    }
                }
                None => Reply::Text(404, "not here".into()),
            };
            (Duration::ZERO, reply)
        }),
    )
}

/// A request router: 302 to the same path on `target`.
fn router(listener: tokio::net::TcpListener, target: SocketAddr) -> TestServer {
    TestServer::serve(
        listener,
        Arc::new(move |seen: &Seen| {
            (
                Duration::ZERO,
                Reply::Redirect(302, format!("http://{target}{}", seen.path)),
            )
        }),
    )
}

/// An HLS origin: the master playlist at `/p/direct-rr/video/master.m3u8` (relative variant
/// URIs) and media playlists of `segments` 0.5 s segments with absolute URIs on `chunks`.
fn hls_origin(
    listener: tokio::net::TcpListener,
    chunks: SocketAddr,
    segments: usize,
) -> TestServer {
    TestServer::serve(
        listener,
        Arc::new(move |seen: &Seen| {
            let text = if seen.path == "/p/direct-rr/video/master.m3u8" {
                let mut text = "#EXTM3U\n#EXT-X-VERSION:3\n".to_string();
                // Listed highest first: the client must sort the ladder.
                for q in (0..3).rev() {
                    text += &format!(
                        "#EXT-X-STREAM-INF:BANDWIDTH={}\n{}/playlist.m3u8\n",
                        BITRATES[q], QUALITIES[q]
                    );
                }
                Some(text)
            } else {
                quality_of(&seen.path.replace("/p/direct-rr", "")).map(|q| {
                    let mut text =
                        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n".to_string();
                    for i in 0..segments {
                        text += &format!(
                            "#EXTINF:0.500,\nhttp://{chunks}/video/{}/seg-{i:05}.ts\n",
                            QUALITIES[q]
                        );
                    }
                    text + "#EXT-X-ENDLIST\n"
                })
            };
            let reply = match text {
                Some(text) => Reply::Text(200, text),
                None => Reply::Text(404, "no such manifest".into()),
            };
            (Duration::ZERO, reply)
        }),
    )
}

/// Bytes per CSV row, checked against the row's quality.
fn row_bytes(rows: &[Vec<String>]) -> u64 {
    rows.iter()
        .map(|row| {
            let quality: usize = row[1].parse().unwrap();
            let bytes: u64 = row[3].parse().unwrap();
            assert_eq!(bytes, SIZES[quality] as u64, "row {row:?}");
            bytes
        })
        .sum()
}

#[tokio::test]
async fn an_hls_session_through_a_router_plays_in_real_time() {
    let (lm, m) = bind().await;
    let (lr, r) = bind().await;
    let (lc, c) = bind().await;
    let content = content_server(lc, None);
    let router = router(lr, c);
    let _origin = hls_origin(lm, r, 6);
    let out = OutDir::new("hls");
    let config = config(&format!(
        "url = 'http://{m}/p/direct-rr/video/master.m3u8'\nbuffer = '2s'"
    ));
    let summary = play(&config, &out.0).await;

    assert!(!summary.failed, "{:?}", summary.error);
    assert_eq!(summary.error, None);
    assert_eq!(summary.stopped_by, StoppedBy::End);
    assert_eq!(summary.policy.as_deref(), Some("direct-rr"));
    assert_eq!((summary.abr.as_str(), summary.buffer_s), ("mss", 2.0));
    assert_eq!(summary.http_version, "1.1");
    assert_eq!(summary.qoe.segments, 6);
    assert_eq!(summary.segments_downloaded, 6);
    assert_eq!(summary.redirects_per_chunk, 1.0);
    assert!(summary.redirect_time_s > 0.0);
    assert!((summary.redirect_time_total_s - 6.0 * summary.redirect_time_s).abs() < 1e-9);
    // Times on the session's clock (0 = the manifest request), compared with each other rather
    // than bounded: how long loopback takes depends on the machine's load.
    let manifest_s = summary.manifest_time_s.unwrap();
    assert!(manifest_s > 0.0);
    assert!(summary.manifest_bytes > 0);
    let startup = summary.qoe.startup_delay_s.unwrap();
    let started_s = summary.qoe.startup_delay_from_manifest_s.unwrap();
    assert!(startup > 0.0, "start-up {startup} s");
    assert!(started_s >= startup + manifest_s - 1e-6);
    assert_eq!(
        (summary.qoe.stall_count, summary.qoe.stall_time_s),
        (0, 0.0)
    );
    assert_eq!(summary.retries, 0);

    let rows = out.csv_rows();
    assert_eq!(rows.len(), 6);
    let indices: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(indices, ["0", "1", "2", "3", "4", "5"]);
    assert_eq!(summary.bytes, row_bytes(&rows));
    for row in &rows {
        // The last column (after `stalls`).
        let hops: Vec<&str> = row[9].split(';').collect();
        assert_eq!(hops.len(), 2, "{row:?}");
        assert!(hops[0].starts_with(&format!("{r}:")), "{row:?}");
        assert!(hops[1].starts_with(&format!("{c}:")), "{row:?}");
    }
    let request_s = |i: usize| rows[i][4].parse::<f64>().unwrap();
    let download_s = |i: usize| rows[i][5].parse::<f64>().unwrap();
    // The manifest came before the first segment was asked for, and playback started the
    // moment segment 0 arrived (one start-up segment), before segment 1 was asked for. The CSV
    // rounds to 1 µs.
    assert!(manifest_s <= request_s(0) + 1e-6, "{manifest_s} {rows:?}");
    assert!(
        (started_s - (request_s(0) + download_s(0))).abs() < 2e-6,
        "playback started at {started_s} s: {rows:?}"
    );
    assert!(started_s <= request_s(1) + 1e-6, "{started_s} {rows:?}");
    // P = 2 s holds 4 segments: segment 5 waits until 1 s of media has played (the room rule
    // itself is Playback's, tested in has/tests/playback.rs).
    let paced = request_s(5) - request_s(0);
    assert!(paced >= 0.99, "segment 5 requested {paced} s after 0");
    // Segments 0-3 fit at once: each is asked for as the one before arrives. This bounds a
    // time, but as a decision: a needless wait for room would be a segment's playing time,
    // 0.5 s each, 1.5 s for the three; the loopback downloads themselves take milliseconds.
    assert!(
        request_s(3) - request_s(0) < 0.5,
        "segments 0-3 fit at once: {rows:?}"
    );

    // Keep-alive: one connection to the router and one to the content server for 6 segments.
    assert_eq!(router.connections.load(Ordering::SeqCst), 1);
    assert_eq!(content.connections.load(Ordering::SeqCst), 1);
    assert!(content
        .requests()
        .iter()
        .all(|s| s.version == Version::HTTP_11));

    // The summary file is what `cdnlab run` collects.
    let client = crate::roles::summary::ClientSummary::of("client1", &summary).unwrap();
    crate::roles::summary::write(&out.0, &client).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.0.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(json["node"], "client1");
    assert_eq!(json["failed"], false);
    assert_eq!(json["segments"], 6);
    assert_eq!(json["stall_count"], 0);
    assert_eq!(json["stopped_by"], "end");
    assert!(json["startup_delay_s"].as_f64().unwrap() > 0.0);
    assert!(json.get("error").is_none());
}

#[tokio::test]
async fn a_dash_session_over_http2_fetches_each_init_segment_once() {
    let (lm, m) = bind().await;
    let (lc, c) = bind().await;
    let content = content_server(lc, None);
    let mpd = {
        let mut reps = String::new();
        for q in 0..3 {
            reps += &format!(
                "<Representation id=\"{}\" bandwidth=\"{}\"><SegmentList timescale=\"1000\" duration=\"500\">\
                 <Initialization sourceURL=\"http://{c}/video/{}/init.mp4\"/>",
                QUALITIES[q], BITRATES[q], QUALITIES[q]
            );
            for i in 0..8 {
                reps += &format!(
                    "<SegmentURL media=\"http://{c}/video/{}/seg-{i:05}.m4s\"/>",
                    QUALITIES[q]
                );
            }
            reps += "</SegmentList></Representation>";
        }
        format!(
            "<?xml version=\"1.0\"?><MPD type=\"static\"><Period><AdaptationSet mimeType=\"video/mp4\">\
             {reps}</AdaptationSet></Period></MPD>"
        )
    };
    let _origin = TestServer::serve(
        lm,
        Arc::new(move |seen: &Seen| {
            let reply = if seen.path == "/video/manifest.mpd" {
                Reply::Text(200, mpd.clone())
            } else {
                Reply::Text(404, "".into())
            };
            (Duration::ZERO, reply)
        }),
    );
    let out = OutDir::new("dash");
    let config = config(&format!(
        "url = 'http://{m}/video/manifest.mpd'\nabr = 'throughput'\nbuffer = 3\n\
         segments = '4'\nhttp2 = 'true'\npolicy = 'my-label'\nstartup_segments = 2"
    ));
    let summary = play(&config, &out.0).await;

    assert!(!summary.failed, "{:?}", summary.error);
    assert_eq!(summary.policy.as_deref(), Some("my-label"));
    assert_eq!(
        (summary.abr.as_str(), summary.http_version),
        ("throughput", "2")
    );
    assert_eq!(summary.qoe.segments, 4, "capped by `segments`");
    assert_eq!(summary.redirects_per_chunk, 0.0);
    assert_eq!(summary.redirect_time_s, 0.0);
    let requests = content.requests();
    assert!(requests.iter().all(|s| s.version == Version::HTTP_2));
    assert_eq!(
        content.connections.load(Ordering::SeqCst),
        1,
        "one h2 connection"
    );
    // Each quality played has its init segment fetched exactly once, before its first segment.
    let rows = out.csv_rows();
    assert_eq!(rows.len(), 4);
    let mut qualities: Vec<usize> = rows.iter().map(|r| r[1].parse().unwrap()).collect();
    qualities.sort();
    qualities.dedup();
    for (q, name) in QUALITIES.iter().enumerate() {
        let inits = content.requests_for(&format!("/video/{name}/init.mp4"));
        assert_eq!(inits, usize::from(qualities.contains(&q)), "quality {name}");
    }
    assert_eq!(
        summary.bytes,
        row_bytes(&rows) + 1000 * qualities.len() as u64
    );
    // Start-up waits for 2 segments: playback starts when segment 1 arrives.
    let arrived_1 = rows[1][4].parse::<f64>().unwrap() + rows[1][5].parse::<f64>().unwrap();
    let started = summary.qoe.startup_delay_from_manifest_s.unwrap();
    assert!(
        (started - arrived_1).abs() < 0.002,
        "{started} vs {arrived_1}"
    );
}

#[tokio::test]
async fn a_content_server_dying_mid_stream_fails_the_session_with_a_partial_log() {
    let (lm, m) = bind().await;
    let (lr, r) = bind().await;
    let (lc, c) = bind().await;
    let _content = content_server(lc, Some(3));
    let _router = router(lr, c);
    let _origin = hls_origin(lm, r, 6);
    let out = OutDir::new("dies");
    let config = config(&format!(
        "url = 'http://{m}/p/direct-rr/video/master.m3u8'\nbuffer = '20s'\ntimeout = '2s'"
    ));
    let summary = play(&config, &out.0).await;

    assert!(summary.failed);
    assert_eq!(summary.stopped_by, StoppedBy::Error);
    let error = summary.error.clone().unwrap();
    assert!(error.starts_with("segment 3: GET "), "{error}");
    assert!(error.contains(&format!("http://{r}/video/")), "{error}");
    assert!(error.contains("seg-00003.ts"), "{error}");
    assert!(error.contains("after 3 attempts"), "{error}");
    // What came before the failure is kept: 3 segments logged, received and played.
    assert_eq!(out.csv_rows().len(), 3);
    assert_eq!(summary.segments_downloaded, 3);
    assert_eq!(summary.qoe.segments, 3);
    assert!(summary.qoe.startup_delay_s.is_some());
    assert_eq!(summary.redirects_per_chunk, 1.0);
}

#[tokio::test]
async fn an_unreachable_manifest_fails_with_its_url() {
    let (listener, addr) = bind().await;
    drop(listener);
    let out = OutDir::new("unreachable");
    let url = format!("http://{addr}/p/direct-cs/video/manifest.mpd");
    let summary = play(&config(&format!("url = '{url}'")), &out.0).await;
    assert!(summary.failed);
    let error = summary.error.unwrap();
    assert!(
        error.starts_with(&format!("manifest GET {url}: ")),
        "{error}"
    );
    assert_eq!(summary.policy.as_deref(), Some("direct-cs"));
    assert_eq!(summary.manifest_time_s, None);
    assert_eq!(summary.qoe.startup_delay_s, None);
    assert_eq!(summary.qoe.segments, 0);
    assert!(out.csv_rows().is_empty(), "only the header");
}

#[tokio::test]
async fn a_redirect_loop_on_the_manifest_fails_the_session() {
    let (listener, addr) = bind().await;
    let _looping = TestServer::serve(
        listener,
        Arc::new(|seen: &Seen| (Duration::ZERO, Reply::Redirect(302, seen.path.clone()))),
    );
    let out = OutDir::new("loop");
    let summary = play(
        &config(&format!("url = 'http://{addr}/video/master.m3u8'")),
        &out.0,
    )
    .await;
    assert!(summary.failed);
    assert!(
        summary
            .error
            .as_deref()
            .unwrap()
            .contains("too many redirects"),
        "{:?}",
        summary.error
    );
}

#[tokio::test]
async fn max_duration_ends_a_session_without_failure_and_a_stop_with_one() {
    let (lm, m) = bind().await;
    let (lr, r) = bind().await;
    let (lc, c) = bind().await;
    let _content = content_server(lc, None);
    let _router = router(lr, c);
    let _origin = hls_origin(lm, r, 40);
    let url = format!("http://{m}/p/direct-rr/video/master.m3u8");

    let out = OutDir::new("max-duration");
    let started = std::time::Instant::now();
    let limited = config(&format!(
        "url = '{url}'\nbuffer = '1s'\nmax_duration = '1s'"
    ));
    let summary = play(&limited, &out.0).await;
    let elapsed = started.elapsed();
    assert!(!summary.failed, "{:?}", summary.error);
    assert_eq!(summary.stopped_by, StoppedBy::MaxDuration);
    // It ran its 1 s, and ended long before the 40 segments (20 s of media) could have played.
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(20),
        "{elapsed:?}"
    );
    // A 1 s buffer of 0.5 s segments, played for at most 1 s: at most 2 played and 2 buffered
    // (6 leaves room for rounding at the edges), however fast the machine; at least the first
    // arrived. How many in between depends on the machine's speed, so no tighter lower bound.
    assert!(
        (1..=6).contains(&summary.segments_downloaded),
        "{} segments",
        summary.segments_downloaded
    );
    assert_eq!(out.csv_rows().len(), summary.segments_downloaded);

    let out = OutDir::new("stopped");
    let stop = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        "stopped by SIGTERM before the end".to_string()
    };
    let unlimited = config(&format!("url = '{url}'\nbuffer = '1s'"));
    let summary = run(&unlimited, "client1", &out.0, stop).await;
    assert!(summary.failed);
    assert_eq!(
        summary.error.as_deref(),
        Some("stopped by SIGTERM before the end")
    );
    assert!(summary.segments_downloaded >= 1);
    assert_eq!(out.csv_rows().len(), summary.segments_downloaded);
}

#[tokio::test]
async fn without_keep_alive_every_request_opens_a_connection() {
    let (lm, m) = bind().await;
    let (lr, r) = bind().await;
    let (lc, c) = bind().await;
    let content = content_server(lc, None);
    let router = router(lr, c);
    let _origin = hls_origin(lm, r, 3);
    let out = OutDir::new("no-keep-alive");
    let config = config(&format!(
        "url = 'http://{m}/p/direct-rr/video/master.m3u8'\nbuffer = '6s'\nkeep_alive = false"
    ));
    let summary = play(&config, &out.0).await;
    assert!(!summary.failed, "{:?}", summary.error);
    assert_eq!(summary.segments_downloaded, 3);
    assert_eq!(router.connections.load(Ordering::SeqCst), 3);
    assert_eq!(content.connections.load(Ordering::SeqCst), 3);
}
