//! The controller's plots, drawn again from all its SM periods each time it saves.

use super::record::Tick;
use crate::plot::{lines, Figure, Point};
use std::path::Path;

/// A figure's lines: (name, points).
type Lines = Vec<(String, Vec<Point>)>;

/// `prices.svg`, `congestion.svg`, `mapping.svg`, `latency.svg` and `cost.svg` in `out`: a line
/// per site (of `sites`) over the SM periods' `ticks`, and the totals of Equation (7).
pub fn draw(out: &Path, sites: &[String], ticks: &[Tick]) -> Result<(), String> {
    let per_site = |f: &dyn Fn(&Tick, usize) -> Option<f64>| -> Lines {
        sites
            .iter()
            .enumerate()
            .map(|(m, site)| {
                let points = ticks
                    .iter()
                    .filter_map(|t| f(t, m).map(|y| Point::new(t.t_s, y)))
                    .collect();
                (site.clone(), points)
            })
            .collect()
    };
    let served_share = |t: &Tick, m: usize| {
        let total: f64 = t.usage_mbps.iter().sum();
        (total > 0.0).then(|| t.usage_mbps.get(m).copied().unwrap_or(0.0) / total)
    };
    let mean_latency = |t: &Tick, m: usize| {
        let known: Vec<f64> = t.latency_ms.iter().filter_map(|row| row[m]).collect();
        (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64)
    };
    let totals = vec![
        (
            "bandwidth cost Σg(d_m)".to_string(),
            ticks
                .iter()
                .map(|t| Point::new(t.t_s, t.bandwidth_cost))
                .collect(),
        ),
        (
            "payment Σp_m·d_m".to_string(),
            ticks.iter().map(|t| Point::new(t.t_s, t.payment)).collect(),
        ),
    ];
    let figures: [(&str, &str, &str, Lines); 5] = [
        (
            "prices.svg",
            "Price per site (LDP)",
            "price",
            per_site(&|t, m| t.prices.get(m).copied()),
        ),
        (
            "congestion.svg",
            "Congestion level θ_m = d_m / C_m",
            "θ",
            per_site(&|t, m| t.theta.get(m).copied()),
        ),
        (
            "mapping.svg",
            "Share of the bandwidth each site served",
            "share",
            per_site(&served_share),
        ),
        (
            "latency.svg",
            "Probe round trip to each site (mean over regions)",
            "ms",
            per_site(&mean_latency),
        ),
        (
            "cost.svg",
            "Bandwidth cost (Eq. 7) and payment, per SM period",
            "Mbit/s-weighted",
            totals,
        ),
    ];
    for (file, caption, y_title, series) in &figures {
        lines(
            &out.join(file),
            &Figure {
                caption,
                x_title: "time (s)",
                y_title,
                series,
            },
        )?;
    }
    Ok(())
}
