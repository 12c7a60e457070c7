//! `bench rate`: one TCP flow's goodput through a rate-limited link, against the rate and
//! against the most TCP can carry through a netem rate (which counts whole Ethernet frames).

use super::lab::{chain, BenchLab, PORT};
use super::sample::{steady_state, Steady};
use super::stats::{bdp_packets, TCP_CEILING};
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::{sys, Error, Result};
use crate::probe::GoodputReport;
use crate::table::{num, Table};
use netem::daemon::Response;
use netem::units::format_rate_bps;
use std::time::Duration;

const LAB: &str = "bench-rate";

/// Configured rates, Mbit/s.
const RATES_MBIT: [u64; 6] = [1, 5, 20, 100, 500, 1000];

/// Rates also measured through the kernel's TBF on the same veth, as the anchor of the
/// userspace shaper's rows.
const TBF_RATES_MBIT: [u64; 2] = [100, 1000];

/// The goodput target at 1 Gbit/s (% of the rate) for the flow that keeps the link
/// busy: 95% is 99.4% of TCP's ceiling.
const GIGABIT_TARGET: f64 = 95.0;

/// Socket buffer maxima (bytes) in the client's and server's namespaces: Linux's defaults
/// (4 MB send, 6 MB receive) cap one flow's window below a 1 Gbit/s × 40 ms path's two
/// bandwidth-delay products, so the window, not the link, would be what is measured.
const TCP_BUFFER_MAX: u64 = 32 << 20;

/// Round-trip time of the path: 20 ms each way on the rate-limited link.
const RTT_NS: u64 = 40_000_000;

/// The target band (% of the rate), required from 1 to `TARGET_UP_TO_MBIT`.
const TARGET_LOW: f64 = 93.0;
const TARGET_HIGH: f64 = 100.0;
const TARGET_UP_TO_MBIT: u64 = 100;

/// The shaper's queue of the data's direction: the router—server link, sent by the server.
const DATA_QUEUE: &str = "router-server/server";

/// The sysctl naming a namespace's TCP congestion control.
pub const CONGESTION_CONTROL: &str = "net/ipv4/tcp_congestion_control";

/// The loss-based algorithm measured besides the default: it keeps the queue from running
/// empty, so it shows what the link gives whatever the default's own pacing does. Reno, as a
/// namespace other than the host's may only pick algorithms in the host's
/// `tcp_allowed_congestion_control` (reno and the default, normally; cubic is refused).
const LOSS_BASED: &str = "reno";

/// The smallest queue limit used, packets: a few frames of slack on the slowest links.
const MIN_LIMIT: u32 = 30;

/// A kernel TBF put on the data sender's egress veth, the anchor for a rate: `rate_bps`, a
/// queue of `limit` full frames and a bucket of 1 ms of the rate (at least two frames).
#[derive(Debug, Clone, Copy)]
pub struct Tbf {
    pub rate_bps: u64,
    pub limit: u32,
}

