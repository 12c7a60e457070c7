use super::*;
use crate::topology::{self, LoadOptions};

pub(crate) const SMALL: &str = r#"
name = "small"
[nodes.client]
command = ["/usr/bin/curl", "http://server/"]
client = true
[nodes.router]
[nodes.server]
role = "ucs"
[nodes.other]
[[links]]
endpoints = ["client", "router"]
delay = "10ms"
from.client = { rate = "5mbit" }
[[links]]
endpoints = ["router", "server"]
delay = "50ms"
[[lans]]
name = "lan"
members = ["server", "other"]
loss = "1%"
"#;

fn small() -> Picture {
    let topology = topology::parse(SMALL, "small.toml", &LoadOptions::default()).unwrap();
    Picture::of(&topology)
}

#[test]
fn nodes_lans_and_each_directions_impairments_are_in_the_picture() {
    let picture = small();
    let names: Vec<(&str, &str, VertexKind)> = picture
        .vertices
        .iter()
        .map(|v| (v.name.as_str(), v.what.as_str(), v.kind))
        .collect();
    assert_eq!(
        names,
        [
            ("client", "curl", VertexKind::Client),
            ("router", "host", VertexKind::Node),
            ("server", "ucs", VertexKind::Node),
            ("other", "host", VertexKind::Node),
            ("lan", "LAN", VertexKind::Lan),
        ]
    );
    let labels: Vec<Vec<String>> = picture
        .edges
        .iter()
        .map(|e| e.label(&picture.vertices))
        .collect();
    assert_eq!(
        labels,
        [
            vec![
                "client→router: delay 10ms rate 5mbit".to_string(),
                "router→client: delay 10ms".to_string()
            ],
            vec!["delay 50ms".to_string()],
            vec!["server→lan: loss 1%".to_string()],
            vec!["other→lan: loss 1%".to_string()],
        ]
    );
}

#[test]
fn dot_and_mermaid_name_every_vertex_and_edge() {
    let picture = small();
    let dot = picture.render(Format::Dot).unwrap();
    assert!(dot.starts_with("graph \"small\" {\n"), "{dot}");
    assert!(
        dot.contains("\"client\" -- \"router\" [label=\"client→router: delay 10ms rate 5mbit\\nrouter→client: delay 10ms\"];"),
        "{dot}"
    );
    assert!(
        dot.contains("\"lan\" [label=\"lan\\nLAN\", shape=ellipse"),
        "{dot}"
    );
    assert_eq!(dot.matches(" -- ").count(), 4, "{dot}");
    let mermaid = picture.render(Format::Mermaid).unwrap();
    assert!(
        mermaid.contains("  v0([\"client<br/>curl\"])\n"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("  v1 ---|\"delay 50ms\"| v2\n"),
        "{mermaid}"
    );
    assert_eq!(mermaid.matches(" ---").count(), 4, "{mermaid}");
}

#[test]
fn quotes_in_labels_are_escaped() {
    let mut picture = small();
    picture.vertices[0].what = "say \"hi\" \\ <b>".into();
    let dot = picture.render(Format::Dot).unwrap();
    assert!(dot.contains("client\\nsay \\\"hi\\\" \\\\ <b>"), "{dot}");
    let mermaid = picture.render(Format::Mermaid).unwrap();
    assert!(
        mermaid.contains("say #quot;hi#quot; \\ #lt;b#gt;"),
        "{mermaid}"
    );
}

#[test]
fn the_layout_puts_clients_at_the_bottom_and_each_hop_a_row_up() {
    let picture = small();
    let layout = layout(&picture);
    let y = |name: &str| {
        let i = picture
            .vertices
            .iter()
            .position(|v| v.name == name)
            .unwrap();
        layout.centres[i].1
    };
    assert!(y("client") > y("router"));
    assert!(y("router") > y("server"));
    assert!(y("server") > y("lan"));
    assert!(y("lan") > y("other"));
    let mut places = layout.centres.clone();
    places.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    places.dedup();
    assert_eq!(
        places.len(),
        picture.vertices.len(),
        "two vertices on one spot"
    );
    assert!(layout.centres.iter().all(|&(x, y)| x > 0.0
        && y > 0.0
        && x < f64::from(layout.width)
        && y < f64::from(layout.height)));
    assert_eq!(layout, super::layout(&picture), "not deterministic");
}

#[test]
fn a_row_is_ordered_by_its_neighbours_so_a_tree_does_not_cross() {
    // Two subtrees whose leaves are declared interleaved: a1 b1 a2 b2.
    let text = r#"
name = "tree"
[nodes.a1]
client = true
command = ["true"]
[nodes.b1]
client = true
command = ["true"]
[nodes.a2]
client = true
command = ["true"]
[nodes.b2]
client = true
command = ["true"]
[nodes.a]
[nodes.b]
[nodes.root]
[[links]]
endpoints = ["a1", "a"]
[[links]]
endpoints = ["b1", "b"]
[[links]]
endpoints = ["a2", "a"]
[[links]]
endpoints = ["b2", "b"]
[[links]]
endpoints = ["a", "root"]
[[links]]
endpoints = ["b", "root"]
"#;
    let picture =
        Picture::of(&topology::parse(text, "tree.toml", &LoadOptions::default()).unwrap());
    let layout = layout(&picture);
    let x = |name: &str| {
        let i = picture
            .vertices
            .iter()
            .position(|v| v.name == name)
            .unwrap();
        layout.centres[i].0
    };
    let (a_side, b_side) = if x("a") < x("b") {
        (x("a1").max(x("a2")), x("b1").min(x("b2")))
    } else {
        (x("b1").max(x("b2")), x("a1").min(x("a2")))
    };
    assert!(a_side < b_side, "the subtrees' leaves are interleaved");
}

#[test]
fn labels_wrap_between_words() {
    assert_eq!(
        svg::wrap("delay 10ms rate 4mbit limit 100", 20),
        ["delay 10ms rate", "4mbit limit 100"]
    );
    assert_eq!(
        svg::wrap("a-very-long-word-indeed x", 5),
        ["a-very-long-word-indeed", "x"]
    );
}

#[test]
fn svg_draws_every_vertex_and_drops_labels_past_the_limit() {
    let picture = small();
    let svg = picture.render(Format::Svg).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    for vertex in &picture.vertices {
        assert!(
            svg.contains(&format!("\n{}\n</text>", vertex.name)),
            "{}",
            vertex.name
        );
    }
    assert!(svg.contains("\ndelay 50ms\n"), "{svg}");
    // Long labels are wrapped between words.
    assert!(svg.contains("\nclient→router: delay\n"), "{svg}");
    assert!(svg.contains("\n10ms rate 5mbit\n"), "{svg}");
    let mut crowded = picture.clone();
    let edge = crowded.edges[1].clone();
    crowded.edges = vec![edge; svg::MAX_LABELLED_EDGES + 1];
    let svg = crowded.render(Format::Svg).unwrap();
    assert!(!svg.contains("delay 50ms"), "labels past the limit");
    assert!(svg.contains("impairments in `cdnlab check`"), "{svg}");
}
