//! `cdnlab pricing reproduce`: runs the Section 5 experiment, then writes its tables (CSV and
//! JSON), figures (SVG), every default-τ LP (input and solution, JSON) and a markdown summary.
//! Everything is computed and rendered in memory first, so a failure writes nothing.

use super::experiment::{self, Case, Metrics, Outcome, Reproduction, Settings, SweepRow};
use super::plot;
use crate::plot::{render_lines, Figure, Point};
use crate::table::{num, Table};
use serde::Serialize;
use std::path::Path;

/// The paper's PARM payment relative to BASE/PURM per traffic pattern, % (§5.2.2).
const PAPER_PAYMENT_CHANGE: [f64; 4] = [3.25, -7.94, -10.4, 31.7];

/// One of §5.1.2's metrics: file-name key, axis title, how to read it.
type Metric = (&'static str, &'static str, fn(&Metrics) -> f64);

/// The four metrics of §5.1.2.
const METRICS: [Metric; 4] = [
    ("variance", "variance of site congestion", |m| m.variance),
    ("cost", "total bandwidth cost Σ g(D_m)", |m| m.cost),
    ("payment", "total payment Σ p_m D_m", |m| m.payment),
    ("latency", "average latency (ms)", |m| m.latency_ms),
];

/// Runs the reproduction with `seed`, writes it to `out`, and returns the summary (markdown).
pub fn reproduce(out: &Path, seed: u64) -> Result<String, String> {
    let result = experiment::run(&Settings::paper(seed))?;
    let summary = summary(&result);
    let mut files = vec![("summary.md".to_string(), summary.clone())];
    files.extend(tables(&result)?);
    files.extend(figures(&result)?);
    for lp in &result.lps {
        files.push((format!("lp/{}.json", lp.name), json(lp)?));
    }
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    for dir in [out.to_path_buf(), out.join("lp")] {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    for (name, text) in &files {
        write(&out.join(name), text)?;
    }
    Ok(summary)
}

fn json(value: &impl Serialize) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| format!("cannot encode JSON: {e}"))
}

/// The model as drawn (for an independent check), the LDP tables, the cases and the sweeps.
fn tables(result: &Reproduction) -> Result<Vec<(String, String)>, String> {
    let world = &result.world;
    let model = serde_json::json!({
        "settings": result.settings,
        "capacity": world.capacity,
        "site_latency_ms": world.latency.site,
        "latency_ms": world.latency.region_site,
        "deadline_ms": world.deadline,
        "patterns": world.patterns,
    });
    let mut files = vec![("model.json".to_string(), json(&model)?)];
    for table in &result.ldp {
        let mut csv =
            String::from("site,users,theta,price,location_dependent,reference,variance\n");
        for (m, (theta, price)) in table.theta.iter().zip(&table.prices.prices).enumerate() {
            csv += &format!(
                "{},{},{theta},{price},{},{},{}\n",
                m + 1,
                table.users[m],
                table.prices.location_dependent,
                table.prices.reference,
                table.prices.variance
            );
        }
        files.push((format!("ldp-tp{}.csv", table.pattern), csv));
        files.push((format!("ldp-tp{}.json", table.pattern), json(table)?));
    }
    let mut csv = format!("pattern,case,{}\n", METRIC_COLUMNS);
    for row in &result.cases {
        csv += &format!(
            "{},{},{}\n",
            row.pattern,
            row.case.name(),
            metric_cells(&row.outcome)
        );
    }
    files.push(("cases.csv".into(), csv));
    files.push(("cases.json".into(), json(&result.cases)?));
    for (name, x, rows) in [
        ("tau-sweep", "tau", &result.tau_sweep),
        ("p-max-sweep", "p_max", &result.p_max_sweep),
    ] {
        files.push((format!("{name}.csv"), sweep_csv(x, rows)));
        files.push((format!("{name}.json"), json(rows)?));
    }
    Ok(files)
}

const METRIC_COLUMNS: &str = "variance,cost,payment,latency_ms,response_time_met,\
                              response_time_ms_app1,response_time_ms_app2,response_time_ms_app3,\
                              infeasible";

