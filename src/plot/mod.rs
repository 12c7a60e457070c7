//! SVG figures (plotters' SVG backend writes text as `<text>`, so no font library is needed):
//! line plots with optional error bars, and the pieces other figures share (colours, a labelled
//! line, the legend, axis numbers). Used by sweeps, the ICN controller and load generators, and
//! the pricing reproduction; `scatter` draws dots and lines on axes that may be logarithmic.

pub mod scatter;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// The width of an error bar's caps, in pixels.
const ERROR_CAP_PX: u32 = 8;

/// Every figure's size in pixels.
pub const SIZE: (u32, u32) = (720, 440);

pub const COLORS: [RGBColor; 10] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// A chart with f64 axes on an SVG drawing.
pub type Chart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// One point: x, y and the half-width of its error bar (0: none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub error: f64,
}

impl Point {
    pub fn new(x: f64, y: f64) -> Point {
        Point { x, y, error: 0.0 }
    }
}

/// What a line figure shows.
pub struct Figure<'a> {
    pub caption: &'a str,
    pub x_title: &'a str,
    pub y_title: &'a str,
    /// (name, points) per line.
    pub series: &'a [(String, Vec<Point>)],
}

/// Draws into an SVG string; `draw` gets the white drawing area. Nothing touches the disk, so
/// a caller can draw every figure before writing any.
pub fn svg(
    what: &str,
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> Result<String, String> {
    svg_of_size(what, SIZE, draw)
}

/// [`svg`] on a drawing of `size` pixels.
pub fn svg_of_size(
    what: &str,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> Result<String, String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| format!("{what}: {e}"))?;
        draw(&root).map_err(|e| format!("{what}: {e}"))?;
        root.present().map_err(|e| format!("{what}: {e}"))?;
    }
    Ok(text)
}

/// The figure as SVG text: one line per series (colours in `COLORS` order), points marked,
/// error bars where a point has one. The x axis spans the data; the y axis starts at 0 unless
/// a value (or an error bar) is below it.
pub fn render_lines(figure: &Figure) -> Result<String, String> {
    let finite = || {
        figure
            .series
            .iter()
            .flat_map(|(_, p)| p)
            .filter(|p| p.x.is_finite() && p.y.is_finite())
    };
    let x_min = finite().map(|p| p.x).fold(f64::INFINITY, f64::min);
    let x_max = finite().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max);
    let y_min = finite().map(|p| p.y - p.error).fold(0.0, f64::min);
    let y_max = finite().map(|p| p.y + p.error).fold(0.0, f64::max);
    let (x_min, x_max) = if x_min < x_max {
        (x_min, x_max)
    } else if x_min.is_finite() {
        (x_min - 1.0, x_min + 1.0)
    } else {
        (0.0, 1.0)
    };
    let pad = (x_max - x_min) * 0.04;
    let y_max = if y_max > 0.0 { y_max * 1.2 } else { 1.0 };
    svg(figure.caption, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(figure.caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(72)
            .build_cartesian_2d(x_min - pad..x_max + pad, y_min * 1.15..y_max)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(figure.x_title)
            .y_desc(figure.y_title)
            .y_label_formatter(&|y| axis_number(*y))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, (name, points)) in figure.series.iter().enumerate() {
            line(&mut chart, name, points, COLORS[i % COLORS.len()])?;
        }
        legend(&mut chart)
    })
}

/// Writes the figure to `path` as SVG.
pub fn lines(path: &Path, figure: &Figure) -> Result<(), String> {
    let text = render_lines(figure)?;
    crate::atomic_write::write_atomically(path, text.as_bytes()).map_err(|e| e.to_string())
}

/// A line with a dot at each point and plotters' error bars where a point has one, labelled
/// for the legend. Points that are not finite are left out.
pub fn line(
    chart: &mut Chart,
    name: &str,
    points: &[Point],
    color: RGBColor,
) -> Result<(), String> {
    let points: Vec<&Point> = points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .collect();
    chart
        .draw_series(LineSeries::new(
            points.iter().map(|p| (p.x, p.y)),
            color.stroke_width(2),
        ))
        .map_err(|e| e.to_string())?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    chart
        .draw_series(
            points
                .iter()
                .map(|p| Circle::new((p.x, p.y), 3, color.filled())),
        )
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(points.iter().filter(|p| p.error > 0.0).map(|p| {
            ErrorBar::new_vertical(
                p.x,
                p.y - p.error,
                p.y,
                p.y + p.error,
                color.stroke_width(1),
                ERROR_CAP_PX,
            )
        }))
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The legend of every labelled series, in the upper left.
pub fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())
}

/// An axis value: whole numbers from 100 up (costs, payments), else up to 4 decimals.
pub fn axis_number(y: f64) -> String {
    if y.abs() >= 100.0 {
        format!("{y:.0}")
    } else {
        let text = format!("{y:.4}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A vertical bar from y − error to y + error with caps `cap` wide on each side. A path rather
/// than plotters' `ErrorBar`, which needs the `errorbar` feature the crate does not enable.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_render_every_series_and_skip_what_is_not_finite() {
        let series = vec![
            (
                "up".to_string(),
                vec![
                    Point::new(0.0, 1.0),
                    Point {
                        x: 1.0,
                        y: 2.0,
                        error: 0.5,
                    },
                ],
            ),
            (
                "gap".to_string(),
                vec![Point::new(f64::NAN, 1.0), Point::new(2.0, -1.0)],
            ),
        ];
        let svg = render_lines(&Figure {
            caption: "a caption",
            x_title: "x",
            y_title: "y",
            series: &series,
        })
        .expect("renders");
        assert!(svg.starts_with("<svg") && svg.contains("a caption"));
        assert!(
            svg.contains("\nup\n") && svg.contains("\ngap\n"),
            "both in the legend"
        );
        // The one error bar: its stem and two caps, in the first series' colour.
        let bar_lines = svg
            .lines()
            .filter(|l| l.starts_with("<line") && l.contains("stroke=\"#D62728\""))
            .count();
        assert_eq!(bar_lines, 3, "{svg}");
    }

    #[test]
    fn axis_numbers() {
        assert_eq!(axis_number(604_665.4), "604665");
        assert_eq!(axis_number(0.25), "0.25");
        assert_eq!(axis_number(3.0), "3");
    }
}
