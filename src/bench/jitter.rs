//! `bench jitter`: delay 20 ms with 5 ms of jitter on one link direction, for each of netem's
//! distributions; the measured RTT spread against the spread netem's tables imply.

use super::lab::{chain, BenchLab, PORT};
use super::stats::{implied_jitter, stdev_sampling_halfwidth, JitterMoments};
use super::table::{num, Table};
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::Result;
use crate::probe::RttReport;
use netem::Distribution;

const LAB: &str = "bench-jitter";
const DELAY_MS: f64 = 20.0;
const JITTER_MS: f64 = 5.0;
const INTERVAL: &str = "2ms";

/// How far the measured stdev may stray from the implied one, relative, at least (wider when
/// the sample's own 95% range is wider).
const TOLERANCE: f64 = 0.05;

struct Point {
    distribution: Distribution,
    implied: JitterMoments,
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
        progress(format!("jitter: {}, {count} pings", distribution.name()));
        let core = format!(
            "from.server = {{ delay = \"{DELAY_MS}ms\", jitter = \"{JITTER_MS}ms\", distribution = \"{}\" }}",
            distribution.name()
        );
        let lab = BenchLab::up(&chain(LAB, "", &core), options)?;
        let target = format!("server:{PORT}");
        let count_text = count.to_string();
        let report: RttReport = lab.probe(
            "client",
            &[
                "rtt",
                "--target",
                &target,
                "--count",
                &count_text,
                "--interval",
                INTERVAL,
            ],
        )?;
        lab.down()?;
        points.push(Point {
            distribution,
            implied: implied_jitter(distribution, JITTER_MS),
            report,
        });
    }
    let mut table = Table::new(&[
        "distribution",
        "replies",
        "implied mean RTT (ms)",
        "measured mean RTT (ms)",
        "implied σ (ms)",
        "measured RTT σ (ms)",
        "measured / implied",
        "95% sampling range",
    ]);
    for p in &points {
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
        ]);
    }
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
    Ok(Report {
        name: "jitter",
        title: "RTT spread vs the spread netem's distribution tables imply".into(),
        setup: vec![
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
        ],
        table,
        target: format!(
            "measured RTT σ within ±{:.0}% of the implied σ, or within the 95% sampling range \
             where that is wider, for every distribution (the issue gives no number).",
            TOLERANCE * 100.0
        ),
        verdict: if misses.is_empty() {
            Verdict::Met(format!(
                "the largest deviation is {:.1}% of the implied σ",
                worst * 100.0
            ))
        } else {
            Verdict::Missed(misses.join("; "))
        },
    })
}
