//! `bench jitter`: delay 20 ms with 5 ms of jitter on one link direction, for each of netem's
//! distributions; the measured RTT spread against the spread netem's tables imply.

use super::lab::{chain, BenchLab};
use super::stats::{implied_jitter, stdev_sampling_halfwidth, JitterMoments};
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::Result;
use crate::probe::{stdev, RttReport};
use crate::table::{num, Table};
use netem::shaper::{LinkShaper, Verdict as ShaperVerdict};
use netem::{Distribution, Impairments};

const LAB: &str = "bench-jitter";
const DELAY_MS: f64 = 20.0;
const JITTER_MS: f64 = 5.0;
const INTERVAL: &str = "2ms";

/// Frame bytes of an echo (64-byte UDP payload); only a rate would make it matter.
const ECHO_FRAME_BYTES: u32 = 64 + 8 + 20 + 14;

/// How far the measured stdev may stray from the implied one, relative, at least (wider when
/// the sample's own 95% range is wider).
const TOLERANCE: f64 = 0.05;

struct Point {
    distribution: Distribution,
    implied: JitterMoments,
    /// The stdev of the delays the shaper's model draws with this run's seed; `None` without
    /// a shaper (the kernel's random numbers cannot be replayed).
    model_stdev: Option<f64>,
    report: RttReport,
}

impl Point {
    /// The allowed relative deviation: `TOLERANCE` or the sampling range, whichever is wider.
    fn tolerance(&self) -> f64 {
        stdev_sampling_halfwidth(self.implied.kurtosis, self.report.received as usize)
            .max(TOLERANCE)
    }

    /// Measured stdev / implied stdev.
    fn ratio(&self) -> Option<f64> {
        self.report.rtt_ms.map(|s| s.stdev / self.implied.stdev)
    }
}

pub fn run(options: &BenchOptions) -> Result<Report> {
    let count: usize = if options.quick { 200 } else { 5000 };
    let mut points = Vec::new();
    for distribution in Distribution::ALL {
        points.push(measure(distribution, count, options)?);
    }
    Ok(Report {
        name: "jitter",
        title: "RTT spread vs the spread netem's distribution tables imply".into(),
        setup: setup(count),
        table: table(&points),
        target: format!(
            "measured RTT σ within ±{:.0}% of the implied σ, or within the 95% sampling range \
             where that is wider, for every distribution (the issue gives no number).",
            TOLERANCE * 100.0
        ),
        verdict: verdict(&points),
    })
}

/// `count` pings across a link jittered with `distribution`, with the spread the model gives.
fn measure(distribution: Distribution, count: usize, options: &BenchOptions) -> Result<Point> {
    progress(format!("jitter: {}, {count} pings", distribution.name()));
    let core = format!(
        "from.server = {{ delay = \"{DELAY_MS}ms\", jitter = \"{JITTER_MS}ms\", distribution = \"{}\" }}",
        distribution.name()
    );
    let lab = BenchLab::up(&chain(LAB, "", &core), options)?;
    let report = lab.client_rtt(count as u64, INTERVAL, false)?;
    let model_stdev = lab
        .shaper_seed("router-server", "server")
        .and_then(|seed| replay_stdev(distribution, seed, report.sent));
    lab.down()?;
    Ok(Point {
        distribution,
        implied: implied_jitter(distribution, JITTER_MS),
        model_stdev,
        report,
    })
}

fn table(points: &[Point]) -> Table {
    let mut table = Table::new(&[
        "distribution",
        "replies",
        "implied mean RTT (ms)",
        "measured mean RTT (ms)",
        "implied σ (ms)",
        "measured RTT σ (ms)",
        "measured / implied",
        "95% sampling range",
        "model σ, same seed (ms)",
        "measured / model",
    ]);
    for p in points {
        let summary = p.report.rtt_ms;
        let range = stdev_sampling_halfwidth(p.implied.kurtosis, p.report.received as usize);
        table.push(vec![
            p.distribution.name().to_string(),
            format!("{}/{}", p.report.received, p.report.sent),
            format!("{:.3}", DELAY_MS + p.implied.mean),
            num(summary.map(|s| s.mean), 3),
            format!("{:.3}", p.implied.stdev),
            num(summary.map(|s| s.stdev), 3),
            num(p.ratio(), 3),
            format!("±{:.1}%", range * 100.0),
            num(p.model_stdev, 3),
            num(
                summary.zip(p.model_stdev).map(|(s, model)| s.stdev / model),
                3,
            ),
        ]);
    }
    table
}

fn verdict(points: &[Point]) -> Verdict {
    let misses: Vec<String> = points
        .iter()
        .filter(|p| p.ratio().is_none_or(|r| (r - 1.0).abs() > p.tolerance()))
        .map(|p| {
            format!(
                "{}: measured σ {} ms vs {:.3} ms implied (allowed ±{:.1}%)",
                p.distribution.name(),
                num(p.report.rtt_ms.map(|s| s.stdev), 3),
                p.implied.stdev,
                p.tolerance() * 100.0
            )
        })
        .collect();
    let worst = points
        .iter()
        .filter_map(|p| p.ratio().map(|r| (r - 1.0).abs()))
        .fold(0.0, f64::max);
    if misses.is_empty() {
        Verdict::Met(format!(
            "the largest deviation is {:.1}% of the implied σ",
            worst * 100.0
        ))
    } else {
        Verdict::Missed(misses.join("; "))
    }
}

fn setup(count: usize) -> Vec<String> {
    vec![
        format!(
            "Path client — router — server; only the server → router direction is \
             impaired: delay {DELAY_MS} ms, jitter {JITTER_MS} ms, no correlation. The RTT's \
             spread is that direction's delay spread (the rest of the path adds µs)."
        ),
        format!(
            "`probe rtt`: {count} UDP echoes, one every {INTERVAL}. Implied σ and mean are \
             computed from the same 4096-entry tables tc loads (netem::distribution), so \
             the clamping at ±4σ and the Pareto tables' skew are included; uniform is \
             σ/√3."
        ),
        "95% sampling range: how far a sample stdev of this many draws from the table \
         strays from the table's own, by the delta method (Var s ≈ σ²(κ−1)/4n)."
            .into(),
        "Model σ, same seed: the stdev of the delays netem's model (netem::shaper) draws \
         for as many packets with the seed this run's queue had — the delays this very run \
         should have applied, so measured / model is the emulation's own error, free of \
         sampling (— on the kernel backend, whose random numbers cannot be replayed)."
            .into(),
    ]
}

/// The stdev, in ms, of the delays `netem::shaper::LinkShaper` gives `count` packets with
/// `seed`: the echo direction's impairments replayed. Without a rate the draws do not depend on
/// arrival times, only on their order, so any spacing replays the run.
fn replay_stdev(distribution: Distribution, seed: u64, count: u64) -> Option<f64> {
    let mut shaper = LinkShaper::new(impairments(distribution), seed);
    let delays: Vec<f64> = (0..count)
        .filter_map(|i| {
            let now = i * 2_000_000;
            match shaper.enqueue(now, ECHO_FRAME_BYTES) {
                ShaperVerdict::SendAt(at) => Some((at as f64 - now as f64) / 1e6),
                ShaperVerdict::Drop(_) => None,
            }
        })
        .collect();
    stdev(&delays)
}

/// The impaired direction's impairments, as the topology text sets them.
fn impairments(distribution: Distribution) -> Impairments {
    Impairments {
        delay_ns: (DELAY_MS * 1e6) as u64,
        jitter_ns: (JITTER_MS * 1e6) as u64,
        distribution: Some(distribution),
        ..Impairments::default()
    }
}
