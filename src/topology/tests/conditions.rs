//! `only_if`: variants of one file chosen by a variable.

use super::{errors, errors_with, parse, LoadOptions};

const VARIANTS: &str = r#"
name = "v"
[vars]
policy = "all"
[nodes.server]
[nodes.hub]
[nodes.c1]
only_if = ["${policy}", "all", "one"]
command = ["sleep", "1"]
[nodes.c2]
only_if = ["${policy}", "all", "two"]
[[links]]
endpoints = ["server", "hub"]
[[links]]
endpoints = ["hub", "c1"]
[[links]]
endpoints = ["hub", "c2"]
[[lans]]
name = "office"
members = ["server", "hub", "c2"]
from.c2 = { delay = "1ms" }
[[timeline]]
at = "1s"
stop = "c1"
[[timeline]]
at = "2s"
link = ["hub", "c2"]
delay = "5ms"
[[timeline]]
at = "3s"
signal = "c1"
"#;

fn node_names(set: &[(String, String)]) -> Vec<String> {
    let topology = parse(VARIANTS, "t.toml", &LoadOptions { name: None, set })
        .unwrap_or_else(|e| panic!("{e}"));
    topology.nodes.iter().map(|n| n.name.clone()).collect()
}

#[test]
fn a_failing_condition_removes_the_node_its_links_and_events() {
    assert_eq!(node_names(&[]), ["server", "hub", "c1", "c2"]);
    let one = [("policy".to_string(), "one".to_string())];
    assert_eq!(node_names(&one), ["server", "hub", "c1"]);
    let topology = parse(
        VARIANTS,
        "t.toml",
        &LoadOptions {
            name: None,
            set: &one,
        },
    )
    .unwrap();
    // Links to c2 went, the LAN lost c2 (and its `from.c2`), the event that named c2 went.
    assert_eq!(topology.segments.len(), 3);
    let lan = topology
        .segments
        .iter()
        .find(|s| s.name == "office")
        .unwrap();
    assert_eq!(lan.members.len(), 2);
    assert_eq!(topology.timeline.len(), 2, "c1's stop and signal stay");
    let two = [("policy".to_string(), "two".to_string())];
    assert_eq!(node_names(&two), ["server", "hub", "c2"]);
    // Without c1, the events that stop and signal it went too.
    let options = LoadOptions {
        name: None,
        set: &two,
    };
    let topology = parse(VARIANTS, "t.toml", &options).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(topology.timeline.len(), 1);
}

#[test]
fn a_malformed_condition_is_reported_where_it_is() {
    let text = "name = \"v\"\n[nodes.a]\nonly_if = [\"x\"]\n[nodes.b]\n[[links]]\nendpoints = [\"a\", \"b\"]\n";
    assert!(
        errors(text).starts_with("t.toml:3:11: `only_if` takes a value"),
        "{}",
        errors(text)
    );
    let text = "name = \"v\"\n[nodes.a]\nonly_if = \"x\"\n";
    assert!(errors_with(text, &LoadOptions::default()).contains("t.toml:3:11:"));
}
