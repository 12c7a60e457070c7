//! A picture of a topology: its nodes, its links and LANs, and each direction's impairments,
//! as Graphviz's dot, as a Mermaid flowchart (which Markdown viewers draw), or as SVG drawn
//! with the project's plotting stack on a layered layout. Plain functions of the topology: no
//! files, no root.

mod dot;
mod layout;
mod mermaid;
mod svg;

pub use layout::{layout, Layout};

use crate::topology::{Program, SegmentKind, Topology};

/// The formats `cdnlab graph` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Svg,
    Dot,
    Mermaid,
}

/// What is drawn: a vertex per node and per LAN, an edge per link and per LAN membership.
#[derive(Debug, Clone, PartialEq)]
pub struct Picture {
    pub title: String,
    pub vertices: Vec<Vertex>,
    pub edges: Vec<Edge>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Vertex {
    pub name: String,
    /// What runs there: the role, the command's program, or `host`; `LAN` for a LAN.
    pub what: String,
    pub kind: VertexKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VertexKind {
    Node,
    /// A node whose process the run waits for (`client = true`).
    Client,
    Lan,
}

/// An edge between vertices `a` and `b`, with the impairments of each direction that has any
/// (tc-netem's words). A LAN member's edge carries what the member sends onto the LAN as `a_to_b`.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    pub a: usize,
    pub b: usize,
    pub a_to_b: String,
    pub b_to_a: String,
}

impl Edge {
    /// The edge's label: one line when both directions are alike, one per direction
    /// otherwise (`a→b: …`), empty when neither direction is impaired.
    pub fn label(&self, vertices: &[Vertex]) -> Vec<String> {
        let (a, b) = (&vertices[self.a].name, &vertices[self.b].name);
        if self.a_to_b == self.b_to_a {
            return (!self.a_to_b.is_empty())
                .then(|| self.a_to_b.clone())
                .into_iter()
                .collect();
        }
        let mut lines = Vec::new();
        if !self.a_to_b.is_empty() {
            lines.push(format!("{a}→{b}: {}", self.a_to_b));
        }
        if !self.b_to_a.is_empty() {
            lines.push(format!("{b}→{a}: {}", self.b_to_a));
        }
        lines
    }
}

impl Picture {
    /// The picture of `topology` (after its variables are applied).
    pub fn of(topology: &Topology) -> Picture {
        let mut vertices: Vec<Vertex> = topology
            .nodes
            .iter()
            .map(|node| Vertex {
                name: node.name.clone(),
                what: match &node.program {
                    Program::None => "host".into(),
                    Program::Role { role, .. } => role.clone(),
                    Program::Command { argv } => argv
                        .first()
                        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
                        .unwrap_or_default(),
                },
                kind: if node.client {
                    VertexKind::Client
                } else {
                    VertexKind::Node
                },
            })
            .collect();
        let mut edges = Vec::new();
        for segment in &topology.segments {
            let words = |i: usize| {
                segment
                    .egress
                    .get(i)
                    .filter(|imp| !imp.is_none())
                    .map(|imp| imp.to_string())
                    .unwrap_or_default()
            };
            match segment.kind {
                SegmentKind::Link => edges.push(Edge {
                    a: segment.members[0],
                    b: segment.members[1],
                    a_to_b: words(0),
                    b_to_a: words(1),
                }),
                SegmentKind::Lan => {
                    let lan = vertices.len();
                    vertices.push(Vertex {
                        name: segment.name.clone(),
                        what: "LAN".into(),
                        kind: VertexKind::Lan,
                    });
                    edges.extend(segment.members.iter().enumerate().map(|(i, &member)| Edge {
                        a: member,
                        b: lan,
                        a_to_b: words(i),
                        b_to_a: String::new(),
                    }));
                }
            }
        }
        Picture {
            title: topology.name.clone(),
            vertices,
            edges,
        }
    }

    /// The picture in `format`.
    pub fn render(&self, format: Format) -> Result<String, String> {
        match format {
            Format::Dot => Ok(dot::render(self)),
            Format::Mermaid => Ok(mermaid::render(self)),
            Format::Svg => svg::render(self, &layout(self)),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
