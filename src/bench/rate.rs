//! `bench rate`: one TCP flow's goodput through a rate-limited link, against the rate and
//! against the most TCP can carry through a netem rate (which counts whole Ethernet frames).

use super::lab::{chain, BenchLab, PORT};
use super::stats::{bdp_packets, TCP_CEILING};
use super::table::{num, Table};
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::Result;
use crate::probe::GoodputReport;
use netem::daemon::Response;
use netem::units::format_rate_bps;

const LAB: &str = "bench-rate";

/// Configured rates, Mbit/s.
const RATES_MBIT: [u64; 5] = [1, 5, 20, 100, 500];

/// Round-trip time of the path: 20 ms each way on the rate-limited link.
const RTT_NS: u64 = 40_000_000;

/// The target band (% of the rate), required from 1 to `TARGET_UP_TO_MBIT`.
const TARGET_LOW: f64 = 93.0;
const TARGET_HIGH: f64 = 100.0;
const TARGET_UP_TO_MBIT: u64 = 100;

/// The smallest queue limit used, packets: a few frames of slack on the slowest links.
const MIN_LIMIT: u32 = 30;

/// A flow's measurement and what the shaper saw meanwhile.
pub struct FlowResult {
    pub goodput: GoodputReport,
    /// Packets the shaper dropped at the queue limit, over all queues; `None` on the kernel
    /// backend.
    pub queue_drops: Option<u64>,
    /// Times the kernel dropped queued packets because the shaper did not read them in time.
    pub overruns: Option<u64>,
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
/// `warmup`. `during` runs while the flow is running (the CPU benchmark samples there).
pub fn flow<T>(
    lab_name: &str,
    core: &str,
    seconds: f64,
    warmup_s: f64,
    options: &BenchOptions,
    during: impl FnOnce(&BenchLab) -> Result<T>,
) -> Result<(FlowResult, T)> {
    let lab = BenchLab::up(&chain(lab_name, "", core), options)?;
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
    let extra = during(&lab)?;
    let goodput: GoodputReport = running.finish()?;
    let status = lab.shaper_status()?;
    lab.down()?;
    Ok((
        FlowResult {
            goodput,
            queue_drops: status.as_ref().and_then(queue_drops),
            overruns: status
                .as_ref()
                .and_then(|r| r.daemon.as_ref())
                .map(|d| d.overruns),
        },
        extra,
    ))
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
    result: FlowResult,
}

impl Point {
    fn percent(&self) -> f64 {
        self.result.goodput.goodput_mbps / self.rate_mbit as f64 * 100.0
    }
}

pub fn run(options: &BenchOptions) -> Result<Report> {
    let (seconds, warmup) = if options.quick {
        (2.0, 1.0)
    } else {
        (10.0, 2.0)
    };
    let mut points = Vec::new();
    for rate_mbit in RATES_MBIT {
        let rate_bps = rate_mbit * 1_000_000;
        let limit = limit_for(rate_bps);
        progress(format!(
            "rate: {rate_mbit} Mbit/s, limit {limit}, {seconds} s"
        ));
        let (result, ()) = flow(
            LAB,
            &core_link(Some(rate_bps), limit),
            seconds,
            warmup,
            options,
            |_| Ok(()),
        )?;
        points.push(Point {
            rate_mbit,
            limit,
            result,
        });
    }
    let mut table = Table::new(&[
        "rate",
        "BDP (frames)",
        "limit (packets)",
        "goodput (Mbit/s)",
        "% of rate",
        "TCP ceiling",
        "% of ceiling",
        "shaper queue drops",
        "NFQUEUE overruns",
    ]);
    for p in &points {
        let count = |v: Option<u64>| v.map_or("—".to_string(), |n| n.to_string());
        table.push(vec![
            format!("{} Mbit/s", p.rate_mbit),
            format!("{:.1}", bdp_packets(p.rate_mbit * 1_000_000, RTT_NS)),
            p.limit.to_string(),
            num(Some(p.result.goodput.goodput_mbps), 3),
            format!("{:.1}%", p.percent()),
            format!("{:.1}%", TCP_CEILING * 100.0),
            format!("{:.1}%", p.percent() / TCP_CEILING),
            count(p.result.queue_drops),
            count(p.result.overruns),
        ]);
    }
    Ok(Report {
        name: "rate",
        title: "one TCP flow's goodput vs the configured rate".into(),
        setup: vec![
            "Path client — router — server; the router—server link has the rate and 20 ms of \
             delay in each direction (RTT 40 ms), the client—router link nothing."
                .into(),
            format!(
                "Queue limit: 2 × the bandwidth-delay product in 1514-byte frames (at least \
                 {MIN_LIMIT}): netem's limit also counts the packets waiting out the delay."
            ),
            format!(
                "`probe goodput`: one download (server → client, Linux's default congestion \
                 control), {warmup} s of warmup then {seconds} s measured by the receiver."
            ),
            format!(
                "TCP ceiling: 1448 payload bytes per 1514-byte frame = {:.1}% of the rate, \
                 since netem's rate counts Ethernet frames.",
                TCP_CEILING * 100.0
            ),
        ],
        table,
        target: format!(
            "{TARGET_LOW}–{TARGET_HIGH}% of the rate from 1 to {TARGET_UP_TO_MBIT} Mbit/s; \
             report where it falls off."
        ),
        verdict: verdict(&points),
    })
}

fn verdict(points: &[Point]) -> Verdict {
    let misses: Vec<String> = points
        .iter()
        .filter(|p| p.rate_mbit <= TARGET_UP_TO_MBIT)
        .filter(|p| !(TARGET_LOW..=TARGET_HIGH).contains(&p.percent()))
        .map(|p| format!("{} Mbit/s gives {:.1}%", p.rate_mbit, p.percent()))
        .collect();
    let fall_off = points
        .iter()
        .find(|p| p.percent() < TARGET_LOW)
        .map(|p| {
            format!(
                "it falls below {TARGET_LOW}% at {} Mbit/s ({:.1}%, {:.1} Mbit/s)",
                p.rate_mbit,
                p.percent(),
                p.result.goodput.goodput_mbps
            )
        })
        .unwrap_or_else(|| {
            format!(
                "it stays at or above {TARGET_LOW}% up to {} Mbit/s",
                points.last().map_or(0, |p| p.rate_mbit)
            )
        });
    if misses.is_empty() {
        Verdict::Met(format!(
            "every rate up to {TARGET_UP_TO_MBIT} Mbit/s is within {TARGET_LOW}–{TARGET_HIGH}%; {fall_off}"
        ))
    } else {
        Verdict::Missed(format!("{}; {fall_off}", misses.join("; ")))
    }
}
