//! The picture as a Mermaid flowchart, which Markdown viewers (GitHub's among them) draw from a
//! ```` ```mermaid ```` block.

use super::{Picture, VertexKind};

/// Text inside a quoted Mermaid label: quotes as entities, lines joined with `<br/>`.
fn label(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| {
            l.replace('"', "#quot;")
                .replace('<', "#lt;")
                .replace('>', "#gt;")
        })
        .collect::<Vec<_>>()
        .join("<br/>")
}

pub fn render(picture: &Picture) -> String {
    let mut out = String::from("flowchart BT\n");
    for (i, vertex) in picture.vertices.iter().enumerate() {
        let text = label(&[vertex.name.clone(), vertex.what.clone()]);
        out += &match vertex.kind {
            VertexKind::Node => format!("  v{i}[\"{text}\"]\n"),
            VertexKind::Client => format!("  v{i}([\"{text}\"])\n"),
            VertexKind::Lan => format!("  v{i}{{{{\"{text}\"}}}}\n"),
        };
    }
    for edge in &picture.edges {
        let lines = edge.label(&picture.vertices);
        if lines.is_empty() {
            out += &format!("  v{} --- v{}\n", edge.a, edge.b);
        } else {
            out += &format!("  v{} ---|\"{}\"| v{}\n", edge.a, label(&lines), edge.b);
        }
    }
    out
}