/// An outcome's CSV cells in `METRIC_COLUMNS` order; an infeasible case has only its reason.
fn metric_cells(outcome: &Outcome) -> String {
    let reason = outcome
        .infeasible
        .as_deref()
        .unwrap_or("")
        .replace(['"', ','], " ");
    match &outcome.metrics {
        Some(m) => {
            let mut response: Vec<String> = m.response_time_ms.iter().map(f64::to_string).collect();
            response.resize(3, String::new());
            format!(
                "{},{},{},{},{},{},\"{reason}\"",
                m.variance,
                m.cost,
                m.payment,
                m.latency_ms,
                m.response_time_met,
                response.join(",")
            )
        }
        None => format!(",,,,,,,,\"{reason}\""),
    }
}

fn sweep_csv(x: &str, rows: &[SweepRow]) -> String {
    let mut csv = format!("pattern,case,{x},{METRIC_COLUMNS}\n");
    for row in rows {
        csv += &format!(
            "{},{},{},{}\n",
            row.pattern,
            row.case.name(),
            row.x,
            metric_cells(&row.outcome)
        );
    }
    csv
}

fn figures(result: &Reproduction) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    for (table, figure) in result.ldp.iter().zip(4..) {
        let kind = if table.prices.location_dependent {
            format!("location-dependent, θ̂ = {:.3}", table.prices.reference)
        } else {
            "one price".to_string()
        };
        let title = format!(
            "Traffic pattern {} (paper: Figure {figure}): {kind}",
            table.pattern
        );
        let svg = plot::sites(&title, &table.theta, &table.prices.prices)?;
        files.push((format!("ldp-tp{}.svg", table.pattern), svg));
    }
    let patterns: Vec<usize> = result.ldp.iter().map(|t| t.pattern).collect();
    let groups: Vec<String> = patterns.iter().map(|p| format!("TP{p}")).collect();
    for ((key, title, metric), figure) in METRICS.iter().zip(8..) {
        let series: Vec<(String, Vec<Option<f64>>)> = Case::ALL
            .iter()
            .map(|&case| {
                let values = patterns
                    .iter()
                    .map(|&p| {
                        result
                            .cases
                            .iter()
                            .find(|r| r.pattern == p && r.case == case)
                            .and_then(|r| r.outcome.metrics.as_ref())
                            .map(metric)
                    })
                    .collect();
                (case.name().to_string(), values)
            })
            .collect();
        let caption = format!("{title} (paper: Figure {figure})");
        files.push((
            format!("cases-{key}.svg"),
            plot::bars(&caption, title, &groups, &series)?,
        ));
    }
    let sweeps = [
        ("tau", "τ (ξ = τ·θ̄)", &result.tau_sweep, Case::Parm, 12),
        (
            "tau",
            "τ (ξ = τ·θ̄)",
            &result.tau_sweep,
            Case::ParmSeconds,
            0,
        ),
        (
            "p-max",
            "P_max (P_min = 0.2)",
            &result.p_max_sweep,
            Case::Parm,
            16,
        ),
    ];
    for (key, x_desc, rows, case, first_figure) in sweeps {
        for (i, (metric_key, title, metric)) in METRICS.iter().enumerate() {
            let lines: Vec<(String, Vec<Point>)> = patterns
                .iter()
                .map(|&p| {
                    let points = rows
                        .iter()
                        .filter(|r| r.pattern == p && r.case == case)
                        .filter_map(|r| {
                            let m = r.outcome.metrics.as_ref()?;
                            Some(Point::new(r.x, metric(m)))
                        })
                        .collect();
                    (format!("TP{p}"), points)
                })
                .collect();
            let (name, caption) = if case == Case::Parm {
                (
                    format!("{key}-{metric_key}.svg"),
                    format!("PARM: {title} (paper: Figure {})", first_figure + i),
                )
            } else {
                (
                    format!("{key}-{metric_key}-{}.svg", case.name().to_lowercase()),
                    format!("{}: {title}", case.name()),
                )
            };
            let figure = Figure {
                caption: &caption,
                x_title: x_desc,
                y_title: title,
                series: &lines,
            };
            files.push((name, render_lines(&figure)?));
        }
    }
    Ok(files)
}

