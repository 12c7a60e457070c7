//! Every measurement against an in-process server on 127.0.0.1 (ephemeral ports, each test
//! well under 3 s): loopback loses nothing, so a loss is a bug. How fast loopback is depends on
//! what else the machine runs, so no test bounds a time or rate from above or a rate from below
//! (`cdnlab bench` measures those); they check what the code decides (counts, losses, which
//! error, that a timeout or pacing was honoured: a lower bound on the time taken) and that the
//! measurements are consistent with each other (an RTT fits within the time the whole
//! measurement took). The timing logic itself is tested without a network, on given times
//! (echo_log.rs, meter.rs).

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use super::*;

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn server() -> RunningServer {
    Server::bind(LOCALHOST, 0).unwrap().spawn().unwrap()
}

/// A loopback port with nothing listening on it (bound, then released).
fn silent_port() -> SocketAddr {
    UdpSocket::bind((LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
}

#[test]
fn rtt_on_loopback_is_fast_and_lossless() {
    let server = server();
    let opts = RttOptions {
        count: 50,
        interval: Duration::from_millis(2),
        size: 100,
        keep_samples: true,
    };
    let started = Instant::now();
    let report = measure_rtt(server.addr(), &opts).unwrap();
    let took_ms = started.elapsed().as_secs_f64() * 1e3;
    // The 50 pings follow their schedule: the last leaves 49 × 2 ms after the first. (That all
    // answered ends the session without a drain wait is EchoLog's decision, tested there.)
    assert!(took_ms >= 98.0, "{took_ms} ms");
    assert_eq!((report.sent, report.received), (50, 50));
    assert_eq!(report.loss_rate, 0.0);
    let rtt = report.rtt_ms.unwrap();
    // Every round trip happened within the measurement: a unit slip (ns or µs read as ms)
    // breaks this.
    assert!(
        rtt.min > 0.0 && rtt.max <= took_ms,
        "{rtt:?} within {took_ms} ms"
    );
    assert!(rtt.min <= rtt.p50 && rtt.p50 <= rtt.p99 && rtt.p99 <= rtt.max);
    let samples = report.samples_ms.unwrap();
    assert_eq!(samples.len(), 50);
    assert!(samples.iter().all(Option::is_some));
    let stats = server.stop().unwrap();
    assert_eq!(stats.echoed_datagrams, 50);
}

#[test]
fn rtt_to_a_silent_port_is_full_loss_after_the_drain_wait() {
    let target = silent_port();
    let opts = RttOptions {
        count: 3,
        ..RttOptions::default()
    };
    let started = Instant::now();
    let report = measure_rtt(target, &opts).unwrap();
    let took = started.elapsed();
    // Nothing answered: it waited out the drain, 1 s after the last send (EchoLog decides how
    // long; its tests check that no reply means the 1 s floor, not the 30 s ceiling).
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert_eq!(
        (report.sent, report.received, report.loss_rate),
        (3, 0, 1.0)
    );
    assert_eq!(report.rtt_ms, None);
}

#[test]
fn rtt_options_are_checked() {
    let target = silent_port();
    for opts in [
        RttOptions {
            count: 0,
            ..RttOptions::default()
        },
        RttOptions {
            size: 8,
            ..RttOptions::default()
        },
    ] {
        let error = measure_rtt(target, &opts).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    }
}

#[test]
fn wait_for_echo_finds_a_server_and_times_out_without_one() {
    let server = server();
    let started = Instant::now();
    let rtt = wait_for_echo(server.addr(), Duration::from_secs(1)).unwrap();
    assert!(rtt > Duration::ZERO && rtt <= started.elapsed(), "{rtt:?}");
    let started = Instant::now();
    let error = wait_for_echo(silent_port(), Duration::from_millis(300)).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
    // It gave up at the timeout it was given, not before, and says which.
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(error.to_string().contains("within 300ms"), "{error}");
}

#[test]
fn download_goodput_on_loopback() {
    let server = server();
    let opts = GoodputOptions {
        direction: Direction::Download,
        duration: Duration::from_millis(500),
        warmup: Duration::from_millis(200),
    };
    let started = Instant::now();
    let report = measure_goodput(server.addr(), &opts).unwrap();
    let took = started.elapsed().as_secs_f64();
    assert_eq!(report.measured_at, "client");
    // The server sends for warmup + duration, so the transfer lasts at least that long.
    assert!(took >= 0.7, "{took} s");
    // The window leaves out the warmup's bytes (which bytes are in it is WindowMeter's
    // decision, tested in meter.rs) and lies within the transfer.
    assert!(report.window_bytes > 0 && report.window_bytes < report.bytes);
    assert!(report.goodput_mbps > 0.0, "{report:?}");
    assert!(
        report.seconds > 0.0 && report.seconds < took,
        "{report:?} within {took} s"
    );
    let mbps = report.window_bytes as f64 * 8.0 / report.seconds / 1e6;
    assert!((mbps - report.goodput_mbps).abs() < 1e-6 * mbps);
    assert_eq!(server.stop().unwrap().connections, 1);
}

#[test]
fn upload_goodput_on_loopback_counts_every_byte() {
    let server = server();
    let opts = GoodputOptions {
        direction: Direction::Upload,
        duration: Duration::from_millis(500),
        warmup: Duration::from_millis(200),
    };
    let started = Instant::now();
    let report = measure_goodput(server.addr(), &opts).unwrap();
    let took = started.elapsed().as_secs_f64();
    assert_eq!(report.measured_at, "server");
    assert_eq!(report.sent_bytes, Some(report.bytes));
    // The client sends for warmup + duration.
    assert!(took >= 0.7, "{took} s");
    assert!(report.goodput_mbps > 0.0, "{report:?}");
    assert!(report.window_bytes > 0 && report.window_bytes < report.bytes);
    assert!(
        report.seconds > 0.0 && report.seconds < took,
        "{report:?} within {took} s"
    );
}

#[test]
fn goodput_to_a_closed_port_fails_quickly() {
    // Refused at once, not timed out after tcp::IO_TIMEOUT: the kind says which.
    let error = measure_goodput(silent_port(), &GoodputOptions::default()).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::ConnectionRefused);
    assert!(error.to_string().contains("goodput with 127.0.0.1:"));
}

#[test]
fn stream_on_loopback_is_paced_and_lossless() {
    let server = server();
    let opts = StreamOptions {
        rate_pps: 2000.0,
        count: 1000,
        size: 200,
    };
    let started = Instant::now();
    let report = measure_stream(server.addr(), &opts).unwrap();
    let took = started.elapsed();
    // 1000 datagrams at 2000/s take 0.5 s: no datagram leaves before its time, so the stream
    // cannot beat the schedule. The achieved rate spans the first send to the last, so a late
    // first send shortens that span and lifts the rate a little (seen: 2000.14/s); 1% is a
    // first send 5 ms late.
    assert!(took >= Duration::from_millis(499), "{took:?}");
    assert!(
        report.achieved_pps > 0.0 && report.achieved_pps <= 2000.0 * 1.01,
        "{report:?}"
    );
    assert_eq!(
        (report.sent, report.received, report.loss_rate),
        (1000, 1000, 0.0)
    );
    assert_eq!(report.loss_scope, "round_trip");
    let rtt = report.rtt_ms.unwrap();
    let took_ms = took.as_secs_f64() * 1e3;
    assert!(
        rtt.min > 0.0 && rtt.max <= took_ms,
        "{rtt:?} within {took_ms} ms"
    );
    let variation = report.delay_variation_ms.unwrap();
    assert!((variation.p99_minus_p50 - (rtt.p99 - rtt.p50)).abs() < 1e-12);
    assert!(variation.stdev >= 0.0);
}

#[test]
fn reports_round_trip_through_json() {
    let server = server();
    let report = measure_rtt(
        server.addr(),
        &RttOptions {
            count: 3,
            ..RttOptions::default()
        },
    )
    .unwrap();
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains("\"rtt_ms\":{\"min\":"));
    assert!(!json.contains("samples_ms"));
    let parsed: RttReport = serde_json::from_str(&json).unwrap();
    assert_eq!((parsed.sent, parsed.received), (3, 3));
    assert_eq!(parsed.target, report.target);
    let (a, b) = (parsed.rtt_ms.unwrap(), report.rtt_ms.unwrap());
    assert!((a.p99 - b.p99).abs() < 1e-9 && (a.stdev - b.stdev).abs() < 1e-9);
}

