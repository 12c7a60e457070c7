//! `cdnlab replication reproduce`: runs Sections IV-C and V-C's experiments (the class model
//! and Zipf 0.8 / 1.2; proportional, optimized and the six adaptive schemes; a popularity
//! change mid-run), then writes tables (CSV and JSON), figures (SVG) and a markdown summary.
//! Everything is computed and rendered in memory first, so a failure writes nothing.

use super::experiment::{run_all, Durations, Job, Model, Run};
use super::model::{mean_available, z_distribution};
use super::scheme::NAMES;
use super::{fixed_point, FixedPoint, LossForm, PopularityChange, Replication};
use crate::plot::scatter::{render, Figure, Series};
use crate::table::Table;
use serde::Serialize;
use std::path::Path;

/// The paper's inefficiencies γ̄/λ̄ (Section IV-C): (model, replication, source, value).
const PAPER: [(&str, &str, &str, f64); 6] = [
    ("class", "proportional", "simulation", 9.68e-3),
    ("class", "proportional", "approximation", 9.20e-3),
    ("zipf-0.8", "proportional", "simulation", 5.7e-3),
    ("zipf-0.8", "optimized", "simulation", 5.1e-4),
    ("zipf-1.2", "proportional", "simulation", 1.2e-2),
    ("zipf-1.2", "optimized", "simulation", 1.6e-6),
];

/// The adaptive schemes the popularity change is shown for.
const CHANGE_SCHEMES: [&str; 3] = ["lrl", "random-virtual", "lrl-virtual"];

/// One row of `inefficiency.csv`.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub model: &'static str,
    pub replication: String,
    pub source: &'static str,
    pub inefficiency: f64,
}

/// A run with the model's answer for its replication (for adaptive runs: for its
/// time-average replication, rounded down).
struct Judged {
    run: Run,
    /// The replication the model was given.
    replication: Vec<u32>,
    eq2: FixedPoint,
    exact: FixedPoint,
}

/// Runs everything with `seed` (`quick`: short runs, a smoke test), writes it to `out`, and
/// returns the summary (markdown).
pub fn reproduce(out: &Path, seed: u64, quick: bool) -> Result<String, String> {
    let durations = if quick {
        Durations::QUICK
    } else {
        Durations::PAPER
    };
    let mut jobs = Vec::new();
    for model in Model::ALL {
        for name in NAMES {
            jobs.push(Job::new(model, parse(name)?));
        }
    }
    let zipf = Model::Zipf08.system()?;
    let reversed: Vec<f64> = zipf.lambdas().iter().rev().copied().collect();
    for name in CHANGE_SCHEMES {
        jobs.push(Job {
            variant: "change",
            changes: vec![PopularityChange {
                at: durations.adaptive_run / 2.0,
                lambdas: reversed.clone(),
            }],
            ..Job::new(Model::Zipf08, parse(name)?)
        });
    }
    let runs = run_all(jobs, &durations, seed)?;
    let (change, runs): (Vec<Run>, Vec<Run>) =
        runs.into_iter().partition(|r| r.job.variant == "change");
    let runs = runs.into_iter().map(judge).collect::<Result<Vec<_>, _>>()?;
    let rows = rows(&runs);
    let summary = summary(&runs, &rows, quick);
    let mut files = vec![
        ("summary.md".to_string(), summary.clone()),
        ("inefficiency.csv".into(), inefficiency_csv(&rows)),
        ("inefficiency.json".into(), json(&rows)?),
        ("runs.json".into(), json(&runs_json(&runs))?),
        ("z-class.csv".into(), class_z_csv(&runs)?),
        ("popularity-change.csv".into(), change_csv(&change)),
    ];
    for judged in &runs {
        let job = &judged.run.job;
        let name = format!("contents-{}-{}.csv", job.model.name(), job.replication);
        files.push((name, contents_csv(judged)));
    }
    for model in Model::ALL {
        files.push((
            format!("adaptation-{}.csv", model.name()),
            adaptation_csv(&runs, model),
        ));
    }
    files.extend(figures(&runs, &change)?);
    crate::parallel::write_files(out, &files)?;
    Ok(summary)
}

fn parse(name: &str) -> Result<Replication, String> {
    name.parse().map_err(|e: super::ParamError| e.to_string())
}