/// The summary printed to stdout and written as summary.md.
pub fn summary(result: &Reproduction) -> String {
    let mut text = format!(
        "# LDP and PARM, Section 5 of papers/000 (seed {})\n\n",
        result.settings.seed
    );
    text += &format!(
        "C_m = {:.1} λ units for every site; t_m (ms) = [{}].\n\n",
        result.world.capacity.first().copied().unwrap_or(0.0),
        result
            .world
            .latency
            .site
            .iter()
            .map(|t| format!("{t:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    text += "## LDP on BASE's congestion (Figures 4–7)\n\n";
    let mut table = Table::new(&[
        "pattern",
        "mean θ",
        "var θ",
        "location-dependent",
        "θ̂",
        "prices p_1..p_10",
    ]);
    for t in &result.ldp {
        table.push(vec![
            format!("TP{}", t.pattern),
            num(Some(super::measure::mean(&t.theta)), 3),
            num(Some(t.prices.variance), 4),
            if t.prices.location_dependent {
                "yes"
            } else {
                "no"
            }
            .into(),
            num(Some(t.prices.reference), 3),
            t.prices
                .prices
                .iter()
                .map(|p| format!("{p:.3}"))
                .collect::<Vec<_>>()
                .join(" "),
        ]);
    }
    text += &table.render();
    text += "\n## The cases, averaged over 6 periods of 10 min (Figures 8–11)\n\n";
    let mut table = Table::new(&[
        "pattern",
        "case",
        "variance",
        "cost",
        "payment",
        "latency (ms)",
        "(4c) met",
        "(4c) LHS per app (ms)",
    ]);
    for row in &result.cases {
        let mut cells = vec![format!("TP{}", row.pattern), row.case.name().into()];
        cells.extend(summary_cells(&row.outcome));
        table.push(cells);
    }
    text += &table.render();
    text += "\n## PARM's payment against BASE's\n\n";
    let mut table = Table::new(&["pattern", "ours", "paper"]);
    for (p, paper) in (1..).zip(PAPER_PAYMENT_CHANGE) {
        table.push(vec![
            format!("TP{p}"),
            result
                .payment_change(p)
                .map_or("—".into(), |c| format!("{c:+.2}%")),
            format!("{paper:+.2}%"),
        ]);
    }
    text += &table.render();
    for (title, rows, case) in [
        ("τ (Figures 12–15), PARM", &result.tau_sweep, Case::Parm),
        (
            "τ, PARM-s (latency in seconds in the LP)",
            &result.tau_sweep,
            Case::ParmSeconds,
        ),
        (
            "P_max (Figures 16–19), PARM",
            &result.p_max_sweep,
            Case::Parm,
        ),
    ] {
        text += &format!("\n## Against {title}\n\n");
        text += &sweep_table(rows, case);
    }
    text
}

fn summary_cells(outcome: &Outcome) -> Vec<String> {
    match &outcome.metrics {
        Some(m) => vec![
            num(Some(m.variance), 4),
            num(Some(m.cost), 0),
            num(Some(m.payment), 0),
            num(Some(m.latency_ms), 2),
            if m.response_time_met { "yes" } else { "no" }.into(),
            m.response_time_ms
                .iter()
                .map(|t| format!("{t:.1}"))
                .collect::<Vec<_>>()
                .join(" / "),
        ],
        None => vec![format!(
            "infeasible: {}",
            outcome.infeasible.as_deref().unwrap_or("")
        )],
    }
}

/// One table per metric: a row per swept value, a column per pattern; then whether (4c) held
/// at every point.
fn sweep_table(rows: &[SweepRow], case: Case) -> String {
    let rows: Vec<&SweepRow> = rows.iter().filter(|r| r.case == case).collect();
    let mut patterns: Vec<usize> = rows.iter().map(|r| r.pattern).collect();
    patterns.sort_unstable();
    patterns.dedup();
    let mut xs: Vec<f64> = rows.iter().map(|r| r.x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let at = |p: usize, x: f64| {
        rows.iter()
            .find(|r| r.pattern == p && r.x == x)
            .and_then(|r| r.outcome.metrics.as_ref())
    };
    let mut text = String::new();
    for (key, title, metric) in METRICS {
        let decimals = match key {
            "variance" => 4,
            "latency" => 2,
            _ => 0,
        };
        let mut headers = vec!["x".to_string()];
        headers.extend(patterns.iter().map(|p| format!("TP{p}")));
        let mut table = Table::new(&headers.iter().map(String::as_str).collect::<Vec<_>>());
        for &x in &xs {
            let mut cells = vec![format!("{x:.3}")];
            cells.extend(
                patterns
                    .iter()
                    .map(|&p| num(at(p, x).map(metric), decimals)),
            );
            table.push(cells);
        }
        text += &format!("{title}:\n\n{}\n", table.render());
    }
    let met = patterns.iter().all(|&p| {
        xs.iter()
            .all(|&x| at(p, x).is_some_and(|m| m.response_time_met))
    });
    text += &format!(
        "(4c) met at every point: {}\n",
        if met { "yes" } else { "no" }
    );
    text
}
