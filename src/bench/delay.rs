//! `bench delay`: configured vs measured round-trip time on a two-hop path, with the error's
//! median and 99th percentile over many pings.

use super::hog::CpuHog;
use super::lab::{chain, BenchLab};
use super::sample::{read_machine_ticks, ticks_per_second};
use super::stats::median;
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::{Error, Result};
use crate::probe::percentile;
use crate::table::{num, Table};
use netem::daemon::Lateness;
use netem::units::format_duration_ns;

const LAB: &str = "bench-delay";

/// Configured one-way delays, µs (0: the baseline, no impairment at all).
const ONE_WAY_US: [u64; 6] = [0, 1_000, 5_000, 20_000, 50_000, 150_000];

/// The targets for |median error| and p99 error, ms (Mahimahi's resolution is 1 ms): the p99
/// on an idle machine, and with one core kept busy by a CPU hog.
const MEDIAN_TARGET_MS: f64 = 0.2;
const P99_TARGET_MS: f64 = 0.3;
const P99_LOADED_TARGET_MS: f64 = 1.0;

/// Time between pings: gentle enough that pings never queue behind each other.
const INTERVAL: &str = "10ms";

/// What one configured delay gave.
struct Point {
    one_way_us: u64,
    /// Measured with a CPU hog spinning on one core.
    loaded: bool,
    /// Both CPUs' busy time over the pings, cores.
    machine_cores: f64,
    /// Time the host took the VM's CPUs from it over the pings (steal), ms of both together:
    /// a stall no program inside can prevent, which shows in a ping's tail.
    steal_ms: f64,
    /// How long the pings took, s.
    seconds: f64,
    sent: u64,
    received: u64,
    median_rtt_ms: Option<f64>,
    /// Percentiles of measured − configured RTT, ms.
    median_error_ms: Option<f64>,
    p99_error_ms: Option<f64>,
    max_error_ms: Option<f64>,
    /// The shaper's verdict lateness (mean, max) over the run, µs.
    lateness_us: Option<(f64, f64)>,
    /// The shaper's verdicts at least 0.2 ms and at least 0.5 ms late, of all its verdicts.
    late_verdicts: Option<LateVerdicts>,
    /// The shaper's mean timer wake-up lateness over the run, µs.
    wakeup_us: Option<f64>,
    /// CPU the shaper's keeper spent keeping its CPU awake before departures, over the pings,
    /// cores (part of `machine_cores`).
    keep_awake_cores: Option<f64>,
}

/// How many of the shaper's verdicts came late enough to show in a ping's tail.
struct LateVerdicts {
    from_200us: u64,
    from_500us: u64,
    all: u64,
}

impl LateVerdicts {
    /// Reads the counts off the shaper's lateness histogram.
    fn of(lateness: &Lateness) -> LateVerdicts {
        LateVerdicts {
            from_200us: lateness.at_least(200_000).unwrap_or(0),
            from_500us: lateness.at_least(500_000).unwrap_or(0),
            all: lateness.count,
        }
    }
}