fn json(value: &impl Serialize) -> Result<String, String> {
    serde_json::to_string_pretty(value).map_err(|e| format!("cannot encode JSON: {e}"))
}

fn judge(run: Run) -> Result<Judged, String> {
    let replication: Vec<u32> = match run.config.scheme {
        None => run.config.replication.clone(),
        Some(_) => (run.result.mean_replicas.iter())
            .map(|r| r.floor() as u32)
            .collect(),
    };
    let model = |form| fixed_point(&run.system, &replication, form).map_err(|e| e.to_string());
    let (eq2, exact) = (model(LossForm::Asymptotic)?, model(LossForm::Exact)?);
    Ok(Judged {
        run,
        replication,
        eq2,
        exact,
    })
}

fn rows(runs: &[Judged]) -> Vec<Row> {
    let mut rows = Vec::new();
    for judged in runs {
        let job = &judged.run.job;
        for (source, inefficiency) in [
            ("simulation", judged.run.result.inefficiency()),
            ("approximation", judged.eq2.inefficiency),
        ] {
            rows.push(Row {
                model: job.model.name(),
                replication: job.replication.to_string(),
                source,
                inefficiency,
            });
        }
    }
    rows
}

fn inefficiency_csv(rows: &[Row]) -> String {
    let mut csv = String::from("model,replication,source,inefficiency\n");
    for r in rows {
        csv += &format!(
            "{},{},{},{:e}\n",
            r.model, r.replication, r.source, r.inefficiency
        );
    }
    csv
}

fn paper(model: &str, replication: &str, source: &str) -> Option<f64> {
    (PAPER.iter())
        .find(|p| (p.0, p.1, p.2) == (model, replication, source))
        .map(|p| p.3)
}

fn sci(value: Option<f64>) -> String {
    value.map_or("—".into(), |v| format!("{v:.2e}"))
}

/// The inefficiencies beside the paper's, and what the adaptive runs cost.
fn summary(runs: &[Judged], rows: &[Row], quick: bool) -> String {
    let mut table = Table::new(&[
        "model",
        "replication",
        "simulation",
        "paper",
        "Eq. 2",
        "paper Eq. 2",
        "exact form",
        "fixed-point iterations",
        "copies after losses / virtual losses",
    ]);
    for (judged, pair) in runs.iter().zip(rows.chunks(2)) {
        let job = &judged.run.job;
        let (model, name) = (job.model.name(), job.replication.to_string());
        let result = &judged.run.result;
        let copies = match judged.run.config.scheme {
            Some(_) => format!(
                "{} / {}",
                result.copies_after_loss, result.copies_after_virtual
            ),
            None => "—".into(),
        };
        table.push(vec![
            model.into(),
            name.clone(),
            sci(Some(pair[0].inefficiency)),
            sci(paper(model, &name, "simulation")),
            sci(Some(pair[1].inefficiency)),
            sci(paper(model, &name, "approximation")),
            sci(Some(judged.exact.inefficiency)),
            judged.eq2.iterations.to_string(),
            copies,
        ]);
    }
    let mut text = String::from(
        "# Adaptive replication: inefficiency γ̄/λ̄\n\nSimulation, the model (Eq. 2 and the \
         exact product form of Eq. 1; for adaptive schemes at their time-average replication) \
         and the paper's values.\n\n",
    );
    if quick {
        text += "**--quick: short runs, a smoke test of the files, not a measurement.**\n\n";
    }
    text + &table.render()
}

#[derive(Serialize)]
struct RunJson<'a> {
    model: &'static str,
    replication: String,
    seed: u64,
    duration: f64,
    warmup: f64,
    requests: u64,
    events: u64,
    inefficiency_simulation: f64,
    copies_after_loss: u64,
    copies_after_virtual: u64,
    eq2: &'a FixedPoint,
    exact: &'a FixedPoint,
}

