//! The reproduction's bar figures as SVG text: per-site congestion and price (Figures 4–7) and
//! metrics per pattern and case (Figures 8–11); the sweeps (Figures 12–19) are
//! `crate::plot::render_lines`. Rendered to strings so nothing is written until every figure
//! has been drawn.

use crate::plot::{axis_number, legend, line, svg, Point, COLORS};
use plotters::prelude::*;

/// A named series of values.
pub struct Series {
    pub name: String,
    pub values: Vec<f64>,
}

/// Figures 4–7: each site's congestion level (bars) and price (line), sites numbered from 1.
pub fn sites(title: &str, theta: &[f64], prices: &[f64]) -> Result<String, String> {
    let top = theta.iter().chain(prices).fold(1.0f64, |a, &b| a.max(b)) * 1.1;
    let sites = theta.len() as f64;
    svg(title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0.5f64..sites + 0.5, 0f64..top)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_labels(theta.len())
            .x_label_formatter(&|x| integer_label(*x))
            .x_desc("site")
            .y_desc("congestion level θ / price p")
            .draw()
            .map_err(|e| e.to_string())?;
        let bars = COLORS[0].mix(0.6);
        chart
            .draw_series(theta.iter().enumerate().map(|(m, &t)| {
                let x = m as f64 + 1.0;
                Rectangle::new([(x - 0.3, 0.0), (x + 0.3, t)], bars.filled())
            }))
            .map_err(|e| e.to_string())?
            .label("congestion θ_m")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], bars.filled()));
        let points: Vec<Point> = (prices.iter().enumerate())
            .map(|(m, &p)| Point::new(m as f64 + 1.0, p))
            .collect();
        line(&mut chart, "price p_m", &points, COLORS[1])?;
        legend(&mut chart)
    })
}

/// Figures 8–11: one group of bars per pattern, one bar per case; a missing value (an
/// infeasible case) leaves a gap.
pub fn bars(
    title: &str,
    y_desc: &str,
    groups: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> Result<String, String> {
    let top = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b));
    // Headroom above the tallest bar for the legend, drawn in the upper left.
    let top = if top > 0.0 { top * 1.4 } else { 1.0 };
    let width = 0.8 / series.len().max(1) as f64;
    svg(title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(72)
            .build_cartesian_2d(0.5f64..groups.len() as f64 + 0.5, 0f64..top)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_labels(groups.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                let label = (i - 1.0) as usize;
                match groups.get(label) {
                    Some(name) if (x - i).abs() < 1e-6 && i >= 1.0 => name.clone(),
                    _ => String::new(),
                }
            })
            .y_desc(y_desc)
            .y_label_formatter(&|y| axis_number(*y))
            .draw()
            .map_err(|e| e.to_string())?;
        for (s, (name, values)) in series.iter().enumerate() {
            let color = COLORS[s % COLORS.len()];
            let offset = -0.4 + width * s as f64;
            chart
                .draw_series(values.iter().enumerate().filter_map(|(g, v)| {
                    let x = g as f64 + 1.0 + offset;
                    v.map(|v| Rectangle::new([(x, 0.0), (x + width * 0.9, v)], color.filled()))
                }))
                .map_err(|e| e.to_string())?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.filled())
                });
        }
        legend(&mut chart)
    })
}

/// `x` when it is an integer, else nothing (ticks between sites stay bare).
fn integer_label(x: f64) -> String {
    if (x - x.round()).abs() < 1e-6 {
        format!("{}", x.round())
    } else {
        String::new()
    }
}
