//! A sweep's results as rows (one per client per run), written as CSV, and grouped into the
//! series a plot or a summary table shows.

use crate::run::summary::RunSummary;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One client of one run: the run's varied values and the client's summary fields.
pub type Row = Map<String, Value>;

/// The rows of one run: its clients' summaries, each with `run` and the varied values added,
/// and the servers that failed during the run (`servers_ended`, their names), if any did.
pub fn rows_of_run(label: &str, vars: &[(String, String)], summary: &RunSummary) -> Vec<Row> {
    let ended: Vec<&str> = (summary.servers_ended.iter())
        .map(|s| s.node.as_str())
        .collect();
    summary
        .clients
        .iter()
        .map(|client| {
            let mut row = Row::new();
            row.insert("run".into(), label.into());
            for (key, value) in vars {
                row.insert(key.clone(), value.clone().into());
            }
            if !ended.is_empty() {
                row.insert("servers_ended".into(), ended.join(" ").into());
            }
            let common = ["node", "failed", "error"].map(|k| (k.to_string(), client.get(k)));
            let typed = common.into_iter().filter_map(|(k, v)| Some((k, v?)));
            for (key, value) in typed.chain(client.fields.clone()) {
                if !value.is_array() && !value.is_object() {
                    row.entry(key.clone()).or_insert(value.clone());
                }
            }
            row
        })
        .collect()
}

/// CSV with the varied keys first, then every other field (sorted), one line per row.
pub fn to_csv(rows: &[Row], varied: &[String]) -> String {
    let mut columns: Vec<String> = vec!["run".into()];
    columns.extend(varied.iter().cloned());
    let mut rest: Vec<String> = rows
        .iter()
        .flat_map(|r| r.keys().cloned())
        .filter(|k| !columns.contains(k))
        .collect();
    rest.sort();
    rest.dedup();
    columns.extend(rest);
    let mut csv = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing into memory cannot fail.
    let _ = csv.write_record(&columns);
    for row in rows {
        let cells = columns.iter().map(|c| match row.get(c) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        });
        let _ = csv.write_record(cells);
    }
    String::from_utf8_lossy(&csv.into_inner().unwrap_or_default()).into_owned()
}

/// A varied value as a number for an axis: times in ms, rates in Mbit/s, else the number.
pub fn axis_value(text: &str) -> Option<f64> {
    if let Ok(ns) = netem::units::parse_duration_ns(text) {
        return Some(ns as f64 / 1e6);
    }
    if let Ok(bps) = netem::units::parse_rate_bps(text) {
        return Some(bps as f64 / 1e6);
    }
    if text.trim().ends_with('%') {
        return netem::units::parse_percent(text)
            .ok()
            .map(|share| share * 100.0);
    }
    text.trim().parse().ok()
}

/// The axis title for a varied variable, with the unit `axis_value` reads its values in.
pub fn axis_title(name: &str, sample: &str) -> String {
    if netem::units::parse_duration_ns(sample).is_ok() {
        format!("{name} (ms)")
    } else if netem::units::parse_rate_bps(sample).is_ok() {
        format!("{name} (Mbit/s)")
    } else if sample.trim().ends_with('%') {
        format!("{name} (%)")
    } else {
        name.to_string()
    }
}

/// One cell of a grouped table: x, the mean of `y` over the runs in the cell, the half-width of
/// its 95% confidence interval and the number of runs `n` (the replicates).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub mean: f64,
    pub ci: f64,
    pub n: usize,
}

/// Mean and 95% confidence interval of `y` per (facet, series, x) over the rows that did not
/// fail; facets are the other varied values except the replicate variable, so each facet is one
/// plot and runs differing only in their replicate share a cell.
pub struct Grouped {
    pub facets: BTreeMap<String, BTreeMap<String, Vec<Point>>>,
    /// The replicate variable and how many of its values the grouped rows hold.
    pub replicates: Option<(String, usize)>,
}

