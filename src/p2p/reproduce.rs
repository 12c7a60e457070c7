//! `cdnlab p2p reproduce`: the hybrid P2P-cloud paper's claims beside the peer-level
//! simulation — LRU's cache distribution against Lemma 2/3's ρ_j = B·π_j, the dispatch
//! policies' cloud bandwidth and inter-ISP traffic against Lemma 1 and Theorem 2 (both cases),
//! Theorem 2's T* against the LP on random instances, and the trade-off as the inter-ISP cap
//! falls from T* to 0. Everything is computed and rendered in memory first, so a failure
//! writes nothing.

use super::lp::{self, TradeoffInput, TradeoffSolution};
use super::params::Params;
use super::sim::{simulate, SimConfig, SimResult};
use super::{evaluate, minimum_inter_isp, Outcome, Policy, System};
use crate::plot::scatter::{render, Figure, Series};
use crate::table::Table;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;

/// The scenarios' names, case 1 then case 2.
const CASES: [&str; 2] = ["enough", "scarce"];
/// The inter-ISP caps of the trade-off, as fractions of T*.
const CAPS: [f64; 6] = [1.0, 0.8, 0.6, 0.4, 0.2, 0.0];
/// Random instances per case for T* against the LP.
const INSTANCES: usize = 20;

/// One simulated dispatch.
struct Job {
    case: usize,
    label: String,
    dispatch: Vec<Vec<f64>>,
}

/// A simulated dispatch with the model's answer for it.
struct Judged {
    label: String,
    sim: SimResult,
    model: Outcome,
}

/// Runs everything with `seed`, writes it to `out`, and returns the summary (markdown).
pub fn reproduce(out: &Path, params: &Params, seed: u64) -> Result<String, String> {
    let systems = params.systems()?;
    // Requests do not depend on the dispatch (a peer downloads what its own cache misses), so
    // the local run measures the r_l the other policies and the LPs are computed from.
    let mut pilots = Vec::new();
    for (case, system) in systems.iter().enumerate() {
        let ones = vec![1.0; system.isps().len()];
        pilots.push(Job {
            case,
            label: Policy::Local.name().into(),
            dispatch: (Policy::Local.matrix(&ones, &system.capacities()))
                .map_err(|e| e.to_string())?,
        });
    }
    let pilot_runs = run(&systems, &pilots, params, seed)?;
    let requests: Vec<Vec<f64>> = pilot_runs.iter().map(|r| r.requests.clone()).collect();

    let mut jobs = Vec::new();
    for (case, system) in systems.iter().enumerate() {
        for policy in params.dispatch.iter().filter(|&&p| p != Policy::Local) {
            jobs.push(Job {
                case,
                label: policy.name().into(),
                dispatch: policy
                    .matrix(&requests[case], &system.capacities())
                    .map_err(|e| e.to_string())?,
            });
        }
    }
    let capacities = systems[0].capacities();
    let t_star = minimum_inter_isp(&requests[0], &capacities).map_err(|e| e.to_string())?;
    let mut tradeoff = Vec::new();
    for fraction in CAPS {
        let input = TradeoffInput {
            requests: requests[0].clone(),
            capacities: capacities.clone(),
            inter_isp_cap: Some(fraction * t_star),
        };
        let solution = lp::minimum_cloud(&input).map_err(|e| e.to_string())?;
        jobs.push(Job {
            case: 0,
            label: format!("cap {fraction}"),
            dispatch: solution.dispatch(&input.requests),
        });
        tradeoff.push((input, solution));
    }
    let runs = run(&systems, &jobs, params, seed.wrapping_add(2))?;

    let judge = |job: &Job, sim: SimResult| -> Result<Judged, String> {
        let system = &systems[job.case];
        let model = evaluate(&job.dispatch, &requests[job.case], &system.capacities())
            .map_err(|e| e.to_string())?;
        Ok(Judged {
            label: job.label.clone(),
            sim,
            model,
        })
    };
    let mut by_case: [Vec<Judged>; 2] = [Vec::new(), Vec::new()];
    let mut capped = Vec::new();
    for (job, sim) in pilots.iter().zip(pilot_runs).chain(jobs.iter().zip(runs)) {
        let judged = judge(job, sim)?;
        if job.label.starts_with("cap ") {
            capped.push(judged);
        } else {
            by_case[job.case].push(judged);
        }
    }
    for judged in &mut by_case {
        let order = |label: &str| Policy::ALL.iter().position(|p| p.name() == label);
        judged.sort_by_key(|j| order(&j.label));
    }
    let t_star_rows = t_star_instances(seed)?;

    let summary = summary(
        params,
        &systems,
        &requests,
        &by_case,
        &capped,
        &tradeoff,
        &t_star_rows,
    );
    let mut files = vec![
        ("summary.md".to_string(), summary.clone()),
        ("lru.csv".into(), lru_csv(&systems[0], &by_case[0][0].sim)),
        ("dispatch.csv".into(), dispatch_csv(&by_case[0])),
        ("dispatch-scarce.csv".into(), dispatch_csv(&by_case[1])),
        ("t-star.csv".into(), t_star_csv(&t_star_rows)),
        ("tradeoff.csv".into(), tradeoff_csv(&tradeoff, &capped)),
        ("tradeoff-lp.json".into(), json(&lp_records(&tradeoff))?),
        (
            "t-star-lp.json".into(),
            json(&t_star_rows.iter().map(|r| &r.lp).collect::<Vec<_>>())?,
        ),
        (
            "scenario.json".into(),
            json(&scenario_json(params, &systems, &requests))?,
        ),
    ];
    files.extend(figures(&systems[0], &by_case, &tradeoff, &capped)?);
    crate::parallel::write_files(out, &files)?;
    Ok(summary)
}

