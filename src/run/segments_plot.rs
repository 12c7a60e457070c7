//! `segments.svg` of a run: every client that logged segments (`segments.csv`, as the HAS client
//! writes it), its played bitrate and buffer level over time — what a person looks at first to
//! see a link change, a stall or a quality switch.

use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// One client's samples: (request time s, bitrate Mbit/s, buffer s).
type Series = (String, Vec<(f64, f64, f64)>);

const COLORS: [RGBColor; 4] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
];

/// Reads `segments.csv`: the columns `request_time_s`, `bitrate_bps` and `buffer_s` by header
/// name. `None` if the file is missing or has none of them.
fn read_segments(path: &Path) -> Option<Vec<(f64, f64, f64)>> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .ok()?;
    let header = reader.headers().ok()?.clone();
    let column = |name: &str| header.iter().position(|h| h == name);
    let (t, b, q) = (
        column("request_time_s")?,
        column("bitrate_bps")?,
        column("buffer_s")?,
    );
    let rows = reader
        .records()
        .filter_map(|record| {
            let record = record.ok()?;
            let number = |i: usize| record.get(i)?.parse::<f64>().ok();
            Some((number(t)?, number(b)? / 1e6, number(q)?))
        })
        .collect();
    Some(rows)
}

/// Writes `OUT/segments.svg` for the clients whose `OUT/nodes/NODE/segments.csv` exists;
/// returns the file, or `None` when no client logged segments.
pub fn plot(out: &Path, clients: &[String]) -> Result<Option<PathBuf>, String> {
    let series: Vec<Series> = clients
        .iter()
        .filter_map(|node| {
            let rows = read_segments(&out.join("nodes").join(node).join("segments.csv"))?;
            (!rows.is_empty()).then(|| (node.clone(), rows))
        })
        .collect();
    if series.is_empty() {
        return Ok(None);
    }
    let path = out.join("segments.svg");
    let max = |f: fn(&(f64, f64, f64)) -> f64| {
        series
            .iter()
            .flat_map(|(_, rows)| rows.iter().map(f))
            .fold(0.0f64, f64::max)
            .max(1.0)
    };
    let (t_max, rate_max, buffer_max) =
        (max(|r| r.0) * 1.02, max(|r| r.1) * 1.2, max(|r| r.2) * 1.2);
    let root = SVGBackend::new(&path, (760, 620)).into_drawing_area();
    let draw = |e: DrawingAreaErrorKind<_>| format!("{}: {e}", path.display());
    root.fill(&WHITE).map_err(draw)?;
    let (top, bottom) = root.split_vertically(310);
    for (area, title, y_max, pick) in [
        (
            &top,
            "played bitrate (Mbit/s)",
            rate_max,
            (|r: &(f64, f64, f64)| r.1) as fn(&_) -> f64,
        ),
        (&bottom, "buffer (s)", buffer_max, |r: &(f64, f64, f64)| r.2),
    ] {
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(32)
            .y_label_area_size(48)
            .build_cartesian_2d(0f64..t_max, 0f64..y_max)
            .map_err(draw)?;
        chart
            .configure_mesh()
            .x_desc("time since the client's session started (s)")
            .draw()
            .map_err(draw)?;
        for (i, (node, rows)) in series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    rows.iter().map(|r| (r.0, pick(r))),
                    color.stroke_width(2),
                ))
                .map_err(draw)?
                .label(node.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(draw)?;
    }
    root.present().map_err(draw)?;
    drop(top);
    drop(bottom);
    drop(root);
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_columns_by_name_and_plots_each_client() {
        let out = std::env::temp_dir().join(format!("cdnlab-segplot-{}", std::process::id()));
        let node = out.join("nodes").join("c1");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(
            node.join("segments.csv"),
            "index,quality,bitrate_bps,bytes,request_time_s,download_time_s,throughput_mbps,buffer_s,hops\n\
             0,0,500000,125000,0.5,0.3,3.3,2.000,urr:0.1\n\
             1,2,2000000,500000,1.0,0.9,4.4,3.100,urr:0.1\n",
        )
        .unwrap();
        assert_eq!(
            read_segments(&node.join("segments.csv")),
            Some(vec![(0.5, 0.5, 2.0), (1.0, 2.0, 3.1)])
        );
        let file = plot(&out, &["c1".to_string(), "absent".to_string()])
            .unwrap()
            .unwrap();
        let svg = std::fs::read_to_string(&file).unwrap();
        assert!(svg.contains("c1") && svg.contains("buffer (s)"));
        assert_eq!(plot(&out, &["absent".to_string()]).unwrap(), None);
        std::fs::remove_dir_all(&out).unwrap();
    }
}
