//! The offline reproductions' figures: lines and dots on axes that may be logarithmic (loss rates span
//! six decades). A log axis plots log10 of the values and labels its ticks as powers of ten;
//! values ≤ 0 cannot be drawn there and are left out (a content with no loss measured).

use crate::plot::{legend, svg, COLORS};
use plotters::prelude::*;

/// One series: dots (simulated values) or a line (the model).
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dots: bool,
}

pub struct Figure<'a> {
    pub caption: &'a str,
    pub x_title: &'a str,
    pub y_title: &'a str,
    pub log_x: bool,
    pub log_y: bool,
    pub series: &'a [Series],
}

fn axis(value: f64, log: bool) -> Option<f64> {
    let v = if log { value.log10() } else { value };
    v.is_finite().then_some(v)
}

fn tick(value: f64, log: bool) -> String {
    if log {
        format!("{:.0e}", 10f64.powf(value))
    } else {
        crate::plot::axis_number(value)
    }
}

/// The figure as SVG text.
pub fn render(figure: &Figure) -> Result<String, String> {
    let series: Vec<Vec<(f64, f64)>> = (figure.series.iter())
        .map(|s| {
            (s.points.iter())
                .filter_map(|&(x, y)| Some((axis(x, figure.log_x)?, axis(y, figure.log_y)?)))
                .collect()
        })
        .collect();
    let all = || series.iter().flatten();
    let range = |pick: fn(&(f64, f64)) -> f64| {
        let lo = all().map(pick).fold(f64::INFINITY, f64::min);
        let hi = all().map(pick).fold(f64::NEG_INFINITY, f64::max);
        if lo < hi {
            let pad = (hi - lo) * 0.05;
            (lo - pad, hi + pad)
        } else if lo.is_finite() {
            (lo - 1.0, lo + 1.0)
        } else {
            (0.0, 1.0)
        }
    };
    let (x0, x1) = range(|p| p.0);
    let (y0, y1) = range(|p| p.1);
    svg(figure.caption, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(figure.caption, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(72)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(figure.x_title)
            .y_desc(figure.y_title)
            .x_label_formatter(&|x| tick(*x, figure.log_x))
            .y_label_formatter(&|y| tick(*y, figure.log_y))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, (s, points)) in figure.series.iter().zip(&series).enumerate() {
            let color = COLORS[i % COLORS.len()];
            if s.dots {
                chart
                    .draw_series(points.iter().map(|&p| Circle::new(p, 2, color.filled())))
                    .map_err(|e| e.to_string())?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| Circle::new((x + 10, y), 3, color.filled()));
            } else {
                chart
                    .draw_series(LineSeries::new(
                        points.iter().copied(),
                        color.stroke_width(2),
                    ))
                    .map_err(|e| e.to_string())?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
            }
        }
        legend(&mut chart)
    })
}
