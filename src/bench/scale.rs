//! `bench scale`: how long planning (parse, addresses, routes), `up` and `down` of a 100-node
//! topology take.

use super::lab::{prepare, BenchLab};
use super::stats::median;
use super::table::{num, Table};
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::{Error, Result};
use crate::topology::{self, LoadOptions};
use std::time::Instant;

const LAB: &str = "bench-scale";

/// `topologies/tree100.toml`, built in so the benchmark runs from any directory.
const TREE100: &str = include_str!("../../topologies/tree100.toml");

/// The targets, seconds, on the 2-core machine it names.
const UP_TARGET_S: f64 = 5.0;
const DOWN_TARGET_S: f64 = 3.0;
/// Planning a 100-node tree (parse, address, route) is a small part of `up`: a unit test used
/// to hold it to this, which only a benchmark can measure fairly on a shared machine.
const PLAN_TARGET_MS: f64 = 250.0;

pub fn run(options: &BenchOptions) -> Result<Report> {
    let rounds = if options.quick { 1 } else { 3 };
    let mut plans = Vec::new();
    let mut ups = Vec::new();
    let mut downs = Vec::new();
    let mut table = Table::new(&["round", "nodes", "links", "plan (ms)", "up (s)", "down (s)"]);
    for round in 1..=rounds {
        progress(format!("scale: round {round} of {rounds}"));
        let start = Instant::now();
        let load = LoadOptions {
            name: Some(LAB),
            set: &[],
        };
        topology::parse(TREE100, "topologies/tree100.toml", &load)
            .map_err(|e| Error(format!("tree100 does not parse: {e}")))?;
        let plan = start.elapsed().as_secs_f64() * 1e3;
        // Its own lab name, so the benchmark never touches a user's `tree100` lab.
        let topology = prepare(TREE100, Some(LAB))?;
        let (nodes, links) = (topology.nodes.len(), topology.segments.len());
        let start = Instant::now();
        let lab = BenchLab::start(topology, options)?;
        let up = start.elapsed().as_secs_f64();
        let start = Instant::now();
        lab.down()?;
        let down = start.elapsed().as_secs_f64();
        table.push(vec![
            round.to_string(),
            nodes.to_string(),
            links.to_string(),
            format!("{plan:.1}"),
            format!("{up:.2}"),
            format!("{down:.2}"),
        ]);
        plans.push(plan);
        ups.push(up);
        downs.push(down);
    }
    let (plan, up, down) = (median(&plans), median(&ups), median(&downs));
    table.push(vec![
        "median".into(),
        String::new(),
        String::new(),
        num(plan, 1),
        num(up, 2),
        num(down, 2),
    ]);
    let plan = plan.unwrap_or(f64::INFINITY);
    let up = up.unwrap_or(f64::INFINITY);
    let down = down.unwrap_or(f64::INFINITY);
    let mut misses = Vec::new();
    if plan >= PLAN_TARGET_MS {
        misses.push(format!("planning takes {plan:.1} ms"));
    }
    if up >= UP_TARGET_S {
        misses.push(format!("up takes {up:.2} s"));
    }
    if down >= DOWN_TARGET_S {
        misses.push(format!("down takes {down:.2} s"));
    }
    Ok(Report {
        name: "scale",
        title: "up and down of a 100-node lab".into(),
        setup: vec![
            format!(
                "topologies/tree100.toml (a root, 9 branches, 90 leaves; every link 1 ms each \
                 way, so every link direction is emulated), as lab `{LAB}`."
            ),
            "`plan` is `topology::parse` of the file alone: TOML, checks, addresses, routes \
             and hosts entries, no system call."
                .to_string(),
            format!(
                "`up` is timed from the call to ready (namespaces, veths, addresses, routes, \
                 hosts files, link emulation); `down` from the call to everything removed. \
                 Median of {rounds}."
            ),
        ],
        table,
        target: format!(
            "median plan < {PLAN_TARGET_MS} ms, median up < {UP_TARGET_S} s and median down < \
             {DOWN_TARGET_S} s."
        ),
        verdict: if misses.is_empty() {
            Verdict::Met(format!(
                "median plan {plan:.1} ms, median up {up:.2} s, median down {down:.2} s"
            ))
        } else {
            Verdict::Missed(misses.join("; "))
        },
    })
}