pub fn group(
    rows: &[Row],
    varied: &[String],
    x: &str,
    y: &str,
    series: &str,
    replicates: Option<&str>,
) -> Grouped {
    // facet → series → x in thousandths → (x, run → (sum of y, count))
    type Cells = BTreeMap<String, BTreeMap<String, BTreeMap<i64, (f64, RunSums)>>>;
    type RunSums = BTreeMap<String, (f64, usize)>;
    let mut cells = Cells::new();
    let mut replicate_values = BTreeSet::new();
    for row in rows {
        if row.get("failed") == Some(&Value::Bool(true)) {
            continue;
        }
        let Some(xv) = row.get(x).and_then(Value::as_str).and_then(axis_value) else {
            continue;
        };
        let Some(yv) = row.get(y).and_then(Value::as_f64) else {
            continue;
        };
        if let Some(var) = replicates {
            replicate_values.insert(text_of(row.get(var)));
        }
        let facet: Vec<String> = varied
            .iter()
            .filter(|k| *k != x && *k != series && Some(k.as_str()) != replicates)
            .map(|k| format!("{k}={}", text_of(row.get(k))))
            .collect();
        let series_value = match row.get(series) {
            None => "all".into(),
            value => text_of(value),
        };
        // Keyed by x in thousandths so equal x values from different runs meet.
        let (_, runs) = cells
            .entry(facet.join(","))
            .or_default()
            .entry(series_value)
            .or_default()
            .entry((xv * 1000.0).round() as i64)
            .or_insert((xv, RunSums::new()));
        let run = runs.entry(text_of(row.get("run"))).or_default();
        run.0 += yv;
        run.1 += 1;
    }
    let facets = cells
        .into_iter()
        .map(|(facet, series)| {
            let series = series
                .into_iter()
                .map(|(name, points)| {
                    let points = points
                        .into_values()
                        .map(|(x, runs)| {
                            // Clients of one run share its trace, so they are not independent
                            // samples: the run's mean is one sample.
                            let samples: Vec<f64> =
                                runs.into_values().map(|(sum, n)| sum / n as f64).collect();
                            point(x, &samples)
                        })
                        .collect();
                    (name, points)
                })
                .collect();
            (facet, series)
        })
        .collect();
    Grouped {
        facets,
        replicates: replicates.map(|var| (var.to_string(), replicate_values.len())),
    }
}

/// A row's field as text: strings as they are, other values as JSON, missing as empty.
fn text_of(value: Option<&Value>) -> String {
    match value {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// The mean of `samples` and the half-width of its 95% confidence interval,
/// t(0.975, n−1) × s / √n with s the sample standard deviation (0 for one sample).
fn point(x: f64, samples: &[f64]) -> Point {
    let n = samples.len();
    let mean = samples.iter().sum::<f64>() / n as f64;
    let ci = if n < 2 {
        0.0
    } else {
        let variance = samples.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        student_t_975(n - 1) * variance.sqrt() / (n as f64).sqrt()
    };
    Point { x, mean, ci, n }
}

/// The 0.975 quantile of Student's t with `df` ≥ 1 degrees of freedom: tabulated up to 30, the
/// normal quantile beyond (within 2% of the exact value there).
fn student_t_975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df - 1).copied().unwrap_or(1.960)
}

/// A text table per facet: one line per x, one column per series; cells are `mean ± ci` when
/// some cell has more than one run, with a line naming the replicates under the table.
pub fn text_table(grouped: &Grouped, x: &str, y: &str) -> String {
    let mut text = String::new();
    for (facet, series) in &grouped.facets {
        let names: Vec<&String> = series.keys().collect();
        let mut xs: Vec<f64> = series.values().flatten().map(|p| p.x).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let spread = series.values().flatten().any(|p| p.n > 1);
        let width = if spread { 20 } else { 14 };
        text += &format!(
            "\n{y} by {x}{}\n",
            if facet.is_empty() {
                String::new()
            } else {
                format!(" ({facet})")
            }
        );
        text += &format!("{x:>16}");
        for name in &names {
            text += &format!("  {name:>width$}");
        }
        text.push('\n');
        for xv in xs {
            text += &format!("{xv:>16}");
            for name in &names {
                let cell = series[*name]
                    .iter()
                    .find(|p| p.x == xv)
                    .map(|p| cell_text(p, spread))
                    .unwrap_or_else(|| "-".into());
                text += &format!("  {cell:>width$}");
            }
            text.push('\n');
        }
        if let Some((var, count)) = &grouped.replicates {
            text += &format!("mean ± 95% CI half-width over {count} replicates of {var}\n");
        }
    }
    text
}

