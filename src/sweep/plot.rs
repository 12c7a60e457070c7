//! SVG line plots of a sweep: one file per facet, one line per series, with error bars for the
//! 95% confidence interval of each point that has one.

use super::table::{Grouped, Point};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const COLORS: [RGBColor; 6] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

/// Writes `DIR/Y-vs-X[-FACET].svg` for every facet; returns the files written.
pub fn plot(
    grouped: &Grouped,
    x: &str,
    x_title: &str,
    y: &str,
    dir: &Path,
) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for (facet, series) in &grouped.facets {
        let name = if facet.is_empty() {
            format!("{y}-vs-{x}.svg")
        } else {
            format!("{y}-vs-{x}-{}.svg", facet.replace(['/', ' ', ','], "_"))
        };
        let path = dir.join(name);
        let points: Vec<&Point> = series.values().flatten().collect();
        let x_max = points.iter().map(|p| p.x).fold(0.0f64, f64::max);
        let y_max = points.iter().map(|p| p.mean + p.ci).fold(0.0f64, f64::max);
        // A wide interval may reach below zero; the axis shows it rather than clipping it.
        let y_min = points.iter().map(|p| p.mean - p.ci).fold(0.0f64, f64::min);
        let x_max = if x_max > 0.0 { x_max * 1.05 } else { 1.0 };
        let y_max = if y_max > 0.0 { y_max * 1.15 } else { 1.0 };
        let y_min = y_min * 1.15;
        let caption = if facet.is_empty() {
            format!("{y} vs {x}")
        } else {
            format!("{y} vs {x} ({facet})")
        };
        let root = SVGBackend::new(&path, (720, 440)).into_drawing_area();
        let draw = |e: DrawingAreaErrorKind<_>| format!("{}: {e}", path.display());
        root.fill(&WHITE).map_err(draw)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..x_max, y_min..y_max)
            .map_err(draw)?;
        chart
            .configure_mesh()
            .x_desc(x_title)
            .y_desc(y)
            .draw()
            .map_err(draw)?;
        for (i, (name, line)) in series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    line.iter().map(|p| (p.x, p.mean)),
                    color.stroke_width(2),
                ))
                .map_err(draw)?
                .label(name.as_str())
                .legend(move |(lx, ly)| {
                    PathElement::new(vec![(lx, ly), (lx + 20, ly)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    line.iter()
                        .map(|p| Circle::new((p.x, p.mean), 3, color.filled())),
                )
                .map_err(draw)?;
            chart
                .draw_series(
                    line.iter()
                        .filter(|p| p.ci > 0.0)
                        .map(|p| error_bar(p, x_max / 100.0, color)),
                )
                .map_err(draw)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(draw)?;
        root.present().map_err(draw)?;
        drop(chart);
        drop(root);
        written.push(path);
    }
    Ok(written)
}

/// A vertical bar from mean − ci to mean + ci with caps `cap` wide on each side. A path rather
/// than plotters' `ErrorBar`, which needs the `errorbar` feature the crate does not enable.
fn error_bar(point: &Point, cap: f64, color: RGBColor) -> PathElement<(f64, f64)> {
    let (x, low, high) = (point.x, point.mean - point.ci, point.mean + point.ci);
    PathElement::new(
        vec![
            (x - cap, low),
            (x + cap, low),
            (x, low),
            (x, high),
            (x - cap, high),
            (x + cap, high),
        ],
        color.stroke_width(1),
    )
}