fn runs_json(runs: &[Judged]) -> Vec<RunJson<'_>> {
    runs.iter()
        .map(|j| RunJson {
            model: j.run.job.model.name(),
            replication: j.run.job.replication.to_string(),
            seed: j.run.config.seed,
            duration: j.run.config.duration,
            warmup: j.run.config.warmup,
            requests: j.run.result.total_requests,
            events: j.run.result.events,
            inefficiency_simulation: j.run.result.inefficiency(),
            copies_after_loss: j.run.result.copies_after_loss,
            copies_after_virtual: j.run.result.copies_after_virtual,
            eq2: &j.eq2,
            exact: &j.exact,
        })
        .collect()
}

/// Per content: the run's measurements beside the model's.
fn contents_csv(judged: &Judged) -> String {
    let (run, fp) = (&judged.run, &judged.exact);
    let result = &run.result;
    let mut csv = String::from(
        "content,lambda,mean_replicas,requests,losses,virtual_losses,loss_rate,mean_available,\
         model_loss_eq2,model_loss_exact,model_mean_available\n",
    );
    let replicas = &judged.replication;
    for (c, &lambda) in run.system.lambdas().iter().enumerate() {
        let z = mean_available(&z_distribution(replicas[c], lambda, fp.theta_eff));
        csv += &format!(
            "{},{lambda},{},{},{},{},{:e},{},{:e},{:e},{z}\n",
            c + 1,
            result.mean_replicas[c],
            result.requests[c],
            result.losses[c],
            result.virtual_losses[c],
            result.losses[c] as f64 / result.measured,
            result.mean_available(c),
            judged.eq2.gammas[c],
            fp.gammas[c],
        );
    }
    csv
}

fn find<'a>(runs: &'a [Judged], model: Model, replication: &str) -> Option<&'a Judged> {
    runs.iter()
        .find(|j| j.run.job.model == model && j.run.job.replication.to_string() == replication)
}

/// Figure 1 (left) as a table: each class's Z_c distribution, simulated (averaged over the
/// class's contents) and by Equation (1).
fn class_z_csv(runs: &[Judged]) -> Result<String, String> {
    let mut csv = String::from("class,z,simulated,eq1\n");
    for (k, curve) in class_z(runs)?.iter().enumerate() {
        for (z, (sim, eq1)) in curve.iter().enumerate() {
            csv += &format!("{},{z},{sim:e},{eq1:e}\n", k + 1);
        }
    }
    Ok(csv)
}

/// Per class: (simulated, Equation 1) probability of each z.
fn class_z(runs: &[Judged]) -> Result<Vec<Vec<(f64, f64)>>, String> {
    let judged = find(runs, Model::Class, "proportional").ok_or("no class-model run")?;
    let mut curves = Vec::new();
    let mut first = 0;
    for class in super::popularity::CLASSES {
        let members = first..first + class.contents;
        let replicas = judged.run.config.replication[first];
        let eq1 = z_distribution(replicas, class.lambda, judged.exact.theta_eff);
        let mut sim = vec![0.0; eq1.len()];
        for c in members {
            for (z, p) in judged.run.result.z_distribution(c).iter().enumerate() {
                sim[z] += p / class.contents as f64;
            }
        }
        curves.push(sim.into_iter().zip(eq1).collect());
        first += class.contents;
    }
    Ok(curves)
}

/// The mean replicas of the 10% most and least popular contents (by the rates in force at
/// the start) in each sample.
fn top_bottom(run: &Run) -> Vec<(f64, f64, f64)> {
    let n = run.system.n();
    let tenth = (n / 10).max(1);
    run.result
        .samples
        .iter()
        .map(|s| {
            let mean = |range: std::ops::Range<usize>| {
                s.replicas[range].iter().map(|&r| r as f64).sum::<f64>() / tenth as f64
            };
            (s.t, mean(0..tenth), mean(n - tenth..n))
        })
        .collect()
}

fn adaptation_csv(runs: &[Judged], model: Model) -> String {
    let mut csv = String::from("replication,t,top10_mean_replicas,bottom10_mean_replicas\n");
    for judged in runs.iter().filter(|j| j.run.job.model == model) {
        if judged.run.config.scheme.is_none() {
            continue;
        }
        for (t, top, bottom) in top_bottom(&judged.run) {
            csv += &format!("{},{t},{top},{bottom}\n", judged.run.job.replication);
        }
    }
    csv
}