/// Simulates every job on every core, job `i` with seed `seed + i`.
fn run(
    systems: &[System; 2],
    jobs: &[Job],
    params: &Params,
    seed: u64,
) -> Result<Vec<SimResult>, String> {
    crate::parallel::map(jobs, |i, job| {
        let config = SimConfig {
            dispatch: job.dispatch.clone(),
            slots: params.slots,
            warmup: params.warmup,
            sample_every: 10,
            seed: seed.wrapping_add(i as u64 * 7919),
        };
        simulate(&systems[job.case], &config)
            .map_err(|e| format!("{} {}: {e}", CASES[job.case], job.label))
    })
    .into_iter()
    .collect()
}

/// One random instance's T*: Theorem 2's formula and the LP's minimum.
struct TStar {
    case: &'static str,
    formula: f64,
    lp: LpRecord,
}

/// An LP as another solver needs it: the problem's data and what microlp found.
#[derive(Serialize)]
struct LpRecord {
    problem: &'static str,
    input: TradeoffInput,
    solution: TradeoffSolution,
}

const LEAST_CLOUD: &str = "minimise Σ_l r_l − Σ_lm f_lm (+ 1e-6·Σ_{l≠m} f_lm) s.t. f ≥ 0, \
    Σ_m f_lm ≤ r_l, Σ_l f_lm ≤ capacities_m, Σ_{l≠m} f_lm ≤ inter_isp_cap";
const LEAST_INTER: &str = "minimise Σ_{l≠m} f_lm s.t. f ≥ 0, Σ_m f_lm ≤ r_l, \
    Σ_l f_lm ≤ capacities_m, Σ_lm f_lm ≥ the least-cloud LP's maximum";

/// Random instances of 2–6 ISPs, half with enough peer upload overall (Σ C = 1.3·Σ r) and
/// half without (Σ C = 0.7·Σ r).
fn t_star_instances(seed: u64) -> Result<Vec<TStar>, String> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x7057);
    let mut rows = Vec::new();
    for (case, ratio) in [("enough", 1.3), ("scarce", 0.7)] {
        for _ in 0..INSTANCES {
            let isps = rng.random_range(2..=6);
            let requests: Vec<f64> = (0..isps).map(|_| rng.random_range(1.0..100.0)).collect();
            let raw: Vec<f64> = (0..isps).map(|_| rng.random_range(1.0..100.0)).collect();
            let k = ratio * requests.iter().sum::<f64>() / raw.iter().sum::<f64>();
            let capacities: Vec<f64> = raw.iter().map(|c| c * k).collect();
            let formula = minimum_inter_isp(&requests, &capacities).map_err(|e| e.to_string())?;
            let solution =
                lp::minimum_inter_isp(&requests, &capacities).map_err(|e| e.to_string())?;
            rows.push(TStar {
                case,
                formula,
                lp: LpRecord {
                    problem: LEAST_INTER,
                    input: TradeoffInput {
                        requests,
                        capacities,
                        inter_isp_cap: None,
                    },
                    solution,
                },
            });
        }
    }
    Ok(rows)
}

