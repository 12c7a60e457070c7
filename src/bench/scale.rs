//! `bench scale`: how long `up` and `down` of a 100-node topology take.

use super::lab::{prepare, BenchLab};
use super::stats::median;
use super::table::{num, Table};
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::Result;
use std::time::Instant;

const LAB: &str = "bench-scale";

/// `topologies/tree100.toml`, built in so the benchmark runs from any directory.
const TREE100: &str = include_str!("../../topologies/tree100.toml");

/// The targets, seconds, on the 2-core machine it names.
const UP_TARGET_S: f64 = 5.0;
const DOWN_TARGET_S: f64 = 3.0;

pub fn run(options: &BenchOptions) -> Result<Report> {
    let rounds = if options.quick { 1 } else { 3 };
    let mut ups = Vec::new();
    let mut downs = Vec::new();
    let mut table = Table::new(&["round", "nodes", "links", "up (s)", "down (s)"]);
    for round in 1..=rounds {
        progress(format!("scale: round {round} of {rounds}"));
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
            format!("{up:.2}"),
            format!("{down:.2}"),
        ]);
        ups.push(up);
        downs.push(down);
    }
    let (up, down) = (median(&ups), median(&downs));
    table.push(vec![
        "median".into(),
        String::new(),
        String::new(),
        num(up, 2),
        num(down, 2),
    ]);
    let up = up.unwrap_or(f64::INFINITY);
    let down = down.unwrap_or(f64::INFINITY);
    let mut misses = Vec::new();
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
            format!(
                "`up` is timed from the call to ready (namespaces, veths, addresses, routes, \
                 hosts files, link emulation); `down` from the call to everything removed. \
                 Median of {rounds}."
            ),
        ],
        table,
        target: format!("median up < {UP_TARGET_S} s and median down < {DOWN_TARGET_S} s."),
        verdict: if misses.is_empty() {
            Verdict::Met(format!("median up {up:.2} s, median down {down:.2} s"))
        } else {
            Verdict::Missed(misses.join("; "))
        },
    })
}