fn cell_text(point: &Point, spread: bool) -> String {
    if spread {
        format!("{:.3} ± {:.3}", point.mean, point.ci)
    } else {
        format!("{:.3}", point.mean)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::grid;
    use serde_json::json;

    /// What a client reports goes into `sweep.csv` as it is: commas, quotes, line breaks and
    /// carriage returns quoted (RFC 4180), and a CSV reader gets the same text back.
    #[test]
    fn every_cell_reads_back_whatever_it_holds() {
        let mut row = Row::new();
        row.insert("run".into(), json!("r1"));
        row.insert("error".into(), json!("a, \"b\"\r\nc"));
        row.insert("startup_delay_s".into(), json!(0.5));
        let text = to_csv(&[row], &[]);
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(
            reader.headers().unwrap().iter().collect::<Vec<_>>(),
            ["run", "error", "startup_delay_s"]
        );
        let record = reader.records().next().unwrap().unwrap();
        assert_eq!(
            record.iter().collect::<Vec<_>>(),
            ["r1", "a, \"b\"\r\nc", "0.5"]
        );
    }

    #[test]
    fn rows_group_by_facet_series_and_x() {
        let varied = vec!["d".to_string(), "b".to_string()];
        let mut rows = Vec::new();
        for (d, b, policy, y) in [
            ("0ms", "5mbit", "up", 1.0),
            ("50ms", "5mbit", "up", 2.0),
            ("50ms", "5mbit", "direct", 0.5),
            ("50ms", "100mbit", "up", 4.0),
        ] {
            let summary = crate::run::summary::clients(
                json!([{"node": "c", "policy": policy, "startup_delay_s": y, "failed": false}]),
            );
            rows.extend(rows_of_run(
                "r",
                &[("d".into(), d.into()), ("b".into(), b.into())],
                &summary,
            ));
        }
        let grouped = group(&rows, &varied, "d", "startup_delay_s", "policy", None);
        assert_eq!(grouped.facets.len(), 2);
        let means: Vec<(f64, f64, usize)> = grouped.facets["b=5mbit"]["up"]
            .iter()
            .map(|p| (p.x, p.mean, p.n))
            .collect();
        assert_eq!(means, vec![(0.0, 1.0, 1), (50.0, 2.0, 1)]);
        assert_eq!(grouped.facets["b=100mbit"]["up"][0].mean, 4.0);
        let csv = to_csv(&rows, &varied);
        assert!(
            csv.starts_with("run,d,b,failed,node,policy,startup_delay_s\n"),
            "{csv}"
        );
        let table = text_table(&grouped, "d", "startup_delay_s");
        assert!(
            table.contains("(b=5mbit)") && table.contains("2.000") && !table.contains('±'),
            "{table}"
        );
    }

    /// Runs of `d` × `trace` with one `up` client each, `y` per run in that order.
    fn replicated_rows(runs: &[(&str, &str, f64)]) -> Vec<Row> {
        runs.iter()
            .flat_map(|(d, trace, y)| {
                let vars = [
                    ("d".into(), d.to_string()),
                    ("trace".into(), trace.to_string()),
                ];
                let summary = crate::run::summary::clients(
                    json!([{"policy": "up", "y": y, "failed": false}]),
                );
                rows_of_run(&grid::label(&vars), &vars, &summary)
            })
            .collect()
    }

    #[test]
    fn replicates_share_a_cell_with_a_confidence_interval() {
        let varied = vec!["d".to_string(), "trace".to_string()];
        let rows = replicated_rows(&[
            ("0ms", "0", 0.10),
            ("0ms", "1", 0.20),
            ("0ms", "2", 0.30),
            ("50ms", "0", 0.70),
        ]);
        let grouped = group(&rows, &varied, "d", "y", "policy", Some("trace"));
        // The replicate variable is not a facet: one plot, not one per trace.
        assert_eq!(grouped.facets.keys().collect::<Vec<_>>(), vec![""]);
        assert_eq!(grouped.replicates, Some(("trace".into(), 3)));
        let points = &grouped.facets[""]["up"];
        // mean 0.2, s 0.1, ci = 4.303 × 0.1 / √3
        assert_eq!(points[0].n, 3);
        assert!((points[0].mean - 0.2).abs() < 1e-12, "{:?}", points[0]);
        assert!((points[0].ci - 0.2484).abs() < 1e-4, "{:?}", points[0]);
        assert_eq!((points[1].mean, points[1].ci, points[1].n), (0.7, 0.0, 1));
        let table = text_table(&grouped, "d", "y");
        assert!(table.contains("0.200 ± 0.248"), "{table}");
        assert!(table.contains("0.700 ± 0.000"), "{table}");
        assert!(
            table.contains("mean ± 95% CI half-width over 3 replicates of trace"),
            "{table}"
        );
        // Without --replicates each trace is a facet of its own.
        let faceted = group(&rows, &varied, "d", "y", "policy", None);
        assert_eq!(faceted.facets.len(), 3);
        assert!(faceted
            .facets
            .values()
            .flat_map(|s| s.values().flatten())
            .all(|p| p.n == 1));
    }

    #[test]
    fn clients_of_one_run_are_one_replicate() {
        let summary = crate::run::summary::clients(
            json!([{"policy": "up", "y": 1.0}, {"policy": "up", "y": 3.0}]),
        );
        let vars = [("d".to_string(), "0ms".to_string())];
        let rows = rows_of_run("d=0ms", &vars, &summary);
        let grouped = group(&rows, &["d".into()], "d", "y", "policy", None);
        let cell = grouped.facets[""]["up"][0];
        assert_eq!((cell.mean, cell.ci, cell.n), (2.0, 0.0, 1));
    }

    /// A run during which a server failed says so in each of its rows.
    #[test]
    fn a_runs_failed_servers_are_named_in_its_rows() {
        let mut summary = crate::run::summary::clients(json!([{"node": "c", "y": 1.0}]));
        let vars = [("d".to_string(), "0ms".to_string())];
        assert_eq!(
            rows_of_run("d=0ms", &vars, &summary)[0].get("servers_ended"),
            None
        );
        summary.servers_ended = ["fdn3", "cloud"]
            .map(|node| crate::run::summary::ServerEnded {
                node: node.into(),
                how: "exited with status 1".into(),
            })
            .to_vec();
        let rows = rows_of_run("d=0ms", &vars, &summary);
        assert_eq!(rows[0]["servers_ended"], "fdn3 cloud");
    }

    #[test]
    fn t_quantiles_shrink_to_the_normal_one() {
        assert_eq!(student_t_975(1), 12.706);
        assert_eq!(student_t_975(30), 2.042);
        assert_eq!(student_t_975(31), 1.960);
    }

    #[test]
    fn axis_values_read_units() {
        assert_eq!(axis_value("50ms"), Some(50.0));
        assert_eq!(axis_value("5mbit"), Some(5.0));
        assert_eq!(axis_value("6"), Some(6.0));
        assert_eq!(axis_value("30%"), Some(30.0));
        assert_eq!(axis_title("caching", "30%"), "caching (%)");
        assert_eq!(axis_value("fast"), None);
        assert_eq!(axis_title("d", "50ms"), "d (ms)");
        assert_eq!(axis_title("b", "5mbit"), "b (Mbit/s)");
        assert_eq!(axis_title("p", "6"), "p");
    }
}