fn lp_records(tradeoff: &[(TradeoffInput, TradeoffSolution)]) -> Vec<LpRecord> {
    (tradeoff.iter())
        .map(|(input, solution)| LpRecord {
            problem: LEAST_CLOUD,
            input: input.clone(),
            solution: solution.clone(),
        })
        .collect()
}

fn json(value: &impl Serialize) -> Result<String, String> {
    serde_json::to_string_pretty(value).map_err(|e| format!("cannot encode JSON: {e}"))
}

fn lru_csv(system: &System, sim: &SimResult) -> String {
    let model = super::cache::optimal_distribution(system);
    let che = super::cache::che_distribution(system);
    let mut csv = String::from("chunk,pi,rho_measured,rho_model,rho_che\n");
    for (j, pi) in system.playing().iter().enumerate() {
        let _ = writeln!(
            csv,
            "{},{pi:.6e},{:.6},{:.6},{:.6}",
            j + 1,
            sim.rho[j],
            model[j],
            che[j]
        );
    }
    csv
}

fn dispatch_csv(judged: &[Judged]) -> String {
    let mut csv = String::from(
        "policy,cloud_bandwidth,inter_isp_traffic,model_cloud_bandwidth,model_inter_isp_traffic\n",
    );
    for j in judged {
        let _ = writeln!(
            csv,
            "{},{:.3},{:.3},{:.3},{:.3}",
            j.label,
            j.sim.cloud_bandwidth,
            j.sim.inter_isp_traffic,
            j.model.cloud_bandwidth,
            j.model.inter_isp_traffic
        );
    }
    csv
}

fn t_star_csv(rows: &[TStar]) -> String {
    let mut csv = String::from("instance,case,isps,t_star_formula,t_star_lp\n");
    for (i, row) in rows.iter().enumerate() {
        let _ = writeln!(
            csv,
            "{},{},{},{:.9},{:.9}",
            i + 1,
            row.case,
            row.lp.input.requests.len(),
            row.formula,
            row.lp.solution.inter_isp_traffic
        );
    }
    csv
}

fn tradeoff_csv(tradeoff: &[(TradeoffInput, TradeoffSolution)], capped: &[Judged]) -> String {
    let mut csv = String::from(
        "inter_isp_cap,lp_cloud_bandwidth,lp_inter_isp_traffic,cloud_bandwidth,inter_isp_traffic\n",
    );
    for ((input, solution), judged) in tradeoff.iter().zip(capped) {
        let _ = writeln!(
            csv,
            "{:.3},{:.3},{:.3},{:.3},{:.3}",
            input.inter_isp_cap.unwrap_or(f64::INFINITY),
            solution.cloud_bandwidth,
            solution.inter_isp_traffic,
            judged.sim.cloud_bandwidth,
            judged.sim.inter_isp_traffic
        );
    }
    csv
}

#[derive(Serialize)]
struct ScenarioJson<'a> {
    case: &'static str,
    system: &'a System,
    /// r_l measured by the local run; the model's input.
    requests: &'a [f64],
    /// U_m·N_m·(1 − π_0).
    capacities: Vec<f64>,
    slots: u64,
    warmup: u64,
}

fn scenario_json<'a>(
    params: &Params,
    systems: &'a [System; 2],
    requests: &'a [Vec<f64>],
) -> Vec<ScenarioJson<'a>> {
    (0..2)
        .map(|case| ScenarioJson {
            case: CASES[case],
            system: &systems[case],
            requests: &requests[case],
            capacities: systems[case].capacities(),
            slots: params.slots,
            warmup: params.warmup,
        })
        .collect()
}

