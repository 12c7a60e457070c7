//! What a valid file turns into: programs, variables, impairments, timeline.

use super::topology;
use crate::topology::{
    load, parse, LoadOptions, Program, Ready, SegmentKind, TimelineAction, TimelineEvent,
};
use netem::{Distribution, Impairments, ImpairmentsChange};
use std::path::Path;

/// The format reference's example (with a role that exists).
const EXAMPLE: &str = r#"name = "chain"
[vars]
internet_delay = "50ms"
host = "server"

[nodes.client]
command = ["curl", "-sf", "http://${host}:8080/"]
client = true
env = { TARGET = "${host}" }
[nodes.router]
[nodes.server]
command = ["python3", "-m", "http.server", "8080"]
ready = { tcp = 8080 }
ready_timeout = "3s"
[nodes.edge]
role = "probe"
config = { port = 80, upstream = "http://${host}/", nested = { list = [1, "${internet_delay}"] } }
ready = { command = ["curl", "-sf", "http://edge/"] }

[[links]]
endpoints = ["client", "router"]
delay = "10ms"
rate = "20mbit"
from.client = { rate = "5mbit", loss = "1%" }
subnet = "198.19.0.0/30"

[[links]]
endpoints = ["router", "server"]
delay = "${internet_delay}"
jitter = "5ms"
distribution = "normal"
limit = 500

[[lans]]
name = "office"
members = ["router", "edge", "client"]
delay = "1ms"
from.edge = { loss = "2%" }

[[timeline]]
at = "20s"
stop = "server"
[[timeline]]
at = "10s"
link = ["server", "router"]
from = "router"
delay = "${internet_delay}"
rate = "unlimited"
[[timeline]]
at = "10s"
lan = "office"
loss = "0%"
[[timeline]]
at = "30s"
start = "server"
"#;

#[test]
fn nodes_keep_declaration_order_and_settings() {
    let t = topology(EXAMPLE);
    assert_eq!(t.name, "chain");
    let names: Vec<&str> = t.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["client", "router", "server", "edge"]);
    let client = &t.nodes[0];
    assert_eq!(
        client.program,
        Program::Command {
            argv: vec!["curl".into(), "-sf".into(), "http://server:8080/".into()]
        }
    );
    assert!(client.client);
    assert_eq!(client.env.get("TARGET").map(String::as_str), Some("server"));
    assert_eq!(client.ready, None);
    assert_eq!(t.nodes[1].program, Program::None);
    let server = &t.nodes[2];
    assert_eq!(server.ready, Some(Ready::Tcp(8080)));
    assert_eq!(server.ready_timeout_ns, 3_000_000_000);
    assert!(!server.client);
    let edge = &t.nodes[3];
    let expected_config: toml::Table = toml::from_str(
        r#"port = 80
upstream = "http://server/"
nested = { list = [1, "50ms"] }"#,
    )
    .unwrap();
    assert_eq!(
        edge.program,
        Program::Role {
            role: "probe".into(),
            config: expected_config
        }
    );
    assert_eq!(
        edge.ready,
        Some(Ready::Command(vec![
            "curl".into(),
            "-sf".into(),
            "http://edge/".into()
        ]))
    );
    assert_eq!(edge.ready_timeout_ns, 10_000_000_000);
}

#[test]
fn segments_carry_shared_and_per_direction_impairments() {
    let t = topology(EXAMPLE);
    let kinds: Vec<(&str, SegmentKind, &[usize])> = t
        .segments
        .iter()
        .map(|s| (s.name.as_str(), s.kind, s.members.as_slice()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("client-router", SegmentKind::Link, &[0, 1][..]),
            ("router-server", SegmentKind::Link, &[1, 2][..]),
            ("office", SegmentKind::Lan, &[1, 3, 0][..]),
        ]
    );
    let shared = Impairments {
        delay_ns: 10_000_000,
        rate_bps: Some(20_000_000),
        ..Impairments::default()
    };
    let from_client = Impairments {
        rate_bps: Some(5_000_000),
        loss: 0.01,
        ..shared.clone()
    };
    assert_eq!(t.segments[0].egress, [from_client, shared]);
    let internet = Impairments {
        delay_ns: 50_000_000,
        jitter_ns: 5_000_000,
        distribution: Some(Distribution::Normal),
        limit: 500,
        ..Impairments::default()
    };
    assert_eq!(t.segments[1].egress, [internet.clone(), internet]);
    let lan = Impairments {
        delay_ns: 1_000_000,
        ..Impairments::default()
    };
    let from_edge = Impairments {
        loss: 0.02,
        ..lan.clone()
    };
    assert_eq!(t.segments[2].egress, [lan.clone(), from_edge, lan]);
}

