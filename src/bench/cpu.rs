//! `bench cpu`: what the userspace shaper costs — its CPU time (from /proc) while one TCP flow
//! crosses an emulated link, in cores per 100 Mbit/s forwarded.

use super::rate::{core_link, flow, limit_for};
use super::sample::Steady;
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::links::choose_backend;
use crate::lab::{Backend, Error, Result};
use crate::table::{num, Table};

const LAB: &str = "bench-cpu";

/// Configured rates, Mbit/s; `None` is no rate limit (delay only).
const RATES_MBIT: [Option<u64>; 4] = [Some(100), Some(500), Some(1000), None];

/// Queue limit without a rate: room for the packets held for the delay at several Gbit/s, so
/// the limit is not what caps the flow.
const UNLIMITED_LIMIT: u32 = 10_000;

/// The target: shaper cores per 100 Mbit/s of goodput.
const TARGET_CORES_PER_100: f64 = 0.10;

struct Point {
    rate_mbit: Option<u64>,
    congestion_control: String,
    goodput_mbps: f64,
    /// The shaper over the same interval as its traffic counters.
    steady: Steady,
}

impl Point {
    /// Cores per 100 Mbit/s the link forwarded (frames, as the rate counts them) over the
    /// sampled interval: CPU and traffic are counted over the same seconds.
    fn per_100(&self) -> f64 {
        let mbps = self.steady.link_mbps();
        if mbps > 0.0 {
            self.steady.shaper_cores / (mbps / 100.0)
        } else {
            f64::INFINITY
        }
    }

    /// CPU µs per data packet (its ACKs, about one per two, ride along in the cost).
    fn us_per_packet(&self) -> Option<f64> {
        (self.steady.data_packets > 0).then(|| {
            self.steady.shaper_cores * self.steady.seconds * 1e6 / self.steady.data_packets as f64
        })
    }
}

pub fn run(options: &BenchOptions) -> Result<Report> {
    let title = "CPU of the userspace shaper".to_string();
    let target = format!("≤ {TARGET_CORES_PER_100} cores per 100 Mbit/s forwarded.");
    if choose_backend(options.link_backend)? == Backend::Kernel {
        return Ok(Report {
            name: "cpu",
            title,
            setup: vec!["The kernel backend runs no shaper daemon.".into()],
            table: Table::new(&["rate"]),
            target,
            verdict: Verdict::NotApplicable(
                "links are emulated by tc-netem in the kernel; rerun with --link-backend \
                 userspace to measure the shaper"
                    .into(),
            ),
        });
    }
    let (seconds, warmup) = if options.quick {
        (3.0, 1.0)
    } else {
        (10.0, 2.0)
    };
    let mut points = Vec::new();
    for rate_mbit in RATES_MBIT {
        points.push(measure(rate_mbit, seconds, warmup, options)?);
    }
    Ok(Report {
        name: "cpu",
        title,
        setup: setup(seconds, warmup),
        table: table(&points),
        target,
        verdict: verdict(&points),
    })
}

/// One flow through a link of `rate_mbit`, with the shaper's CPU over its steady part.
fn measure(
    rate_mbit: Option<u64>,
    seconds: f64,
    warmup: f64,
    options: &BenchOptions,
) -> Result<Point> {
    let rate_bps = rate_mbit.map(|r| r * 1_000_000);
    let limit = rate_bps.map_or(UNLIMITED_LIMIT, limit_for);
    progress(format!(
        "cpu: {}, {seconds} s",
        rate_mbit.map_or("no rate limit".to_string(), |r| format!("{r} Mbit/s"))
    ));
    let result = flow(
        LAB,
        &core_link(rate_bps, limit),
        seconds,
        warmup,
        None,
        None,
        options,
    )?;
    let steady = result
        .steady
        .ok_or_else(|| Error("the lab runs no shaper (not the userspace backend?)".into()))?;
    Ok(Point {
        rate_mbit,
        congestion_control: result.congestion_control.clone(),
        goodput_mbps: result.goodput.goodput_mbps,
        steady,
    })
}