impl Tbf {
    /// The `tc qdisc replace` arguments after `tc -n NETNS`.
    fn tc_args(&self, ifname: &str) -> Vec<String> {
        let frame = u64::from(FRAME_BYTES);
        let burst = (self.rate_bps / 8 / 1000).max(2 * frame);
        [
            "qdisc",
            "replace",
            "dev",
            ifname,
            "root",
            "tbf",
            "rate",
            &format!("{}bit", self.rate_bps),
            "burst",
            &burst.to_string(),
            "limit",
            &(u64::from(self.limit) * frame).to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }
}

/// A full Ethernet frame on the lab's veths (MTU 1500 + 14 bytes of header).
const FRAME_BYTES: u32 = 1514;

/// A flow's measurement and what the shaper saw meanwhile.
pub struct FlowResult {
    pub goodput: GoodputReport,
    /// The sender's TCP congestion control.
    pub congestion_control: String,
    /// Packets the shaper dropped at the queue limit, over all queues; `None` on the kernel
    /// backend.
    pub queue_drops: Option<u64>,
    /// Times the kernel dropped queued packets because the shaper did not read them in time.
    pub overruns: Option<u64>,
    /// The shaper over the flow's steady state; `None` on the kernel backend.
    pub steady: Option<Steady>,
}

/// The queue limit for `rate_bps` on a path of `RTT_NS`: two bandwidth-delay products, since a
/// netem queue also holds the packets waiting out the link's delay (half a BDP here), leaving
/// at least one BDP for the standing queue.
pub fn limit_for(rate_bps: u64) -> u32 {
    ((2.0 * bdp_packets(rate_bps, RTT_NS)).ceil() as u32).max(MIN_LIMIT)
}

/// The router—server link's TOML: 20 ms each way, with `rate_bps` (if any) and `limit`.
pub fn core_link(rate_bps: Option<u64>, limit: u32) -> String {
    let mut text = format!("delay = \"{}ms\"\nlimit = {limit}", RTT_NS / 2_000_000);
    if let Some(rate) = rate_bps {
        text += &format!("\nrate = \"{}\"", format_rate_bps(rate));
    }
    text
}

/// One download (server → client) through a fresh lab: `probe goodput` for `seconds` after
/// `warmup`, with the shaper sampled over the flow's steady state. `congestion_control` names
/// the sender's algorithm (set in the server's namespace), else the namespace's default is used;
/// `tbf` adds a kernel TBF on the server's veth to the router.
pub fn flow(
    lab_name: &str,
    core: &str,
    seconds: f64,
    warmup_s: f64,
    congestion_control: Option<&str>,
    tbf: Option<Tbf>,
    options: &BenchOptions,
) -> Result<FlowResult> {
    let lab = BenchLab::up(&chain(lab_name, "", core), options)?;
    let congestion_control = lab.sysctl("server", CONGESTION_CONTROL, congestion_control)?;
    for node in ["client", "server"] {
        for key in ["net/ipv4/tcp_rmem", "net/ipv4/tcp_wmem"] {
            let current = lab.sysctl(node, key, None)?;
            let raised = raise_max(&current, TCP_BUFFER_MAX)
                .ok_or_else(|| Error(format!("{node}: {key} reads `{current}`")))?;
            lab.sysctl(node, key, Some(&raised))?;
        }
    }
    if let Some(tbf) = tbf {
        let direction = lab
            .state()
            .directions
            .iter()
            .find(|d| d.id(&lab.state().topology) == DATA_QUEUE)
            .ok_or_else(|| Error(format!("the lab has no direction `{DATA_QUEUE}`")))?;
        let mut argv = vec!["tc", "-n", &direction.sender_netns];
        let args = tbf.tc_args(&direction.sender_ifname);
        argv.extend(args.iter().map(String::as_str));
        sys::run(&argv, None)?;
    }
    let target = format!("server:{PORT}");
    let seconds_text = seconds.to_string();
    let warmup_text = format!("{warmup_s}s");
    let running = lab.spawn_probe(
        "client",
        &[
            "goodput",
            "--target",
            &target,
            "--seconds",
            &seconds_text,
            "--warmup",
            &warmup_text,
        ],
    )?;
    let steady = steady_state(
        &lab,
        DATA_QUEUE,
        Duration::from_secs_f64(warmup_s),
        Duration::from_secs_f64(seconds),
    )?;
    let goodput: GoodputReport = running.finish()?;
    let status = lab.shaper_status()?;
    lab.down()?;
    Ok(FlowResult {
        goodput,
        congestion_control,
        queue_drops: status.as_ref().and_then(queue_drops),
        overruns: status
            .as_ref()
            .and_then(|r| r.daemon.as_ref())
            .map(|d| d.overruns),
        steady,
    })
}

/// A `tcp_rmem`/`tcp_wmem` value ("min default max") with its max raised to at least `max`.
fn raise_max(value: &str, max: u64) -> Option<String> {
    let fields: Vec<u64> = value
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let [min, default, current] = fields[..] else {
        return None;
    };
    Some(format!("{min} {default} {}", current.max(max)))
}

fn queue_drops(response: &Response) -> Option<u64> {
    response
        .queues
        .as_ref()
        .map(|queues| queues.iter().map(|q| q.stats.dropped_queue_full).sum())
}

struct Point {
    rate_mbit: u64,
    limit: u32,
    /// The rate was the kernel's TBF (the anchor), not the shaper's.
    tbf: bool,
    result: FlowResult,
}

impl Point {
    fn percent(&self) -> f64 {
        self.result.goodput.goodput_mbps / self.rate_mbit as f64 * 100.0
    }