fn figures(
    system: &System,
    by_case: &[Vec<Judged>; 2],
    tradeoff: &[(TradeoffInput, TradeoffSolution)],
    capped: &[Judged],
) -> Result<Vec<(String, String)>, String> {
    let model = super::cache::optimal_distribution(system);
    let rank = |j: usize| (j + 1) as f64;
    let lru = Figure {
        caption: "LRU peer caches: share of peers caching each chunk",
        x_title: "chunk popularity rank",
        y_title: "share of peers caching it",
        log_x: true,
        log_y: true,
        series: &[
            Series {
                name: "simulated LRU".into(),
                points: (by_case[0][0].sim.rho.iter().enumerate())
                    .map(|(j, &r)| (rank(j), r))
                    .collect(),
                dots: true,
            },
            Series {
                name: "Lemma 2: B·π_j".into(),
                points: model
                    .iter()
                    .enumerate()
                    .map(|(j, &r)| (rank(j), r))
                    .collect(),
                dots: false,
            },
            Series {
                name: "Che's approximation of LRU".into(),
                points: (super::cache::che_distribution(system).iter().enumerate())
                    .map(|(j, &r)| (rank(j), r))
                    .collect(),
                dots: false,
            },
        ],
    };
    let cap = |i: &TradeoffInput| i.inter_isp_cap.unwrap_or(0.0);
    let trade = Figure {
        caption: "Cloud bandwidth as the inter-ISP cap falls below T*",
        x_title: "inter-ISP cap (chunks per slot)",
        y_title: "cloud bandwidth (chunks per slot)",
        log_x: false,
        log_y: false,
        series: &[
            Series {
                name: "LP".into(),
                points: tradeoff
                    .iter()
                    .map(|(i, s)| (cap(i), s.cloud_bandwidth))
                    .collect(),
                dots: false,
            },
            Series {
                name: "simulated, LP's dispatch".into(),
                points: (tradeoff.iter().zip(capped))
                    .map(|((i, _), j)| (cap(i), j.sim.cloud_bandwidth))
                    .collect(),
                dots: true,
            },
        ],
    };
    let mut files = vec![
        ("lru.svg".to_string(), render(&lru)?),
        ("tradeoff.svg".to_string(), render(&trade)?),
    ];
    for (case, judged) in by_case.iter().enumerate() {
        let series: Vec<Series> = (judged.iter())
            .flat_map(|j| {
                [
                    Series {
                        name: format!("{} (simulated)", j.label),
                        points: vec![(j.sim.inter_isp_traffic, j.sim.cloud_bandwidth)],
                        dots: true,
                    },
                    Series {
                        name: format!("{} (model)", j.label),
                        points: vec![(j.model.inter_isp_traffic, j.model.cloud_bandwidth)],
                        dots: true,
                    },
                ]
            })
            .collect();
        let caption = format!("Dispatch policies, {} peer upload", CASES[case]);
        let figure = Figure {
            caption: &caption,
            x_title: "inter-ISP traffic (chunks per slot)",
            y_title: "cloud bandwidth (chunks per slot)",
            log_x: false,
            log_y: false,
            series: &series,
        };
        let name = if case == 0 {
            "dispatch.svg".to_string()
        } else {
            "dispatch-scarce.svg".into()
        };
        files.push((name, render(&figure)?));
    }
    Ok(files)
}

