//! The client role (`probe --config FILE` with `mode = "client"`): wait for the target, run the
//! configured tests in order, and leave one `summary.json` whose flat snake_case names carry
//! their units, as every cdnlab client's summary does.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netem::units::format_duration_ns;
use serde::{Deserialize, Serialize};

use super::config::ClientRole;
use super::echo::wait_for_echo;
use super::goodput::{measure_goodput, Direction, GoodputReport};
use super::rtt::{measure_rtt, RttReport};
use super::stream::{measure_stream, StreamReport};
use super::target::resolve_target;

/// How often an unresolvable target name is looked up again while waiting for it.
const RESOLVE_RETRY: Duration = Duration::from_millis(200);

/// A client's results. Fields of a test that was skipped (or not reached after a failure) are
/// absent; `failed` is always there, with `error` when it is true.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeSummary {
    pub node: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The address the target resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_addr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_sent: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_received: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_loss_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms_min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms_mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms_p50: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms_p90: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms_p99: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms_max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms_stdev: Option<f64>,
    /// Every ping's RTT in ms in send order, `null` where lost (only with `rtt_samples`): ping
    /// k was sent no earlier than k × `rtt_interval` after the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_samples_ms: Option<Vec<Option<f64>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_direction: Option<Direction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_mbps: Option<f64>,
    /// Every byte the receiving side got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_bytes: Option<u64>,
    /// Length of the measured window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_window_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_rate_pps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_sent: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_received: Option<u64>,
    /// Round-trip loss: out or back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_loss_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_rtt_ms_p50: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_rtt_ms_p99: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_rtt_ms_stdev: Option<f64>,
    /// p99 − p50 of the stream's RTTs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_delay_variation_ms: Option<f64>,
    pub failed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ProbeSummary {
    fn add_rtt(&mut self, report: &RttReport) {
        self.rtt_sent = Some(report.sent);
        self.rtt_received = Some(report.received);
        self.rtt_loss_rate = Some(report.loss_rate);
        if let Some(rtt) = report.rtt_ms {
            self.rtt_ms_min = Some(rtt.min);
            self.rtt_ms_mean = Some(rtt.mean);
            self.rtt_ms_p50 = Some(rtt.p50);
            self.rtt_ms_p90 = Some(rtt.p90);
            self.rtt_ms_p99 = Some(rtt.p99);
            self.rtt_ms_max = Some(rtt.max);
            self.rtt_ms_stdev = Some(rtt.stdev);
        }
        self.rtt_samples_ms = report.samples_ms.clone();
    }

    fn add_goodput(&mut self, report: &GoodputReport) {
        self.goodput_direction = Some(report.direction);
        self.goodput_mbps = Some(report.goodput_mbps);
        self.goodput_bytes = Some(report.bytes);
        self.goodput_window_s = Some(report.seconds);
    }

    fn add_stream(&mut self, report: &StreamReport) {
        self.stream_rate_pps = Some(report.rate_pps);
        self.stream_sent = Some(report.sent);
        self.stream_received = Some(report.received);
        self.stream_loss_rate = Some(report.loss_rate);
        if let Some(rtt) = report.rtt_ms {
            self.stream_rtt_ms_p50 = Some(rtt.p50);
            self.stream_rtt_ms_p99 = Some(rtt.p99);
            self.stream_rtt_ms_stdev = Some(rtt.stdev);
            self.stream_delay_variation_ms = Some(rtt.p99 - rtt.p50);
        }
    }
}

/// Resolves the target and waits for its echo, both within `timeout` (a server node may still
/// be starting, or its name not yet resolvable).
fn reach(role: &ClientRole) -> io::Result<SocketAddr> {
    let start = Instant::now();
    let addr = loop {
        match resolve_target(&role.target, role.port) {
            Ok(addr) => break addr,
            Err(error) if error.kind() == io::ErrorKind::InvalidInput => return Err(error),
            Err(error) if start.elapsed() >= role.reach_timeout => return Err(error),
            Err(_) => std::thread::sleep(RESOLVE_RETRY),
        }
    };
    wait_for_echo(addr, role.reach_timeout.saturating_sub(start.elapsed())).map_err(|error| {
        io::Error::new(
            error.kind(),
            format!(
                "target {} ({addr}) did not answer within reach_timeout {}: {error}",
                role.target,
                format_duration_ns(role.reach_timeout.as_nanos() as u64)
            ),
        )
    })?;
    Ok(addr)
}

/// Runs the role's tests against its target and summarises them; a failure ends the run and
/// is recorded in the summary (with the results gathered before it), never returned.
pub fn run_client(role: &ClientRole, node: String) -> ProbeSummary {
    let mut summary = ProbeSummary {
        node,
        target: Some(role.target.clone()),
        ..ProbeSummary::default()
    };
    if let Err(error) = run_tests(role, &mut summary) {
        summary.failed = true;
        summary.error = Some(error.to_string());
    }
    summary
}

fn run_tests(role: &ClientRole, summary: &mut ProbeSummary) -> io::Result<()> {
    let addr = reach(role)?;
    summary.target_addr = Some(addr.to_string());
    if let Some(opts) = &role.rtt {
        let report = measure_rtt(addr, opts)?;
        summary.add_rtt(&report);
        if report.received == 0 {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("none of {} pings to {addr} was answered", report.sent),
            ));
        }
    }
    if let Some(opts) = &role.goodput {
        summary.add_goodput(&measure_goodput(addr, opts)?);
    }
    if let Some(opts) = &role.stream {
        summary.add_stream(&measure_stream(addr, opts)?);
    }
    Ok(())
}