/// Per sample: the share of requests lost and the mean replicas of the contents that are the
/// 10% most popular after the change (the least popular before it).
fn change_csv(change: &[Run]) -> String {
    let mut csv = String::from("replication,t,loss_share,new_top10_mean_replicas\n");
    for run in change {
        for (s, (t, _, bottom)) in run.result.samples.iter().zip(top_bottom(run)) {
            let lost: u64 = s.losses.iter().map(|&l| l as u64).sum();
            let share = lost as f64 / s.requests.max(1) as f64;
            csv += &format!("{},{t},{share:e},{bottom}\n", run.job.replication);
        }
    }
    csv
}

fn dots(name: String, points: Vec<(f64, f64)>) -> Series {
    Series {
        name,
        points,
        dots: true,
    }
}

fn line(name: String, points: Vec<(f64, f64)>) -> Series {
    Series {
        name,
        points,
        dots: false,
    }
}

/// (rank, value) for each content.
fn by_rank(values: &[f64]) -> Vec<(f64, f64)> {
    (values.iter().enumerate())
        .map(|(c, &v)| (c as f64 + 1.0, v))
        .collect()
}

fn figure(
    name: &str,
    caption: &str,
    axes: (&str, &str, bool, bool),
    series: &[Series],
) -> Result<(String, String), String> {
    let (x_title, y_title, log_x, log_y) = axes;
    let svg = render(&Figure {
        caption,
        x_title,
        y_title,
        log_x,
        log_y,
        series,
    })?;
    Ok((name.to_string(), svg))
}

const LOSS_AXES: (&str, &str, bool, bool) = ("content rank", "loss rate γ_c", true, true);

fn figures(runs: &[Judged], change: &[Run]) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    let class_curves = class_z(runs)?;
    let mut series = Vec::new();
    for (k, curve) in class_curves.iter().enumerate() {
        let points = |pick: fn(&(f64, f64)) -> f64| {
            (curve.iter().enumerate())
                .map(|(z, p)| (z as f64, pick(p)))
                .collect()
        };
        series.push(dots(format!("class {} simulated", k + 1), points(|p| p.0)));
        series.push(line(format!("class {} Eq. 1", k + 1), points(|p| p.1)));
    }
    files.push(figure(
        "fig1-class-z.svg",
        "Class model, proportional: distribution of Z_c (paper: Figure 1 left)",
        ("available replicas z", "π(Z_c = z)", false, false),
        &series,
    )?);
    let class = find(runs, Model::Class, "proportional").ok_or("no class-model run")?;
    files.push(figure(
        "fig1-class-loss.svg",
        "Class model, proportional: loss rates (paper: Figure 1 right)",
        LOSS_AXES,
        &[
            dots("simulated".into(), by_rank(&class.run.result.loss_rates())),
            line("Eq. 2".into(), by_rank(&class.eq2.gammas)),
            line("exact form".into(), by_rank(&class.exact.gammas)),
        ],
    )?);
    let mut available = Vec::new();
    let mut losses = Vec::new();
    let mut optimized = Vec::new();
    for model in [Model::Zipf08, Model::Zipf12] {
        let name = model.name();
        let prop = find(runs, model, "proportional").ok_or("no Zipf run")?;
        let sim: Vec<f64> = (0..prop.run.system.n())
            .map(|c| prop.run.result.mean_available(c))
            .collect();
        let eq1: Vec<f64> = (prop.replication.iter().zip(prop.run.system.lambdas()))
            .map(|(&r, &l)| mean_available(&z_distribution(r, l, prop.exact.theta_eff)))
            .collect();
        available.push(dots(format!("{name} simulated"), by_rank(&sim)));
        available.push(line(format!("{name} Eq. 1"), by_rank(&eq1)));
        losses.push(dots(
            format!("{name} simulated"),
            by_rank(&prop.run.result.loss_rates()),
        ));
        losses.push(line(format!("{name} Eq. 2"), by_rank(&prop.eq2.gammas)));
        let opt = find(runs, model, "optimized").ok_or("no Zipf run")?;
        optimized.push(dots(
            format!("{name} simulated"),
            by_rank(&opt.run.result.loss_rates()),
        ));
        optimized.push(line(format!("{name} Eq. 2"), by_rank(&opt.eq2.gammas)));
    }
    files.push(figure(
        "fig2-zipf-available.svg",
        "Zipf, proportional: E[Z_c] (paper: Figure 2 left)",
        ("content rank", "mean available replicas", true, true),
        &available,
    )?);
    files.push(figure(
        "fig2-zipf-loss.svg",
        "Zipf, proportional: loss rates (paper: Figure 2 right)",
        LOSS_AXES,
        &losses,
    )?);
    files.push(figure(
        "fig3-optimized-loss.svg",
        "Zipf, optimized (Eq. 5): loss rates (paper: Figure 3)",
        LOSS_AXES,
        &optimized,
    )?);
    for model in Model::ALL {
        files.extend(adaptive_figures(runs, model)?);
    }
    files.extend(change_figures(change)?);
    Ok(files)
}

