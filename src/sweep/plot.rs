//! SVG line plots of a sweep: one file per facet, one line per series, with error bars for the
//! 95% confidence interval of each point that has one.

use super::table::Grouped;
use crate::plot::{lines, Figure, Point};
use std::path::{Path, PathBuf};

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
        let (name, caption) = if facet.is_empty() {
            (format!("{y}-vs-{x}.svg"), format!("{y} vs {x}"))
        } else {
            (
                format!("{y}-vs-{x}-{}.svg", facet.replace(['/', ' ', ','], "_")),
                format!("{y} vs {x} ({facet})"),
            )
        };
        let path = dir.join(name);
        let series: Vec<(String, Vec<Point>)> = series
            .iter()
            .map(|(name, points)| {
                let points = points
                    .iter()
                    .map(|p| Point {
                        x: p.x,
                        y: p.mean,
                        error: p.ci,
                    })
                    .collect();
                (name.clone(), points)
            })
            .collect();
        lines(
            &path,
            &Figure {
                caption: &caption,
                x_title,
                y_title: y,
                series: &series,
            },
        )?;
        written.push(path);
    }
    Ok(written)
}
