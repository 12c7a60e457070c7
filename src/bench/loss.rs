//! `bench loss`: random loss on one link direction, measured over a paced stream, with a 95%
//! confidence interval for the measured rate.

use super::lab::{chain, BenchLab, PORT};
use super::stats::{wilson_interval, Z95};
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::Result;
use crate::probe::StreamReport;
use crate::table::Table;
use netem::units::format_percent;

const LAB: &str = "bench-loss";

/// Configured loss probabilities (0: the baseline, no impairment).
const LOSSES: [f64; 4] = [0.0, 0.001, 0.01, 0.1];

/// Datagrams per second of the stream.
const RATE_PPS: u32 = 5000;

struct Point {
    loss: f64,
    report: StreamReport,
    /// The shaper's own count of packets it dropped for loss; `None` on the kernel backend.
    shaper_dropped: Option<u64>,
}

impl Point {
    fn lost(&self) -> u64 {
        self.report.sent.saturating_sub(self.report.received)
    }

    fn interval(&self) -> Option<(f64, f64)> {
        wilson_interval(self.lost(), self.report.sent, Z95)
    }

    /// True when the configured probability lies inside the measured interval.
    fn consistent(&self) -> bool {
        self.interval()
            .is_some_and(|(low, high)| (low..=high).contains(&self.loss))
    }
}

pub fn run(options: &BenchOptions) -> Result<Report> {
    let count: u64 = if options.quick { 2_000 } else { 50_000 };
    let mut points = Vec::new();
    for loss in LOSSES {
        points.push(measure(loss, count, options)?);
    }
    Ok(Report {
        name: "loss",
        title: "configured vs measured random loss".into(),
        setup: setup(count),
        table: table(&points),
        target: "the configured loss lies inside the 95% confidence interval of the measured \
                 loss, at every setting including the baseline (0%)."
            .into(),
        verdict: verdict(&points),
    })
}

/// `count` echoed datagrams across a link that loses `loss` of them.
fn measure(loss: f64, count: u64, options: &BenchOptions) -> Result<Point> {
    progress(format!(
        "loss: {}, {count} datagrams at {RATE_PPS}/s",
        format_percent(loss)
    ));
    let core = if loss > 0.0 {
        format!("from.server = {{ loss = \"{}\" }}", format_percent(loss))
    } else {
        String::new()
    };
    let lab = BenchLab::up(&chain(LAB, "", &core), options)?;
    let target = format!("server:{PORT}");
    let count_text = count.to_string();
    let rate_text = RATE_PPS.to_string();
    let report: StreamReport = lab.probe(
        "client",
        &[
            "stream",
            "--target",
            &target,
            "--count",
            &count_text,
            "--rate-pps",
            &rate_text,
        ],
    )?;
    let shaper_dropped = lab.shaper_status()?.and_then(|r| {
        r.queues
            .map(|queues| queues.iter().map(|q| q.stats.dropped_loss).sum())
    });
    lab.down()?;
    Ok(Point {
        loss,
        report,
        shaper_dropped,
    })
}

fn table(points: &[Point]) -> Table {
    let mut table = Table::new(&[
        "configured",
        "sent",
        "lost",
        "measured",
        "95% CI",
        "configured in CI",
        "shaper's loss drops",
        "achieved rate (pkt/s)",
    ]);
    for p in points {
        let percent = |x: f64| format!("{:.3}%", x * 100.0);
        table.push(vec![
            if p.loss == 0.0 {
                "0 (baseline)".to_string()
            } else {
                format_percent(p.loss)
            },
            p.report.sent.to_string(),
            p.lost().to_string(),
            percent(p.report.loss_rate),
            p.interval()
                .map(|(low, high)| format!("{} – {}", percent(low), percent(high)))
                .unwrap_or_else(|| "—".to_string()),
            if p.consistent() { "yes" } else { "no" }.to_string(),
            p.shaper_dropped.map_or("—".to_string(), |n| n.to_string()),
            format!("{:.0}", p.report.achieved_pps),
        ]);
    }
    table
}

fn verdict(points: &[Point]) -> Verdict {
    let misses: Vec<String> = points
        .iter()
        .filter(|p| !p.consistent())
        .map(|p| {
            format!(
                "{}: measured {:.3}% ({} of {})",
                format_percent(p.loss),
                p.report.loss_rate * 100.0,
                p.lost(),
                p.report.sent
            )
        })
        .collect();
    if misses.is_empty() {
        Verdict::Met("every configured value lies inside its interval".into())
    } else {
        Verdict::Missed(misses.join("; "))
    }
}

fn setup(count: u64) -> Vec<String> {
    vec![
        "Path client — router — server; only the server → router direction (the echoes) \
         has loss, so round-trip loss is that direction's loss."
            .into(),
        format!(
            "`probe stream`: {count} UDP datagrams of 200 bytes at {RATE_PPS}/s, each \
             echoed; 95% CI is Wilson's score interval of the binomial. The baseline row \
             shows losses of the measurement itself."
        ),
        "Shaper's loss drops: the userspace shaper's own count of packets it dropped for \
         loss; equal to `lost` when nothing else lost packets."
            .into(),
    ]
}
