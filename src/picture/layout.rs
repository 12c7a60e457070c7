//! Where each vertex of a picture goes: a layered drawing with the clients on the bottom row,
//! every other vertex as many rows up as it is hops away from the nearest client, and each row
//! ordered by its neighbours' places in the rows beside it (barycentres, a few sweeps), which
//! keeps most links from crossing in the trees and chains the testbed's scenarios are made of.

use super::{Picture, VertexKind};
use std::collections::VecDeque;

/// Pixels between the centres of two vertices of a row, and between rows.
pub const COLUMN: f64 = 170.0;
pub const ROW: f64 = 130.0;
/// Pixels around the drawing.
pub const MARGIN: f64 = 60.0;
/// Barycentre sweeps (each one down and one up).
const SWEEPS: usize = 4;

/// Each vertex's centre in pixels (y grows downwards), and the drawing's size.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub centres: Vec<(f64, f64)>,
    pub width: u32,
    pub height: u32,
}

/// Lays `picture` out (see the module doc). Deterministic: the same picture, the same layout.
pub fn layout(picture: &Picture) -> Layout {
    let count = picture.vertices.len();
    let mut neighbours = vec![Vec::new(); count];
    for edge in &picture.edges {
        neighbours[edge.a].push(edge.b);
        neighbours[edge.b].push(edge.a);
    }
    let rows = rows(picture, &neighbours);
    let widest = rows.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let width = 2.0 * MARGIN + widest as f64 * COLUMN;
    let height = 2.0 * MARGIN + rows.len().saturating_sub(1) as f64 * ROW;
    let mut centres = vec![(0.0, 0.0); count];
    for (level, row) in rows.iter().enumerate() {
        let y = height - MARGIN - level as f64 * ROW;
        let step = (width - 2.0 * MARGIN) / row.len() as f64;
        for (i, &vertex) in row.iter().enumerate() {
            centres[vertex] = (MARGIN + (i as f64 + 0.5) * step, y);
        }
    }
    Layout {
        centres,
        width: width.ceil() as u32,
        height: height.ceil() as u32,
    }
}

/// The rows, bottom first, each in drawing order.
fn rows(picture: &Picture, neighbours: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let count = picture.vertices.len();
    let mut level = vec![usize::MAX; count];
    let mut queue: VecDeque<usize> = (0..count)
        .filter(|&v| picture.vertices[v].kind == VertexKind::Client)
        .collect();
    if queue.is_empty() && count > 0 {
        queue.push_back(0);
    }
    for &v in &queue {
        level[v] = 0;
    }
    // A topology is connected, but a picture need not come from one: every vertex nothing
    // reached starts a search of its own on the bottom row.
    let mut next_unreached = 0;
    loop {
        while let Some(v) = queue.pop_front() {
            for &w in &neighbours[v] {
                if level[w] == usize::MAX {
                    level[w] = level[v] + 1;
                    queue.push_back(w);
                }
            }
        }
        match (next_unreached..count).find(|&v| level[v] == usize::MAX) {
            Some(v) => {
                level[v] = 0;
                queue.push_back(v);
                next_unreached = v + 1;
            }
            None => break,
        }
    }
    let depth = level.iter().copied().max().map_or(0, |d| d + 1);
    let mut rows = vec![Vec::new(); depth];
    for (v, &l) in level.iter().enumerate() {
        rows[l].push(v);
    }
    let mut place = vec![0.0; count];
    let set_places = |rows: &[Vec<usize>], place: &mut [f64]| {
        for row in rows {
            for (i, &v) in row.iter().enumerate() {
                place[v] = (i as f64 + 0.5) / row.len() as f64;
            }
        }
    };
    set_places(&rows, &mut place);
    for _ in 0..SWEEPS {
        for l in 1..depth {
            order_by_neighbours(&mut rows, l, l - 1, neighbours, &mut place);
        }
        for l in (0..depth.saturating_sub(1)).rev() {
            order_by_neighbours(&mut rows, l, l + 1, neighbours, &mut place);
        }
    }
    rows
}

/// Orders row `l` by the mean place of each vertex's neighbours on row `by` (a vertex with
/// none there keeps its own place), then renumbers the row's places.
fn order_by_neighbours(
    rows: &mut [Vec<usize>],
    l: usize,
    by: usize,
    neighbours: &[Vec<usize>],
    place: &mut [f64],
) {
    let on_by: Vec<bool> = {
        let mut on = vec![false; place.len()];
        for &v in &rows[by] {
            on[v] = true;
        }
        on
    };
    let key = |v: usize| {
        let near: Vec<f64> = neighbours[v]
            .iter()
            .filter(|&&w| on_by[w])
            .map(|&w| place[w])
            .collect();
        if near.is_empty() {
            place[v]
        } else {
            near.iter().sum::<f64>() / near.len() as f64
        }
    };
    let mut keyed: Vec<(f64, usize)> = rows[l].iter().map(|&v| (key(v), v)).collect();
    keyed.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    rows[l] = keyed.into_iter().map(|(_, v)| v).collect();
    let len = rows[l].len() as f64;
    for (i, &v) in rows[l].iter().enumerate() {
        place[v] = (i as f64 + 0.5) / len;
    }
}