fn table(points: &[Point]) -> Table {
    let mut table = Table::new(&[
        "rate",
        "sender's TCP",
        "goodput (Mbit/s)",
        "link carried (Mbit/s)",
        "data packets/s",
        "queue entries/s",
        "shaper timer wake-ups/s",
        "shaper sleeps/s",
        "shaper CPU (cores)",
        "of which keeper (cores)",
        "keeper wake-ups / skipped per s",
        "cores per 100 Mbit/s",
        "CPU per data packet (µs)",
        "machine CPU (cores)",
    ]);
    for p in points {
        table.push(vec![
            p.rate_mbit
                .map_or("unlimited (delay only)".to_string(), |r| {
                    format!("{r} Mbit/s")
                }),
            p.congestion_control.clone(),
            num(Some(p.goodput_mbps), 1),
            num(Some(p.steady.link_mbps()), 1),
            format!("{:.0}", p.steady.data_packets as f64 / p.steady.seconds),
            format!("{:.0}", p.steady.data_units as f64 / p.steady.seconds),
            format!("{:.0}", p.steady.timer_wakeups as f64 / p.steady.seconds),
            format!("{:.0}", p.steady.sleeps as f64 / p.steady.seconds),
            num(Some(p.steady.shaper_cores), 3),
            num(p.steady.keeper.map(|k| k.cores), 4),
            p.steady.keeper.map_or("—".to_string(), |k| {
                format!(
                    "{:.0} / {:.0}",
                    k.wakeups as f64 / p.steady.seconds,
                    k.skipped as f64 / p.steady.seconds
                )
            }),
            num(Some(p.per_100()), 3),
            num(p.us_per_packet(), 1),
            num(Some(p.steady.machine_cores), 2),
        ]);
    }
    table
}

fn verdict(points: &[Point]) -> Verdict {
    let misses: Vec<String> = points
        .iter()
        .filter(|p| p.per_100() > TARGET_CORES_PER_100)
        .map(|p| {
            format!(
                "{}: {:.3} cores per 100 Mbit/s ({:.3} cores at {:.1} Mbit/s)",
                p.rate_mbit
                    .map_or("unlimited".to_string(), |r| format!("{r} Mbit/s")),
                p.per_100(),
                p.steady.shaper_cores,
                p.steady.link_mbps()
            )
        })
        .collect();
    let worst = points.iter().map(Point::per_100).fold(0.0, f64::max);
    if misses.is_empty() {
        Verdict::Met(format!("at most {worst:.3} cores per 100 Mbit/s"))
    } else {
        Verdict::Missed(misses.join("; "))
    }
}

fn setup(seconds: f64, warmup: f64) -> Vec<String> {
    vec![
        "Path client — router — server; the router—server link has 20 ms of delay each way \
         and the rate (queue limit as in `rate`; 10000 packets without a rate). Both \
         directions of that link pass through the shaper: data one way, ACKs the other."
            .into(),
        format!(
            "One `probe goodput` download (the namespace's default congestion control), \
             {warmup} s warmup then {seconds} s measured. From \
             1 s after the warmup until 0.5 s before the end, the shaper's utime + stime \
             (/proc/PID/stat, all threads) and its count of frame bytes on the data's \
             direction are sampled; cores per 100 Mbit/s divides the one by the other \
             (Mbit/s of Ethernet frames, as the rate counts them). Data packets are wire \
             packets; queue entries count a GSO packet (taken whole on loss-free queues) \
             once. Sleeps: the voluntary context switches of the shaper's event loop \
             (/proc/PID/status), each a wake-up for a departure or an arrival. Keeper: the \
             shaper's thread that wakes its CPU before long timer waits \
             end, by its own thread clock (a part of the shaper's CPU), with its wake-ups \
             and those its spent budget skipped. Machine CPU: both CPUs' busy time together \
             (/proc/stat), the kernel's forwarding and both probes included. TCP buffer \
             maxima raised as in `rate`."
        ),
    ]
}
