//! `cdnlab bench`: how faithfully emulated links give what they are configured to give (delay,
//! rate, jitter, loss), what the userspace shaper costs in CPU, and how fast labs come up and
//! down. Each benchmark builds its own lab, measures it with `probe`, removes it, and returns
//! a `Report`: a markdown table, its target and whether the target was met.

pub mod cpu;
pub mod delay;
pub mod hog;
pub mod http;
pub mod icn;
pub mod jitter;
pub mod lab;
pub mod loss;
pub mod memory;
pub mod parm;
pub mod rate;
pub mod sample;
pub mod scale;
pub mod stats;

use crate::lab::{interrupt, sys, Error, Result};
use crate::table::Table;

/// Every benchmark, in the order `all` runs them.
pub const BENCHMARKS: [&str; 8] = [
    "delay", "rate", "jitter", "loss", "cpu", "scale", "parm", "icn",
];

/// Benchmarks run only when named: `http` needs nginx and wrk, which nothing else installs.
pub const BY_NAME_ONLY: [&str; 1] = ["http"];

/// What every benchmark is given.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    /// Fewer samples and shorter runs: a smoke test, not a measurement.
    pub quick: bool,
    /// As `cdnlab up --link-backend`.
    pub link_backend: crate::lab::BackendChoice,
}

/// Whether a benchmark met its target, and the numbers that say so. As JSON:
/// `{"met": "why"}`, `{"missed": "why"}` or `{"not_applicable": "why"}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Met(String),
    Missed(String),
    /// Nothing to judge (e.g. the CPU of a shaper the kernel backend does not run).
    NotApplicable(String),
}

/// One benchmark's result (as JSON with `--json`: these fields).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Report {
    pub name: &'static str,
    pub title: String,
    /// How the lab was set up and measured, one sentence each.
    pub setup: Vec<String>,
    pub table: Table,
    pub target: String,
    pub verdict: Verdict,
}

impl Report {
    /// The report as markdown: heading, setup, table, target and verdict.
    pub fn render(&self) -> String {
        let mut text = format!("## {}: {}\n\n", self.name, self.title);
        for line in &self.setup {
            text += &format!("- {line}\n");
        }
        if !self.table.is_empty() {
            text += "\n";
            text += &self.table.render();
        }
        text += &format!("\nTarget: {}\n", self.target);
        text += &match &self.verdict {
            Verdict::Met(why) => format!("Result: **met** — {why}\n"),
            Verdict::Missed(why) => format!("Result: **missed** — {why}\n"),
            Verdict::NotApplicable(why) => format!("Result: not applicable — {why}\n"),
        };
        text
    }
}

/// The benchmarks `which` names: one of `BENCHMARKS`, or `all`.
pub fn select(which: &str) -> Option<Vec<&'static str>> {
    if which == "all" {
        return Some(BENCHMARKS.to_vec());
    }
    BENCHMARKS
        .iter()
        .chain(&BY_NAME_ONLY)
        .find(|&&b| b == which)
        .map(|&b| vec![b])
}

/// Runs one benchmark.
pub fn run_one(name: &str, options: &BenchOptions) -> Result<Report> {
    interrupt::check()?;
    let mut report = match name {
        "delay" => delay::run(options),
        "rate" => rate::run(options),
        "jitter" => jitter::run(options),
        "loss" => loss::run(options),
        "cpu" => cpu::run(options),
        "scale" => scale::run(options),
        "http" => http::run(options),
        "parm" => parm::run(options),
        "icn" => icn::run(options),
        other => Err(Error(format!(
            "no benchmark `{other}` (known: {}, all)",
            BENCHMARKS.join(", ")
        ))),
    }?;
    // `http` and `icn` run on loopback and `parm` is a computation: no emulated link.
    let backend = crate::lab::links::choose_backend(options.link_backend).ok();
    if let Some(backend) = backend.filter(|_| !["http", "icn", "parm"].contains(&name)) {
        report
            .setup
            .push(format!("Link backend: {}.", backend.name()));
    }
    // Other work on the machine shifts timing numbers; the load says how much there was.
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
        report.setup.push(format!(
            "Load average when it finished (1, 5, 15 min): {} on {cpus} CPUs.",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(report)
}

/// Runs the benchmarks named and hands each report to `emit` as soon as it is ready. A failed
/// benchmark does not stop the others (unless interrupted); the error lists every failure.
pub fn run(names: &[&str], options: &BenchOptions, mut emit: impl FnMut(&Report)) -> Result<()> {
    if !sys::is_root() {
        return Err(Error(
            "cdnlab bench needs root (it creates network namespaces); run it with sudo".into(),
        ));
    }
    let mut failures = Vec::new();
    for name in names {
        match run_one(name, options) {
            Ok(report) => emit(&report),
            Err(e) if interrupt::interrupted() => return Err(e),
            Err(e) => {
                tracing::error!("bench {name} failed: {e}");
                failures.push(format!("{name}: {e}"));
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Error(format!(
            "{} benchmark(s) failed: {}",
            failures.len(),
            failures.join("; ")
        )))
    }
}

/// A progress line in the log (stderr), so stdout holds only the reports.
fn progress(message: impl AsRef<str>) {
    tracing::info!("{}", message.as_ref());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection() {
        assert_eq!(select("rate"), Some(vec!["rate"]));
        assert_eq!(select("all").map(|v| v.len()), Some(BENCHMARKS.len()));
        assert_eq!(select("http"), Some(vec!["http"]));
        assert!(!select("all").unwrap_or_default().contains(&"http"));
        assert_eq!(select("speed"), None);
    }

    #[test]
    fn report_renders_table_target_and_verdict() {
        let mut table = Table::new(&["a"]);
        table.push(vec!["1".into()]);
        let report = Report {
            name: "delay",
            title: "configured vs measured".into(),
            setup: vec!["Two hops.".into()],
            table,
            target: "error ≤ 0.2 ms".into(),
            verdict: Verdict::Missed("0.3 ms at 150 ms".into()),
        };
        assert_eq!(
            report.render(),
            "## delay: configured vs measured\n\n- Two hops.\n\n| a   |\n| --- |\n| 1   |\n\n\
             Target: error ≤ 0.2 ms\nResult: **missed** — 0.3 ms at 150 ms\n"
        );
    }
}
