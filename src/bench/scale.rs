//! `bench scale`: how long planning (parse, addresses, routes), `up` and `down` of a 100-node
//! and a 1000-node tree take, how long the kernel then needs to free the namespaces, and what
//! an idle node costs the machine's memory.

use super::lab::{prepare, BenchLab};
use super::memory;
use super::stats::median;
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::{Error, Result};
use crate::table::{num, Table};
use crate::topology::{self, LoadOptions};
use std::time::{Duration, Instant};

const LAB: &str = "bench-scale";

/// A lab size and its targets (seconds, on the 2-core machine the issues name).
struct Case {
    file: &'static str,
    /// The file, built in so the benchmark runs from any directory.
    text: &'static str,
    up_target_s: f64,
    down_target_s: f64,
}

const CASES: [Case; 2] = [
    Case {
        file: "topologies/tree100.toml",
        text: include_str!("../../topologies/tree100.toml"),
        up_target_s: 5.0,
        down_target_s: 3.0,
    },
    Case {
        file: "topologies/tree1000.toml",
        text: include_str!("../../topologies/tree1000.toml"),
        up_target_s: 10.0,
        down_target_s: 5.0,
    },
];

/// Planning a 100-node tree (parse, address, route) is a small part of `up`: a unit test used
/// to hold it to this, which only a benchmark can measure fairly on a shared machine.
const PLAN_TARGET_MS: f64 = 250.0;

/// How long to wait for the kernel to free a lab's namespaces before the next round (it took
/// 17 s for the 1000-node tree on an otherwise quiet machine).
const FREE_TIMEOUT: Duration = Duration::from_secs(30);

/// One round's numbers.
struct Round {
    plan_ms: f64,
    up_s: f64,
    down_s: f64,
    /// Seconds from `down`'s return until the kernel had freed the namespaces.
    freed_s: Option<f64>,
    /// KiB per node: fall of MemAvailable, rise of Slab + Percpu, over `up`.
    available_kib: f64,
    kernel_kib: f64,
}

pub fn run(options: &BenchOptions) -> Result<Report> {
    let rounds = if options.quick { 1 } else { 3 };
    let mut table = Table::new(&[
        "topology",
        "round",
        "nodes",
        "links",
        "plan (ms)",
        "up (s)",
        "down (s)",
        "namespaces freed after down (s)",
        "MemAvailable per node (KiB)",
        "Slab + Percpu per node (KiB)",
    ]);
    let mut misses = Vec::new();
    let mut met = Vec::new();
    for case in &CASES {
        let name = case.file.trim_start_matches("topologies/");
        let (mut done, mut nodes, mut links) = (Vec::new(), 0, 0);
        for round in 1..=rounds {
            progress(format!("scale: {name}, round {round} of {rounds}"));
            let (measured, n, l) = run_round(case, options)?;
            (nodes, links) = (n, l);
            table.push(vec![
                name.to_string(),
                round.to_string(),
                nodes.to_string(),
                links.to_string(),
                format!("{:.1}", measured.plan_ms),
                format!("{:.2}", measured.up_s),
                format!("{:.2}", measured.down_s),
                num(measured.freed_s, 1),
                format!("{:.0}", measured.available_kib),
                format!("{:.0}", measured.kernel_kib),
            ]);
            done.push(measured);
        }
        let med = |f: fn(&Round) -> f64| median(&done.iter().map(f).collect::<Vec<_>>());
        let freed: Vec<f64> = done.iter().filter_map(|r| r.freed_s).collect();
        let (plan, up, down) = (med(|r| r.plan_ms), med(|r| r.up_s), med(|r| r.down_s));
        let (available, kernel) = (med(|r| r.available_kib), med(|r| r.kernel_kib));
        table.push(vec![
            name.to_string(),
            "median".into(),
            nodes.to_string(),
            links.to_string(),
            num(plan, 1),
            num(up, 2),
            num(down, 2),
            num(median(&freed), 1),
            num(available, 0),
            num(kernel, 0),
        ]);
        let plan = plan.unwrap_or(f64::INFINITY);
        let up = up.unwrap_or(f64::INFINITY);
        let down = down.unwrap_or(f64::INFINITY);
        if nodes <= 100 && plan >= PLAN_TARGET_MS {
            misses.push(format!("{nodes} nodes: planning takes {plan:.1} ms"));
        }
        if up >= case.up_target_s {
            misses.push(format!("{nodes} nodes: up takes {up:.2} s"));
        }
        if down >= case.down_target_s {
            misses.push(format!("{nodes} nodes: down takes {down:.2} s"));
        }
        met.push(format!(
            "{nodes} nodes: median up {up:.2} s, down {down:.2} s, {} KiB of MemAvailable per node",
            num(available, 0)
        ));
    }
    Ok(Report {
        name: "scale",
        title: "up and down of a 100-node and a 1000-node lab".into(),
        setup: setup(rounds),
        table,
        target: format!(
            "median plan < {PLAN_TARGET_MS} ms at 100 nodes; median up < {} s and down < {} s \
             at 100 nodes, up < {} s and down < {} s at 1000 nodes.",
            CASES[0].up_target_s,
            CASES[0].down_target_s,
            CASES[1].up_target_s,
            CASES[1].down_target_s
        ),
        verdict: if misses.is_empty() {
            Verdict::Met(met.join("; "))
        } else {
            Verdict::Missed(misses.join("; "))
        },
    })
}