    /// Goodput over that of the TBF row of the same rate and congestion control.
    fn vs_tbf(&self, points: &[Point]) -> Option<f64> {
        let anchor = points.iter().find(|p| {
            p.tbf
                && p.rate_mbit == self.rate_mbit
                && p.result.congestion_control == self.result.congestion_control
        })?;
        Some(self.result.goodput.goodput_mbps / anchor.result.goodput.goodput_mbps)
    }
}

/// The flows of one rate, by the shaper or through a TBF: the namespace's default congestion
/// control, then the loss-based one unless that is the default.
fn flows_at(
    rate_mbit: u64,
    tbf: bool,
    seconds: f64,
    warmup: f64,
    options: &BenchOptions,
) -> Result<Vec<Point>> {
    let rate_bps = rate_mbit * 1_000_000;
    let limit = limit_for(rate_bps);
    let (core, kernel) = if tbf {
        let tbf = Tbf { rate_bps, limit };
        (core_link(None, limit), Some(tbf))
    } else {
        (core_link(Some(rate_bps), limit), None)
    };
    let by = if tbf { "kernel TBF" } else { "shaper" };
    let mut points = Vec::new();
    for congestion_control in [None, Some(LOSS_BASED)] {
        progress(format!(
            "rate: {rate_mbit} Mbit/s by the {by}, limit {limit}, {seconds} s, {}",
            congestion_control.unwrap_or("default congestion control")
        ));
        let result = flow(
            LAB,
            &core,
            seconds,
            warmup,
            congestion_control,
            kernel,
            options,
        )?;
        let loss_based = result.congestion_control == LOSS_BASED;
        points.push(Point {
            rate_mbit,
            limit,
            tbf,
            result,
        });
        if loss_based {
            break;
        }
    }
    Ok(points)
}

pub fn run(options: &BenchOptions) -> Result<Report> {
    let (seconds, warmup) = if options.quick {
        (2.0, 1.0)
    } else {
        (10.0, 2.0)
    };
    let mut points = Vec::new();
    for rate_mbit in RATES_MBIT {
        points.extend(flows_at(rate_mbit, false, seconds, warmup, options)?);
        if TBF_RATES_MBIT.contains(&rate_mbit) {
            points.extend(flows_at(rate_mbit, true, seconds, warmup, options)?);
        }
    }
    Ok(Report {
        name: "rate",
        title: "one TCP flow's goodput vs the configured rate, and vs the kernel's TBF".into(),
        setup: setup(seconds, warmup),
        table: table(&points),
        target: format!(
            "{TARGET_LOW}–{TARGET_HIGH}% of the rate from 1 to {TARGET_UP_TO_MBIT} Mbit/s; \
             report where it falls off; at 1 Gbit/s ≥ {GIGABIT_TARGET}% for the flow that \
             keeps the link busy ({LOSS_BASED})."
        ),
        verdict: verdict(&points),
    })
}

fn table(points: &[Point]) -> Table {
    let mut table = Table::new(&[
        "rate",
        "by",
        "sender's TCP",
        "BDP (frames)",
        "limit (packets)",
        "goodput (Mbit/s)",
        "% of rate",
        "% of TCP ceiling",
        "vs kernel TBF",
        "link carried, steady state",
        "mean frame (bytes)",
        "shaper queue drops",
        "NFQUEUE overruns",
        "machine CPU (cores)",
    ]);
    for p in points {
        let count = |v: Option<u64>| v.map_or("—".to_string(), |n| n.to_string());
        table.push(vec![
            format!("{} Mbit/s", p.rate_mbit),
            if p.tbf { "kernel TBF" } else { "shaper" }.to_string(),
            p.result.congestion_control.clone(),
            format!("{:.1}", bdp_packets(p.rate_mbit * 1_000_000, RTT_NS)),
            p.limit.to_string(),
            num(Some(p.result.goodput.goodput_mbps), 3),
            format!("{:.1}%", p.percent()),
            format!("{:.1}%", p.percent() / TCP_CEILING),
            if p.tbf {
                "(anchor)".to_string()
            } else {
                num(p.vs_tbf(points), 3)
            },
            p.result.steady.map_or("—".to_string(), |s| {
                format!("{:.1}%", s.link_mbps() / p.rate_mbit as f64 * 100.0)
            }),
            p.result
                .steady
                .filter(|s| s.data_packets > 0)
                .map_or("—".to_string(), |s| {
                    format!("{:.0}", s.data_bytes as f64 / s.data_packets as f64)
                }),
            count(p.result.queue_drops),
            count(p.result.overruns),
            p.result
                .steady
                .map_or("—".to_string(), |s| format!("{:.2}", s.machine_cores)),
        ]);
    }
    table
}

fn setup(seconds: f64, warmup: f64) -> Vec<String> {
    vec![
        "Path client — router — server; the router—server link has the rate and 20 ms of \
         delay in each direction (RTT 40 ms), the client—router link nothing."
            .into(),
        format!(
            "Queue limit: 2 × the bandwidth-delay product in 1514-byte frames (at least \
             {MIN_LIMIT}): netem's limit also counts the packets waiting out the delay."
        ),
        format!(
            "`probe goodput`: one download (server → client), {warmup} s of warmup then \
             {seconds} s measured by the receiver; once with the namespace's default \
             congestion control, once with {LOSS_BASED} (set in the sender's namespace) \
             unless that is the default. The client's and server's namespaces have their \
             TCP buffer maxima (tcp_rmem, tcp_wmem) raised to {} MB, so the window never \
             caps a flow below the rate.",
            TCP_BUFFER_MAX >> 20
        ),
        format!(
            "Anchor (`by` kernel TBF) at {}: the link's shaper queue has the delay only \
             (same limit) and the rate is a kernel `tbf` qdisc on the server's veth to the \
             router (rate, limit = the same number of 1514-byte frames, burst = 1 ms of the \
             rate); `vs kernel TBF` is the shaper row's goodput over the TBF row's with the \
             same congestion control, in the same run.",
            TBF_RATES_MBIT.map(|r| format!("{r} Mbit/s")).join(" and ")
        ),
        format!(
            "TCP ceiling: 1448 payload bytes per 1514-byte frame = {:.1}% of the rate, \
             since netem's rate counts Ethernet frames.",
            TCP_CEILING * 100.0
        ),
        "Link carried: the frame bytes the shaper accepted on the data's direction, per \
         second of the flow's steady state (1 s after the warmup to 0.5 s before the end), \
         as % of the rate — retransmissions and headers included; below 100% the link sat \
         idle. Mean frame: those bytes per wire packet (1514 = full segments; a GSO packet \
         counts as its segments). Machine CPU: how busy both CPUs were together over that \
         interval (/proc/stat), the kernel's packet work and both probes included."
            .into(),
    ]
}

/// Judged for each congestion control separately: the target holds if it holds for one flow
/// of each.
fn verdict(points: &[Point]) -> Verdict {
    // In the order measured: the default first.
    let mut algorithms: Vec<&str> = Vec::new();
    for p in points {
        if !algorithms.contains(&p.result.congestion_control.as_str()) {
            algorithms.push(&p.result.congestion_control);
        }
    }
    let mut misses = Vec::new();
    let mut notes = Vec::new();
    for algorithm in algorithms {
        let mine: Vec<&Point> = points
            .iter()
            .filter(|p| !p.tbf && p.result.congestion_control == algorithm)
            .collect();
        misses.extend(
            mine.iter()
                .filter(|p| p.rate_mbit <= TARGET_UP_TO_MBIT)
                .filter(|p| !(TARGET_LOW..=TARGET_HIGH).contains(&p.percent()))
                .map(|p| {
                    format!(
                        "{algorithm} at {} Mbit/s gives {:.1}%",
                        p.rate_mbit,
                        p.percent()
                    )
                }),
        );
        notes.push(match mine.iter().find(|p| p.percent() < TARGET_LOW) {
            Some(p) => format!(
                "{algorithm} falls below {TARGET_LOW}% at {} Mbit/s ({:.1}%)",
                p.rate_mbit,
                p.percent()
            ),
            None => format!(
                "{algorithm} stays at or above {TARGET_LOW}% up to {} Mbit/s",
                mine.last().map_or(0, |p| p.rate_mbit)
            ),
        });
    }
    if let Some(p) = points
        .iter()
        .find(|p| !p.tbf && p.rate_mbit == 1000 && p.result.congestion_control == LOSS_BASED)
    {
        if p.percent() < GIGABIT_TARGET {
            misses.push(format!(
                "{LOSS_BASED} at 1 Gbit/s gives {:.1}%, under {GIGABIT_TARGET}%",
                p.percent()
            ));
        }
    }
    let notes = notes.join("; ");
    if misses.is_empty() {
        Verdict::Met(format!(
            "every rate up to {TARGET_UP_TO_MBIT} Mbit/s is within {TARGET_LOW}–{TARGET_HIGH}%; {notes}"
        ))
    } else {
        Verdict::Missed(format!("{}; {notes}", misses.join("; ")))
    }
}
