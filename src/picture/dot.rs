//! The picture in Graphviz's dot language (`cdnlab graph T --format dot | dot -Tpng`).

use super::{Picture, VertexKind};

/// A dot string literal: quotes and backslashes escaped, newlines as dot's `\n`.
fn quoted(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("\"{escaped}\"")
}

pub fn render(picture: &Picture) -> String {
    let mut out = format!("graph {} {{\n", quoted(&picture.title));
    out += "  node [shape=box, fontname=\"sans-serif\"];\n  edge [fontname=\"sans-serif\", fontsize=10];\n";
    for vertex in &picture.vertices {
        let style = match vertex.kind {
            VertexKind::Node => "",
            VertexKind::Client => ", style=filled, fillcolor=\"#dbe9f6\"",
            VertexKind::Lan => ", shape=ellipse, style=dashed",
        };
        out += &format!(
            "  {} [label={}{style}];\n",
            quoted(&vertex.name),
            quoted(&format!("{}\n{}", vertex.name, vertex.what))
        );
    }
    for edge in &picture.edges {
        let label = edge.label(&picture.vertices).join("\n");
        let label = if label.is_empty() {
            String::new()
        } else {
            format!(" [label={}]", quoted(&label))
        };
        out += &format!(
            "  {} -- {}{label};\n",
            quoted(&picture.vertices[edge.a].name),
            quoted(&picture.vertices[edge.b].name)
        );
    }
    out + "}\n"
}