#[test]
fn timeline_is_sorted_and_resolved() {
    let t = topology(EXAMPLE);
    assert_eq!(
        t.timeline,
        [
            TimelineEvent {
                at_ns: 10_000_000_000,
                action: TimelineAction::SetLink {
                    segment: 1,
                    from: vec![1],
                    change: ImpairmentsChange {
                        delay_ns: Some(50_000_000),
                        rate_bps: Some(None),
                        ..Default::default()
                    },
                },
            },
            TimelineEvent {
                at_ns: 10_000_000_000,
                action: TimelineAction::SetLink {
                    segment: 2,
                    from: vec![1, 3, 0],
                    change: ImpairmentsChange {
                        loss: Some(0.0),
                        ..Default::default()
                    },
                },
            },
            TimelineEvent {
                at_ns: 20_000_000_000,
                action: TimelineAction::StopNode { node: 2 },
            },
            TimelineEvent {
                at_ns: 30_000_000_000,
                action: TimelineAction::StartNode { node: 2 },
            },
        ]
    );
}

#[test]
fn set_overrides_variables_everywhere_they_are_used() {
    let set = [
        ("internet_delay".to_string(), "200ms".to_string()),
        ("host".to_string(), "edge".to_string()),
    ];
    let t = parse(
        EXAMPLE,
        "t.toml",
        &LoadOptions {
            name: Some("other"),
            set: &set,
        },
    )
    .unwrap();
    assert_eq!(t.name, "other");
    assert_eq!(
        t.vars.get("internet_delay").map(String::as_str),
        Some("200ms")
    );
    assert_eq!(t.segments[1].egress[0].delay_ns, 200_000_000);
    assert_eq!(
        t.nodes[0].program,
        Program::Command {
            argv: vec!["curl".into(), "-sf".into(), "http://edge:8080/".into()]
        }
    );
    let TimelineAction::SetLink { change, .. } = &t.timeline[0].action else {
        panic!("{:?}", t.timeline[0]);
    };
    assert_eq!(change.delay_ns, Some(200_000_000));
}

#[test]
fn numbers_may_come_from_variables_and_dollars_can_be_escaped() {
    let text = r#"name = "t"
[vars]
port = "9000"
queue = "64"
[nodes.a]
command = ["sh", "-c", "echo $HOME $${port} ${port}"]
ready = { tcp = "${port}" }
[nodes.b]
[[links]]
endpoints = ["a", "b"]
limit = "${queue}"
"#;
    let t = topology(text);
    assert_eq!(
        t.nodes[0].program,
        Program::Command {
            argv: vec!["sh".into(), "-c".into(), "echo $HOME ${port} 9000".into()]
        }
    );
    assert_eq!(t.nodes[0].ready, Some(Ready::Tcp(9000)));
    assert_eq!(t.segments[0].egress[0].limit, 64);
}

#[test]
fn shipped_examples_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies");
    let chain = load(&dir.join("chain.toml"), &LoadOptions::default()).unwrap();
    assert_eq!(chain.name, "chain");
    assert_eq!(chain.nodes.len(), 3);
    assert_eq!(chain.segments[1].egress[0].delay_ns, 50_000_000);
    assert!(chain.nodes[0].client);
    let tree = load(&dir.join("tree100.toml"), &LoadOptions::default()).unwrap();
    assert_eq!(tree.nodes.len(), 100);
    assert_eq!(tree.segments.len(), 99);
    assert!(tree
        .segments
        .iter()
        .all(|s| s.egress.iter().all(|e| e.delay_ns == 1_000_000)));
}

#[test]
fn the_format_reference_example_parses() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/README.md"))
            .unwrap();
    let example = readme
        .split("## A complete example")
        .nth(1)
        .and_then(|rest| rest.split("```toml\n").nth(1))
        .and_then(|block| block.split("```").next())
        .unwrap();
    let t = topology(example);
    assert_eq!(t.nodes.len(), 4);
    assert_eq!(t.segments.len(), 3);
    assert_eq!(t.timeline.len(), 2);
}

#[test]
fn a_signal_event_names_its_node() {
    let t = topology(
        r#"name = "t"
[nodes.load]
command = ["x"]
client = true
[[timeline]]
at = "25s"
signal = "load"
"#,
    );
    assert_eq!(
        t.timeline,
        [TimelineEvent {
            at_ns: 25_000_000_000,
            action: TimelineAction::SignalNode { node: 0 },
        }]
    );
}