pub fn run(options: &BenchOptions) -> Result<Report> {
    let count = if options.quick { 100 } else { 1000 };
    let mut points = Vec::new();
    for loaded in [false, true] {
        for one_way_us in ONE_WAY_US {
            progress(format!(
                "delay: one-way {}, {count} pings{}",
                format_duration_ns(one_way_us * 1000),
                if loaded { ", one core busy" } else { "" }
            ));
            points.push(measure(one_way_us, loaded, count, options)?);
        }
    }
    let mut table = Table::new(&[
        "load",
        "one-way delay",
        "per link (each way)",
        "configured RTT (ms)",
        "replies",
        "median RTT (ms)",
        "median error (ms)",
        "median error − baseline's (ms)",
        "p99 error (ms)",
        "max error (ms)",
        "shaper verdicts late, mean / max (µs)",
        "shaper verdicts ≥ 0.2 ms / ≥ 0.5 ms late",
        "shaper wake-ups late, mean (µs)",
        "keep-awake (cores)",
        "machine CPU (cores)",
        "host steal (ms)",
    ]);
    for p in &points {
        let baseline = baseline_of(&points, p.loaded);
        let above_baseline = match (p.one_way_us, p.median_error_ms, baseline) {
            (0, _, _) => None,
            (_, Some(error), Some(floor)) => Some(error - floor),
            _ => None,
        };
        table.push(vec![
            if p.loaded { "one core busy" } else { "idle" }.to_string(),
            if p.one_way_us == 0 {
                "0 (baseline)".to_string()
            } else {
                format_duration_ns(p.one_way_us * 1000)
            },
            if p.one_way_us == 0 {
                "none".to_string()
            } else {
                format_duration_ns(p.one_way_us * 1000 / 2)
            },
            format!("{}", 2.0 * p.one_way_us as f64 / 1000.0),
            format!("{}/{}", p.received, p.sent),
            num(p.median_rtt_ms, 3),
            num(p.median_error_ms, 3),
            num(above_baseline, 3),
            num(p.p99_error_ms, 3),
            num(p.max_error_ms, 3),
            p.lateness_us
                .map(|(mean, max)| format!("{mean:.0} / {max:.0}"))
                .unwrap_or_else(|| "—".to_string()),
            p.late_verdicts
                .as_ref()
                .map(|v| format!("{} / {} of {}", v.from_200us, v.from_500us, v.all))
                .unwrap_or_else(|| "—".to_string()),
            num(p.wakeup_us, 0),
            num(p.keep_awake_cores, 2),
            format!("{:.2}", p.machine_cores),
            format!("{:.0}", p.steal_ms),
        ]);
    }
    Ok(Report {
        name: "delay",
        title: "configured vs measured round-trip time".into(),
        setup: vec![
            "Path client — router — server; each link carries half the one-way delay in each \
             direction, so a ping crosses four emulated link directions."
                .into(),
            format!(
                "`probe rtt`: {count} UDP echoes of 64 bytes, one every {INTERVAL}; error = \
                 measured RTT − 2 × one-way delay. Like `ping`, the probe times a reply by \
                 the kernel's receive stamp, and the echo server reports how long it held each \
                 ping (its stamp to its reply), which the client takes out: neither end's \
                 wake-up is counted as the path's. The baseline row has no impairment: it is \
                 the floor of the measurement itself (veths, the send calls); the column after \
                 the median error takes that floor out, leaving what the emulation adds."
            ),
            "Shaper verdicts late: how long after a packet's departure time the userspace \
             shaper released it, by the shaper's clock (mean / max over every verdict of the \
             run; — without a shaper). Shaper wake-ups late: how long after its timer was due \
             the shaper's event loop ran; arrivals are timed by the kernel's receive stamp, so \
             this lateness delays only the verdicts' timers, which the shaper arms early by it. \
             Verdicts ≥ 0.2 ms late: of all verdicts of the run (four per ping), those late \
             enough to put a ping in the p99 tail by themselves. Keep-awake: the CPU time of \
             the shaper's thread that wakes its CPU before long waits, over the pings (its own \
             thread clock)."
                .into(),
            "Load: idle, then again with one core busy: a thread of the benchmark spinning at \
             normal priority beside the lab for the whole run (the shaper runs at SCHED_FIFO \
             priority, the echo client and server at normal priority: their wake-ups are taken \
             out, but a ping's send can still wait for the hog, which the baseline row of each \
             load shows). Machine \
             CPU: both CPUs' busy time together over the pings (/proc/stat; sampled at the \
             kernel's ticks, so short bursts such as the keeper's wake-ups are counted \
             unevenly). Host steal: the time, over the pings, that a VM's host ran something \
             else while one of its CPUs had work (/proc/stat's steal, both CPUs together, in \
             the kernel's 10 ms ticks, and part of machine CPU; 0 on bare metal): a stall the \
             shaper cannot prevent, which may show in the tail."
                .into(),
        ],
        table,
        target: format!(
            "|median error| ≤ {MEDIAN_TARGET_MS} ms at every configured delay; p99 error ≤ \
             {P99_TARGET_MS} ms idle and ≤ {P99_LOADED_TARGET_MS} ms with one core busy \
             (Mahimahi's resolution is 1 ms)."
        ),
        verdict: verdict(&points),
    })
}

/// The median error of the baseline (no impairment) under the same load.
fn baseline_of(points: &[Point], loaded: bool) -> Option<f64> {
    points
        .iter()
        .find(|p| p.one_way_us == 0 && p.loaded == loaded)
        .and_then(|p| p.median_error_ms)
}