/// Plans, brings up and takes down `case` once, then waits for the kernel to free its
/// namespaces (so the next round starts from the same machine); its numbers, nodes and links.
fn run_round(case: &Case, options: &BenchOptions) -> Result<(Round, usize, usize)> {
    let start = Instant::now();
    let load = LoadOptions {
        name: Some(LAB),
        set: &[],
    };
    topology::parse(case.text, case.file, &load)
        .map_err(|e| Error(format!("{} does not parse: {e}", case.file)))?;
    let plan_ms = start.elapsed().as_secs_f64() * 1e3;
    // Its own lab name, so the benchmark never touches a user's `tree100` lab.
    let topology = prepare(case.text, Some(LAB))?;
    let (nodes, links) = (topology.nodes.len(), topology.segments.len());
    let before = memory::read()?;
    let start = Instant::now();
    let lab = BenchLab::start(topology, options)?;
    let up_s = start.elapsed().as_secs_f64();
    let after = memory::read()?;
    let start = Instant::now();
    lab.down()?;
    let down_s = start.elapsed().as_secs_f64();
    // The lab's namespaces: one per node and the hub.
    let namespaces = nodes as u64 + 1;
    let freed_s =
        memory::wait_namespaces_freed(&after, namespaces, FREE_TIMEOUT).map(|d| d.as_secs_f64());
    let per_node = |kib: f64| kib / nodes as f64;
    let round = Round {
        plan_ms,
        up_s,
        down_s,
        freed_s,
        available_kib: per_node(before.available_kib as f64 - after.available_kib as f64),
        kernel_kib: per_node(after.kernel_kib as f64 - before.kernel_kib as f64),
    };
    Ok((round, nodes, links))
}

fn setup(rounds: usize) -> Vec<String> {
    vec![
        format!(
            "topologies/tree100.toml (a root, 9 branches, 90 leaves) and tree1000.toml (a root, \
             27 branches, 972 leaves), plain hosts, every link 1 ms each way so every link \
             direction is emulated; as lab `{LAB}`."
        ),
        "`plan` is `topology::parse` of the file alone: TOML, checks, addresses, routes and \
         hosts entries, no system call."
            .to_string(),
        format!(
            "`up` is timed from the call to ready (namespaces, veths, addresses, routes, hosts \
             files, certificates, link emulation); `down` from the call to everything removed \
             (processes, namespaces, files). Median of {rounds}."
        ),
        format!(
            "Namespaces freed: the kernel frees a deleted namespace later, on a work queue; this \
             is how long after `down` returned the count of live namespaces (the \
             `net_namespace` slab) had fallen by the lab's namespaces (within 20) from just \
             before `down`; — if not within {} s. The next round waits for it.",
            FREE_TIMEOUT.as_secs()
        ),
        "Memory per idle node: how much MemAvailable fell, and Slab + Percpu rose, from just \
         before `up` to just after, divided by the nodes. MemAvailable is what the machine \
         has left to give, so its fall is what the lab costs; nearly all of it is kernel \
         memory for the namespaces, veths, bridge ports and routes (Slab + Percpu), since \
         plain hosts run no process."
            .to_string(),
    ]
}
