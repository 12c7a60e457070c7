//! A sweep's results as rows (one per client per run), written as CSV, and grouped into the
//! series a plot or a summary table shows.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One client of one run: the run's varied values and the client's summary fields.
pub type Row = Map<String, Value>;

/// The rows of one run: its clients' summaries, each with `run` and the varied values added.
pub fn rows_of_run(label: &str, vars: &[(String, String)], summary: &Value) -> Vec<Row> {
    summary["clients"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|client| {
            let mut row = Row::new();
            row.insert("run".into(), label.into());
            for (key, value) in vars {
                row.insert(key.clone(), value.clone().into());
            }
            for (key, value) in client {
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
    let mut text = columns.join(",") + "\n";
    for row in rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|c| match row.get(c) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => csv_cell(s),
                Some(other) => csv_cell(&other.to_string()),
            })
            .collect();
        text += &cells.join(",");
        text.push('\n');
    }
    text
}

fn csv_cell(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A varied value as a number for an axis: times in ms, rates in Mbit/s, else the number.
pub fn axis_value(text: &str) -> Option<f64> {
    if let Ok(ns) = netem::units::parse_duration_ns(text) {
        return Some(ns as f64 / 1e6);
    }
    if let Ok(bps) = netem::units::parse_rate_bps(text) {
        return Some(bps as f64 / 1e6);
    }
    text.trim().parse().ok()
}

/// The axis title for a varied variable, with the unit `axis_value` reads its values in.
pub fn axis_title(name: &str, sample: &str) -> String {
    if netem::units::parse_duration_ns(sample).is_ok() {
        format!("{name} (ms)")
    } else if netem::units::parse_rate_bps(sample).is_ok() {
        format!("{name} (Mbit/s)")
    } else {
        name.to_string()
    }
}

/// Mean of `y` per (facet, series, x) over the rows that did not fail; facets are the other
/// varied values, so each facet is one plot.
pub struct Grouped {
    pub facets: BTreeMap<String, BTreeMap<String, Vec<(f64, f64)>>>,
}

pub fn group(rows: &[Row], varied: &[String], x: &str, y: &str, series: &str) -> Grouped {
    // facet → series → x in thousandths → (x, sum of y, count)
    type Sums = BTreeMap<String, BTreeMap<String, BTreeMap<i64, (f64, f64, usize)>>>;
    let mut sums = Sums::new();
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
        let facet: Vec<String> = varied
            .iter()
            .filter(|k| *k != x && *k != series)
            .map(|k| {
                let value = row.get(k).and_then(Value::as_str).unwrap_or("");
                format!("{k}={value}")
            })
            .collect();
        let series_value = match row.get(series) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => "all".into(),
        };
        // Keyed by x in thousandths so equal x values from different runs meet.
        let slot = sums
            .entry(facet.join(","))
            .or_default()
            .entry(series_value)
            .or_default()
            .entry((xv * 1000.0).round() as i64)
            .or_insert((xv, 0.0, 0));
        slot.1 += yv;
        slot.2 += 1;
    }
    let facets = sums
        .into_iter()
        .map(|(facet, series)| {
            let series = series
                .into_iter()
                .map(|(name, points)| {
                    let points = points
                        .into_values()
                        .map(|(x, sum, n)| (x, sum / n as f64))
                        .collect();
                    (name, points)
                })
                .collect();
            (facet, series)
        })
        .collect();
    Grouped { facets }
}

/// A text table per facet: one line per x, one column per series.
pub fn text_table(grouped: &Grouped, x: &str, y: &str) -> String {
    let mut text = String::new();
    for (facet, series) in &grouped.facets {
        let names: Vec<&String> = series.keys().collect();
        let mut xs: Vec<f64> = series.values().flatten().map(|(x, _)| *x).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
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
            text += &format!("  {name:>14}");
        }
        text.push('\n');
        for xv in xs {
            text += &format!("{xv:>16}");
            for name in &names {
                let cell = series[*name]
                    .iter()
                    .find(|(px, _)| *px == xv)
                    .map(|(_, v)| format!("{v:.3}"))
                    .unwrap_or_else(|| "-".into());
                text += &format!("  {cell:>14}");
            }
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            let summary = json!({"clients": [{"node": "c", "policy": policy, "startup_delay_s": y, "failed": false}]});
            rows.extend(rows_of_run(
                "r",
                &[("d".into(), d.into()), ("b".into(), b.into())],
                &summary,
            ));
        }
        let grouped = group(&rows, &varied, "d", "startup_delay_s", "policy");
        assert_eq!(grouped.facets.len(), 2);
        assert_eq!(
            grouped.facets["b=5mbit"]["up"],
            vec![(0.0, 1.0), (50.0, 2.0)]
        );
        assert_eq!(grouped.facets["b=100mbit"]["up"], vec![(50.0, 4.0)]);
        let csv = to_csv(&rows, &varied);
        assert!(
            csv.starts_with("run,d,b,failed,node,policy,startup_delay_s\n"),
            "{csv}"
        );
        let table = text_table(&grouped, "d", "startup_delay_s");
        assert!(
            table.contains("(b=5mbit)") && table.contains("2.000"),
            "{table}"
        );
    }

    #[test]
    fn axis_values_read_units() {
        assert_eq!(axis_value("50ms"), Some(50.0));
        assert_eq!(axis_value("5mbit"), Some(5.0));
        assert_eq!(axis_value("6"), Some(6.0));
        assert_eq!(axis_value("fast"), None);
        assert_eq!(axis_title("d", "50ms"), "d (ms)");
        assert_eq!(axis_title("b", "5mbit"), "b (Mbit/s)");
        assert_eq!(axis_title("p", "6"), "p");
    }
}