fn measure(one_way_us: u64, loaded: bool, count: u64, options: &BenchOptions) -> Result<Point> {
    let link = if one_way_us == 0 {
        String::new()
    } else {
        format!("delay = \"{}\"", format_duration_ns(one_way_us * 1000 / 2))
    };
    let lab = BenchLab::up(&chain(LAB, &link, &link), options)?;
    let hog = loaded.then(CpuHog::start);
    let (ticks_start, started) = (read_machine_ticks()?, std::time::Instant::now());
    let report = lab.client_rtt(count, INTERVAL, true)?;
    let seconds = started.elapsed().as_secs_f64();
    let ticks = ticks_start.until(read_machine_ticks()?);
    let hz = ticks_per_second()?;
    let machine_cores = ticks.busy as f64 / hz / seconds;
    let steal_ms = ticks.steal as f64 / hz * 1e3;
    drop(hog);
    let daemon = lab.shaper_status()?.and_then(|r| r.daemon);
    let lateness_us = daemon
        .as_ref()
        .filter(|d| d.verdict_lateness.count > 0)
        .map(|d| {
            (
                d.verdict_lateness.mean_ns as f64 / 1e3,
                d.verdict_lateness.max_late_ns as f64 / 1e3,
            )
        });
    let late_verdicts = daemon
        .as_ref()
        .filter(|d| d.verdict_lateness.count > 0)
        .map(|d| LateVerdicts::of(&d.verdict_lateness));
    let wakeup_us = daemon
        .as_ref()
        .filter(|d| d.wakeup_lateness.count > 0)
        .map(|d| d.wakeup_lateness.mean_ns as f64 / 1e3);
    // Over the lab's life, but before the first ping nothing is held and the keeper sleeps.
    let keep_awake_cores = daemon
        .as_ref()
        .and_then(|d| d.keeper.as_ref())
        .map(|k| k.cpu_ns as f64 / 1e9 / seconds);
    lab.down()?;
    let samples = report
        .samples_ms
        .ok_or_else(|| Error("probe rtt --samples printed no samples".into()))?;
    let configured_ms = 2.0 * one_way_us as f64 / 1000.0;
    let mut rtts: Vec<f64> = samples.into_iter().flatten().collect();
    rtts.sort_by(f64::total_cmp);
    let errors: Vec<f64> = rtts.iter().map(|rtt| rtt - configured_ms).collect();
    Ok(Point {
        one_way_us,
        loaded,
        machine_cores,
        steal_ms,
        seconds,
        sent: report.sent,
        received: report.received,
        median_rtt_ms: median(&rtts),
        median_error_ms: percentile(&errors, 50.0),
        p99_error_ms: percentile(&errors, 99.0),
        max_error_ms: errors.last().copied(),
        lateness_us,
        late_verdicts,
        wakeup_us,
        keep_awake_cores,
    })
}

fn verdict(points: &[Point]) -> Verdict {
    let mut misses = Vec::new();
    for p in points.iter().filter(|p| p.one_way_us > 0) {
        let name = format!(
            "{}{}",
            format_duration_ns(p.one_way_us * 1000),
            if p.loaded { " (one core busy)" } else { "" }
        );
        let p99_target = if p.loaded {
            P99_LOADED_TARGET_MS
        } else {
            P99_TARGET_MS
        };
        // A miss names the host's steal during it, which the reader may want to rerun past.
        let steal = if p.steal_ms > 0.0 {
            format!(
                " (host steal {:.0} ms in its {:.0} s)",
                p.steal_ms, p.seconds
            )
        } else {
            String::new()
        };
        match (p.median_error_ms, p.p99_error_ms) {
            (Some(median), Some(p99)) => {
                if median.abs() > MEDIAN_TARGET_MS {
                    misses.push(format!("{name}: median error {median:.3} ms{steal}"));
                }
                if p99 > p99_target {
                    misses.push(format!("{name}: p99 error {p99:.3} ms{steal}"));
                }
            }
            _ => misses.push(format!("{name}: no replies")),
        }
    }
    let worst = |loaded: bool, f: fn(&Point) -> Option<f64>| {
        points
            .iter()
            .filter(|p| p.one_way_us > 0 && p.loaded == loaded)
            .filter_map(f)
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let floor = format!(
        "the measurement's own floor (baseline median) is {} ms idle, {} ms with one core busy",
        num(baseline_of(points, false), 3),
        num(baseline_of(points, true), 3)
    );
    let summary = format!(
        "worst |median error| {:.3} ms idle, {:.3} ms loaded; worst p99 error {:.3} ms idle, \
         {:.3} ms loaded; {floor}",
        worst(false, |p| p.median_error_ms.map(f64::abs)),
        worst(true, |p| p.median_error_ms.map(f64::abs)),
        worst(false, |p| p.p99_error_ms),
        worst(true, |p| p.p99_error_ms)
    );
    if misses.is_empty() {
        Verdict::Met(summary)
    } else {
        Verdict::Missed(format!("{}; {summary}", misses.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(one_way_us: u64, p99_error_ms: f64, steal_ms: f64) -> Point {
        Point {
            one_way_us,
            loaded: false,
            machine_cores: 0.0,
            steal_ms,
            seconds: 10.0,
            sent: 1000,
            received: 1000,
            median_rtt_ms: Some(2.0 * one_way_us as f64 / 1000.0),
            median_error_ms: Some(0.05),
            p99_error_ms: Some(p99_error_ms),
            max_error_ms: Some(p99_error_ms),
            lateness_us: None,
            late_verdicts: None,
            wakeup_us: None,
            keep_awake_cores: None,
        }
    }

    #[test]
    fn a_miss_names_the_hosts_steal_during_it() {
        let points = [
            point(0, 0.07, 0.0),
            point(1000, 0.2, 30.0),
            point(5000, 4.4, 160.0),
            point(20_000, 0.5, 0.0),
        ];
        let Verdict::Missed(text) = verdict(&points) else {
            panic!("two rows miss their p99 target");
        };
        assert!(
            text.contains("5ms: p99 error 4.400 ms (host steal 160 ms in its 10 s)"),
            "{text}"
        );
        assert!(text.contains("20ms: p99 error 0.500 ms;"), "{text}");
        assert!(!text.contains("1ms"), "a row within its target: {text}");
    }
}