/// A fresh empty directory under the system's temporary directory.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("prb-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn client_role_writes_its_summary() {
    let server = server();
    let config = format!(
        "mode = 'client'\ntarget = '127.0.0.1'\nport = {}\nrtt_count = 20\nrtt_interval = '1ms'\n\
         goodput_seconds = 0.3\ngoodput_warmup = '100ms'\nstream_count = 200\n\
         stream_rate_pps = 1000\nrtt_samples = true",
        server.addr().port()
    );
    let RoleConfig::Client(role) = parse_role_config(&config.parse().unwrap()).unwrap() else {
        panic!("not a client");
    };
    let started = Instant::now();
    let summary = run_client(&role, "c1".to_string());
    let took_ms = started.elapsed().as_secs_f64() * 1e3;
    assert!(!summary.failed, "{summary:?}");
    assert_eq!(summary.rtt_received, Some(20));
    assert_eq!(summary.stream_received, Some(200));
    assert!(summary.goodput_mbps.unwrap() > 0.0);
    let samples = summary
        .rtt_samples_ms
        .clone()
        .expect("rtt_samples = true keeps them");
    assert_eq!(samples.len(), 20);
    let max = samples
        .iter()
        .map(|s| s.expect("none lost"))
        .fold(0.0, f64::max);
    assert_eq!(Some(max), summary.rtt_ms_max);
    assert!(max > 0.0 && max <= took_ms, "{max} ms within {took_ms} ms");

    let dir = temp_dir("client");
    let client = crate::roles::summary::ClientSummary::of("c1", &summary).unwrap();
    let path = crate::roles::summary::write(&dir, &client).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["node"], "c1");
    assert_eq!(json["failed"], false);
    assert_eq!(json["rtt_loss_rate"], 0.0);
    assert!(json.get("error").is_none());
    // serde_json parses floats to within an ulp, so compare the exact fields.
    let parsed: ProbeSummary = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed.goodput_bytes, summary.goodput_bytes);
    assert_eq!(parsed.goodput_direction, Some(Direction::Download));
    assert_eq!(parsed.stream_sent, Some(200));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn client_role_reports_an_unreachable_target() {
    let config = format!(
        "mode = 'client'\ntarget = '127.0.0.1:{}'\nreach_timeout = '300ms'",
        silent_port().port()
    );
    let RoleConfig::Client(role) = parse_role_config(&config.parse().unwrap()).unwrap() else {
        panic!("not a client");
    };
    let started = Instant::now();
    let summary = run_client(&role, "c2".to_string());
    // It waited reach_timeout, and gave up then rather than at the default 10 s: the error
    // names the timeout it used.
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(summary.failed);
    let error = summary.error.unwrap();
    assert!(error.contains("no echo from 127.0.0.1:"), "{error}");
    assert!(error.contains("within reach_timeout 300ms"), "{error}");
    assert_eq!(summary.rtt_sent, None);
}