fn summary(
    params: &Params,
    systems: &[System; 2],
    requests: &[Vec<f64>],
    by_case: &[Vec<Judged>; 2],
    capped: &[Judged],
    tradeoff: &[(TradeoffInput, TradeoffSolution)],
    t_star: &[TStar],
) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Hybrid P2P-cloud CDN: model against the peer-level simulation\n\n\
         {} ISPs of {:?} peers, J = {} chunks (Zipf {}), B = {}, π_0 = {}; {} slots per run \
         ({} of warm-up). Rates are chunks per slot (one slot plays one chunk).\n",
        params.peers.len(),
        params.peers,
        params.chunks,
        params.zipf,
        params.cache,
        params.idle,
        params.slots,
        params.warmup
    );
    for case in 0..2 {
        let caps = systems[case].capacities();
        let mut table = Table::new(&[
            "ISP",
            "N_m",
            "U_m",
            "r_m (measured)",
            "C_m = U·N·(1−π_0)",
            "I_m",
        ]);
        for (m, isp) in systems[case].isps().iter().enumerate() {
            table.push(vec![
                (m + 1).to_string(),
                isp.peers.to_string(),
                format!("{}", isp.upload),
                format!("{:.1}", requests[case][m]),
                format!("{:.1}", caps[m]),
                format!("{:+.1}", caps[m] - requests[case][m]),
            ]);
        }
        let _ = writeln!(md, "## Scenario `{}`\n\n{}", CASES[case], table.render());
        let mut table = Table::new(&[
            "policy",
            "cloud (sim)",
            "cloud (model)",
            "inter-ISP (sim)",
            "inter-ISP (model)",
            "L_m per ISP (sim)",
            "L_m per ISP (Lemma 1)",
        ]);
        for j in &by_case[case] {
            let list = |v: &[f64]| {
                v.iter()
                    .map(|x| format!("{x:.3}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            table.push(vec![
                j.label.clone(),
                format!("{:.1}", j.sim.cloud_bandwidth),
                format!("{:.1}", j.model.cloud_bandwidth),
                format!("{:.1}", j.sim.inter_isp_traffic),
                format!("{:.1}", j.model.inter_isp_traffic),
                list(&j.sim.miss),
                list(&j.model.miss),
            ]);
        }
        let t = minimum_inter_isp(&requests[case], &caps).unwrap_or(f64::NAN);
        let _ = writeln!(md, "T* (Theorem 2) = {t:.1}\n\n{}", table.render());
    }

    let model = super::cache::optimal_distribution(&systems[0]);
    let rho = &by_case[0][0].sim.rho;
    let che = super::cache::che_distribution(&systems[0]);
    let mut table = Table::new(&[
        "chunks (by rank)",
        "Σ ρ measured",
        "Σ B·π_j",
        "mean error against B·π_j",
        "largest error against B·π_j",
        "largest error against Che",
    ]);
    let j = model.len();
    for (name, range) in [
        ("1–10", 0..10.min(j)),
        ("11–100", 10.min(j)..100.min(j)),
        ("101–J", 100.min(j)..j),
        ("all", 0..j),
    ] {
        let n = range.len().max(1) as f64;
        let errors: Vec<f64> = range.clone().map(|i| (rho[i] - model[i]).abs()).collect();
        table.push(vec![
            name.to_string(),
            format!("{:.3}", range.clone().map(|i| rho[i]).sum::<f64>()),
            format!("{:.3}", range.clone().map(|i| model[i]).sum::<f64>()),
            format!("{:.4}", errors.iter().sum::<f64>() / n),
            format!("{:.4}", errors.iter().fold(0.0f64, |a, &b| a.max(b))),
            format!(
                "{:.4}",
                range
                    .clone()
                    .map(|i| (rho[i] - che[i]).abs())
                    .fold(0.0f64, f64::max)
            ),
        ]);
    }
    let _ = writeln!(
        md,
        "## LRU against ρ_j = B·π_j (scenario `enough`)\n\n{}",
        table.render()
    );

    let mut table = Table::new(&[
        "inter-ISP cap",
        "cloud (LP)",
        "cloud (sim, LP's dispatch)",
        "inter-ISP (sim)",
    ]);
    for ((input, solution), j) in tradeoff.iter().zip(capped) {
        table.push(vec![
            format!("{:.1}", input.inter_isp_cap.unwrap_or(f64::INFINITY)),
            format!("{:.1}", solution.cloud_bandwidth),
            format!("{:.1}", j.sim.cloud_bandwidth),
            format!("{:.1}", j.sim.inter_isp_traffic),
        ]);
    }
    let _ = writeln!(md, "## Trade-off (scenario `enough`)\n\n{}", table.render());

    let worst = (t_star.iter())
        .map(|r| (r.formula - r.lp.solution.inter_isp_traffic).abs() / r.formula.max(1.0))
        .fold(0.0f64, f64::max);
    let _ = writeln!(
        md,
        "## T*: Theorem 2 against the LP\n\n{} random instances ({} per case): largest \
         relative difference {worst:.2e}.",
        t_star.len(),
        INSTANCES
    );
    md
}
