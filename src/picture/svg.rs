//! The picture as SVG on its layout: a box per node (clients shaded blue), a box shaded yellow per LAN, a
//! line per edge with its impairments beside the line's middle. Past [`MAX_LABELLED_EDGES`]
//! edges the labels would cover the drawing, so they are left out and the title says so.

use super::{Layout, Picture, VertexKind};
use crate::plot::svg_of_size;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub const MAX_LABELLED_EDGES: usize = 60;
const BOX: (f64, f64) = (140.0, 38.0);
const CLIENT_FILL: RGBColor = RGBColor(0xdb, 0xe9, 0xf6);
const LAN_FILL: RGBColor = RGBColor(0xfd, 0xf3, 0xd0);
const EDGE: RGBColor = RGBColor(0x88, 0x88, 0x88);
const LABEL: RGBColor = RGBColor(0x44, 0x44, 0x44);

fn pixel((x, y): (f64, f64)) -> (i32, i32) {
    (x.round() as i32, y.round() as i32)
}

/// Label lines are wrapped at this many characters; a character is about this wide, and a
/// line this high, in pixels.
const LABEL_CHARS: usize = 20;
const CHAR_WIDTH: f64 = 5.0;
const LINE: f64 = 11.0;

/// `line` in lines of at most `width` characters, broken between words (a longer word stays
/// whole).
pub(super) fn wrap(line: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in line.split(' ') {
        match lines.last_mut() {
            Some(last) if last.chars().count() + 1 + word.chars().count() <= width => {
                last.push(' ');
                last.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

pub fn render(picture: &Picture, layout: &Layout) -> Result<String, String> {
    let mut degree = vec![0usize; picture.vertices.len()];
    for edge in &picture.edges {
        degree[edge.a] += 1;
        degree[edge.b] += 1;
    }
    let labelled = picture.edges.len() <= MAX_LABELLED_EDGES;
    let title = if labelled {
        picture.title.clone()
    } else {
        format!(
            "{} ({} edges: impairments in `cdnlab check`)",
            picture.title,
            picture.edges.len()
        )
    };
    let text = |size: u32, colour: &'static RGBColor| {
        TextStyle::from(("sans-serif", size).into_font())
            .color(colour)
            .pos(Pos::new(HPos::Center, VPos::Center))
    };
    svg_of_size(
        &format!("picture of {}", picture.title),
        (layout.width, layout.height),
        |root| {
            let e = |e: DrawingAreaErrorKind<_>| e.to_string();
            root.draw(&Text::new(
                title.clone(),
                pixel((f64::from(layout.width) / 2.0, 20.0)),
                text(16, &BLACK),
            ))
            .map_err(e)?;
            for edge in &picture.edges {
                let (a, b) = (layout.centres[edge.a], layout.centres[edge.b]);
                root.draw(&PathElement::new(
                    vec![pixel(a), pixel(b)],
                    EDGE.stroke_width(2),
                ))
                .map_err(e)?;
                if !labelled {
                    continue;
                }
                let lines: Vec<String> = edge
                    .label(&picture.vertices)
                    .iter()
                    .flat_map(|line| wrap(line, LABEL_CHARS))
                    .collect();
                if lines.is_empty() {
                    continue;
                }
                // Nearer the end with fewer edges: around a hub, the far ends spread out.
                let t = match degree[edge.a].cmp(&degree[edge.b]) {
                    std::cmp::Ordering::Greater => 0.65,
                    std::cmp::Ordering::Less => 0.35,
                    std::cmp::Ordering::Equal => 0.5,
                };
                let at = (a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1));
                let widest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
                let half = (
                    widest as f64 * CHAR_WIDTH / 2.0 + 3.0,
                    LINE * lines.len() as f64 / 2.0 + 1.0,
                );
                root.draw(&Rectangle::new(
                    [
                        pixel((at.0 - half.0, at.1 - half.1)),
                        pixel((at.0 + half.0, at.1 + half.1)),
                    ],
                    WHITE.filled(),
                ))
                .map_err(e)?;
                let top = at.1 - LINE * (lines.len() as f64 - 1.0) / 2.0;
                for (i, line) in lines.iter().enumerate() {
                    root.draw(&Text::new(
                        line.clone(),
                        pixel((at.0, top + LINE * i as f64)),
                        text(10, &LABEL),
                    ))
                    .map_err(e)?;
                }
            }
            for (vertex, &centre) in picture.vertices.iter().zip(&layout.centres) {
                let corner = |sx: f64, sy: f64| {
                    pixel((centre.0 + sx * BOX.0 / 2.0, centre.1 + sy * BOX.1 / 2.0))
                };
                let fill = match vertex.kind {
                    VertexKind::Node => WHITE,
                    VertexKind::Client => CLIENT_FILL,
                    VertexKind::Lan => LAN_FILL,
                };
                let corners = [corner(-1.0, -1.0), corner(1.0, 1.0)];
                root.draw(&Rectangle::new(corners, fill.filled()))
                    .map_err(e)?;
                root.draw(&Rectangle::new(corners, BLACK.stroke_width(1)))
                    .map_err(e)?;
                root.draw(&Text::new(
                    vertex.name.clone(),
                    pixel((centre.0, centre.1 - 8.0)),
                    text(13, &BLACK),
                ))
                .map_err(e)?;
                root.draw(&Text::new(
                    vertex.what.clone(),
                    pixel((centre.0, centre.1 + 9.0)),
                    text(10, &LABEL),
                ))
                .map_err(e)?;
            }
            Ok(())
        },
    )
}