/// Sends one datagram to `receiver`, sleeps `pause`, reads it: what the read says, and the time
/// from just before the send to just after the read, ns.
fn send_pause_read(receiver: &UdpSocket, pause: Duration) -> (stamped::Received, u64) {
    let sender = UdpSocket::bind((LOCALHOST, 0)).unwrap();
    let started = Instant::now();
    sender
        .send_to(b"ping", receiver.local_addr().unwrap())
        .unwrap();
    std::thread::sleep(pause);
    let mut buf = [0u8; 16];
    let received = stamped::receive(receiver, &mut buf).unwrap();
    assert_eq!(received.len, 4);
    assert_eq!(received.from, Some(sender.local_addr().unwrap()));
    (received, started.elapsed().as_nanos() as u64)
}

/// The time a datagram waits in the socket before its reader runs is read off the kernel's
/// receive stamp (taken on loopback within the send): it is at least the time the reader slept
/// after the send, and no more than the whole exchange took.
///
/// The kernel turns arrival stamps on for the whole machine lazily (a static key flipped from a
/// workqueue when the first socket asks), and a datagram that arrived before that is stamped at
/// the read instead, as if it had not waited: on a fresh machine the first datagrams can show
/// about 0. So the test first sends datagrams until one shows its wait (for at most 2 s), then
/// measures.
#[test]
fn a_datagrams_wait_in_the_socket_is_read_off_its_kernel_stamp() {
    let receiver = UdpSocket::bind((LOCALHOST, 0)).unwrap();
    stamped::enable(&receiver).unwrap();
    let pause = Duration::from_millis(10);
    let on = (0..200).any(|_| send_pause_read(&receiver, pause).0.queued_ns >= 10_000_000);
    assert!(
        on,
        "no datagram in 200 showed its wait: arrival stamps never came on"
    );

    let (received, took_ns) = send_pause_read(&receiver, Duration::from_millis(30));
    assert!(
        (30_000_000..=took_ns).contains(&received.queued_ns),
        "waited {} ns of {took_ns} ns",
        received.queued_ns
    );
}