/// Figure 4 (stationary loss rates and mean replicas per content, adaptive schemes against
/// optimized replication) and Figure 5 (mean replicas of the top and bottom 10% over time).
fn adaptive_figures(runs: &[Judged], model: Model) -> Result<Vec<(String, String)>, String> {
    let name = model.name();
    let chosen: Vec<&Judged> = (NAMES.iter().skip(1))
        .filter_map(|r| find(runs, model, r))
        .collect();
    let loss: Vec<Series> = (chosen.iter())
        .map(|j| {
            dots(
                j.run.job.replication.to_string(),
                by_rank(&j.run.result.loss_rates()),
            )
        })
        .collect();
    let replicas: Vec<Series> = (chosen.iter())
        .map(|j| {
            line(
                j.run.job.replication.to_string(),
                by_rank(&j.run.result.mean_replicas),
            )
        })
        .collect();
    let mut top = Vec::new();
    let mut bottom = Vec::new();
    for j in chosen.iter().filter(|j| j.run.config.scheme.is_some()) {
        let curve = top_bottom(&j.run);
        let label = j.run.job.replication.to_string();
        top.push(line(
            label.clone(),
            curve.iter().map(|p| (p.0, p.1)).collect(),
        ));
        bottom.push(line(label, curve.iter().map(|p| (p.0, p.2)).collect()));
    }
    Ok(vec![
        figure(
            &format!("fig4-{name}-loss.svg"),
            &format!("{name}: stationary loss rates (paper: Figure 4 left)"),
            LOSS_AXES,
            &loss,
        )?,
        figure(
            &format!("fig4-{name}-replicas.svg"),
            &format!("{name}: mean replicas per content (paper: Figure 4 right)"),
            ("content rank", "mean replicas D_c", true, true),
            &replicas,
        )?,
        figure(
            &format!("fig5-{name}-top.svg"),
            &format!("{name}: mean replicas of the 10% most popular (paper: Figure 5)"),
            ("time", "mean replicas", false, false),
            &top,
        )?,
        figure(
            &format!("fig5-{name}-bottom.svg"),
            &format!("{name}: mean replicas of the 10% least popular (paper: Figure 5)"),
            ("time", "mean replicas", false, false),
            &bottom,
        )?,
    ])
}

/// The popularity change: the share of requests lost over time, and the replicas of the
/// contents that become the most popular.
fn change_figures(change: &[Run]) -> Result<Vec<(String, String)>, String> {
    let mut loss = Vec::new();
    let mut replicas = Vec::new();
    for run in change {
        let label = run.job.replication.to_string();
        let points: Vec<(f64, f64)> = (run.result.samples.iter())
            .map(|s| {
                let lost: u64 = s.losses.iter().map(|&l| l as u64).sum();
                (s.t, lost as f64 / s.requests.max(1) as f64)
            })
            .collect();
        loss.push(line(label.clone(), points));
        let curve = top_bottom(run);
        replicas.push(line(label, curve.iter().map(|p| (p.0, p.2)).collect()));
    }
    Ok(vec![
        figure(
            "popularity-change-loss.svg",
            "Zipf 0.8, ranks reversed at mid-run: share of requests lost",
            ("time", "share lost", false, true),
            &loss,
        )?,
        figure(
            "popularity-change-replicas.svg",
            "Zipf 0.8, ranks reversed at mid-run: replicas of the new top 10%",
            ("time", "mean replicas", false, false),
            &replicas,
        )?,
    ])
}
