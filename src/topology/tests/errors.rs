//! Every validation error, with its message and exact `FILE:LINE:COL`.

use super::{errors, errors_with};
use crate::topology::LoadOptions;

const IMPAIRMENT_LIST: &str =
    "delay, jitter, delay_correlation, distribution, loss, loss_correlation, rate, limit";

#[test]
fn toml_syntax() {
    assert_eq!(
        errors("name = \"t\"\n[nodes.a\n"),
        "t.toml:2:9: invalid TOML: unclosed table, expected `]`"
    );
    assert_eq!(
        errors("name = \"t\"\n[nodes.a]\n[nodes.a]\n"),
        "t.toml:3:8: invalid TOML: duplicate key"
    );
}

#[test]
fn unknown_keys_anywhere() {
    let text = r#"name = "t"
colour = "red"
[nodes.a]
comand = ["x"]
[nodes.b]
[[links]]
endpoints = ["a", "b"]
delay = "1ms"
dealy = "2ms"
from.a = { rat = "1mbit" }
"#;
    assert_eq!(
        errors(text),
        format!(
            "t.toml:2:1: unknown key `colour` in the file; expected one of: name, vars, nodes, links, lans, timeline\n\
             t.toml:4:1: unknown key `comand` in node `a`; expected one of: role, config, command, ready, ready_timeout, env, client, transit, host\n\
             t.toml:9:1: unknown key `dealy` in a link; expected one of: endpoints, subnet, from, {IMPAIRMENT_LIST}\n\
             t.toml:10:12: unknown key `rat` in `from.a`; expected one of: {IMPAIRMENT_LIST}"
        )
    );
    let text = r#"name = "t"
[nodes.a]
command = ["x"]
ready = { tcp = 80, udp = 53 }
[[timeline]]
at = "1s"
stop = "a"
when = "now"
"#;
    assert_eq!(
        errors(text),
        format!(
            "t.toml:4:21: unknown key `udp` in `ready`; expected one of: tcp, command\n\
             t.toml:8:1: unknown key `when` in a timeline event; expected one of: at, link, lan, from, stop, start, signal, {IMPAIRMENT_LIST}"
        )
    );
    let text = r#"name = "t"
[nodes.a]
[nodes.b]
[[lans]]
name = "office"
members = ["a", "b"]
size = 2
"#;
    assert_eq!(
        errors(text),
        format!("t.toml:7:1: unknown key `size` in a LAN; expected one of: name, members, subnet, from, {IMPAIRMENT_LIST}")
    );
}

#[test]
fn wrong_value_types() {
    let text = r#"name = "t"
[nodes.a]
command = "serve"
[nodes.b]
command = ["x", 1]
[links]
endpoints = ["a", "b"]
"#;
    assert_eq!(
        errors(text),
        "t.toml:3:11: `command` must be an array of strings, not a string\n\
         t.toml:5:17: `command` must hold strings, not an integer\n\
         t.toml:6:1: `links` must be an array of tables: write each one as [[links]]"
    );
}

#[test]
fn unknown_nodes_in_links_and_lans() {
    let text = r#"name = "t"
[nodes.a]
[nodes.b]
[[links]]
endpoints = ["a", "c"]
delay = "5"
[[lans]]
name = "office"
members = ["a", "b", "d"]
loss = "200%"
"#;
    // The impairments are checked too: they do not depend on the nodes.
    assert_eq!(
        errors(text),
        "t.toml:5:19: unknown node `c`; the nodes are: a, b\n\
         t.toml:6:9: delay: `5` has no unit; write it as e.g. `50ms`, `1.5s` or `500us`\n\
         t.toml:9:22: unknown node `d`; the nodes are: a, b\n\
         t.toml:10:8: loss: `200%` is outside 0% to 100%"
    );
}

#[test]
fn unknown_nodes_in_from_and_timeline() {
    let text = r#"name = "t"
[nodes.a]
command = ["x"]
[nodes.b]
[[links]]
endpoints = ["a", "b"]
from.c = { delay = "1ms" }
[[timeline]]
at = "1s"
stop = "z"
[[timeline]]
at = "2s"
link = ["a", "b"]
from = "y"
delay = "5ms"
"#;
    assert_eq!(
        errors(text),
        "t.toml:7:6: unknown node `c`; the nodes are: a, b\n\
         t.toml:10:8: unknown node `z`; the nodes are: a, b\n\
         t.toml:14:8: unknown node `y`; the nodes are: a, b"
    );
}

#[test]
fn from_must_name_a_node_on_the_segment() {
    let text = r#"name = "t"
[nodes.a]
[nodes.b]
[nodes.c]
[[links]]
endpoints = ["a", "b"]
from.c = { delay = "1ms" }
[[lans]]
name = "lan"
members = ["b", "c"]
[[timeline]]
at = "1s"
lan = "lan"
from = "a"
loss = "1%"
"#;
    assert_eq!(
        errors(text),
        "t.toml:7:6: `c` is not on this link, which joins a, b\n\
         t.toml:14:8: `a` is not on LAN lan"
    );
}

#[test]
fn duplicate_names_and_links() {
    let text = r#"name = "t"
[nodes.a]
[nodes.b]
[[links]]
endpoints = ["a", "a"]
[[links]]
endpoints = ["a", "b"]
[[links]]
endpoints = ["b", "a"]
[[lans]]
name = "b"
members = ["a", "b"]
[[lans]]
name = "office"
members = ["a", "b", "a"]
[[lans]]
name = "office"
members = ["a", "b"]
"#;
    assert_eq!(
        errors(text),
        "t.toml:5:19: a link joins two different nodes, and `a` is named twice\n\
         t.toml:9:13: a second link between `b` and `a` (the first is on line 7)\n\
         t.toml:11:8: `b` is already the name of a node (line 3)\n\
         t.toml:15:22: `a` is a member twice\n\
         t.toml:17:8: a second LAN named `office` (the first is on line 14)"
    );
}

/// Programs that could not run are refused where they are written: an empty one, or one
/// with a NUL byte in an argument or its environment.
#[test]
fn empty_programs_and_nul_bytes_are_refused() {
    let text = r#"name = "t"
[nodes.a]
command = ["sleep", "1\u0000"]
env = { X = "1\u0000" }
[nodes.b]
command = ["sleep", "1"]
ready = { command = [" "] }
[[links]]
endpoints = ["a", "b"]
"#;
    assert_eq!(
        errors(text),
        "t.toml:3:21: a command's argument cannot hold a NUL byte\n\
         t.toml:4:13: an environment value cannot hold a NUL byte\n\
         t.toml:7:22: the program to run is empty"
    );
}

/// A link is named after its nodes, so a LAN, or another link, could take its name.
#[test]
fn a_segment_cannot_take_another_ones_name() {
    let lan = r#"name = "t"
[nodes.a]
[nodes.b]
[nodes.c]
[[links]]
endpoints = ["a", "b"]
[[lans]]
name = "a-b"
members = ["a", "c"]
"#;
    assert_eq!(
        errors(lan),
        "t.toml:7:1: LAN a-b has the name of link a-b (line 5): rename a node, or the LAN"
    );
    let links = r#"name = "t"
[nodes.a]
[nodes.c]
[nodes.a-b]
[nodes.b-c]
[[links]]
endpoints = ["a-b", "c"]
[[links]]
endpoints = ["a", "b-c"]
"#;
    assert_eq!(
        errors(links),
        "t.toml:8:1: link a-b-c has the name of link a-b-c (line 6): rename a node, or the LAN"
    );
}

#[test]
fn bad_impairment_values() {
    let text = r#"name = "t"
[nodes.a]
[nodes.b]
[[links]]
endpoints = ["a", "b"]
delay = "10"
jitter = "-5ms"
loss = "101%"
rate = "0mbit"
limit = 0
distribution = "gauss"
delay_correlation = 5
from.a = { loss_correlation = "x%" }
"#;
    assert_eq!(
        errors(text),
        "t.toml:6:9: delay: `10` has no unit; write it as e.g. `50ms`, `1.5s` or `500us`\n\
         t.toml:7:10: jitter: `-5ms` is negative; a time must be 0 or more\n\
         t.toml:8:8: loss: `101%` is outside 0% to 100%\n\
         t.toml:9:8: rate: `0mbit`: a rate must be above 0\n\
         t.toml:10:9: limit: a queue limit must be at least 1 packet\n\
         t.toml:11:16: distribution: unknown distribution `gauss` (use uniform, normal, pareto or paretonormal)\n\
         t.toml:12:21: `delay_correlation` must be a string like delay_correlation = \"25%\", not an integer\n\
         t.toml:13:31: loss_correlation: `x%` does not start with a number"
    );
}

/// A jitter table without a delay is refused where it is written, shared or per sender, as tc
/// would refuse it on a kernel with netem: a file means the same on either backend.
#[test]
fn a_distribution_table_without_a_delay() {
    let text = r#"name = "t"
[nodes.a]
[nodes.b]
[nodes.c]
[[links]]
endpoints = ["a", "b"]
jitter = "2ms"
distribution = "normal"
[[links]]
endpoints = ["b", "c"]
delay = "5ms"
jitter = "2ms"
distribution = "pareto"
from.c = { delay = "0ms" }
[[links]]
endpoints = ["a", "c"]
delay = "5ms"
[[timeline]]
at = "2s"
link = ["a", "c"]
jitter = "1ms"
distribution = "paretonormal"
[[timeline]]
at = "1s"
link = ["a", "c"]
from = "c"
delay = "0ms"
[[lans]]
name = "office"
members = ["a", "b", "c"]
jitter = "2ms"
distribution = "normal"
from.a = { delay = "1ms" }
from.b = { delay = "2ms" }
from.c = { delay = "3ms" }
"#;
    // The 2 s change comes after the 1 s one, which took c's delay away: it is the one refused.
    // The LAN's shared keys hold a table without a delay, but each member gives its own.
    assert_eq!(
        errors(text),
        "t.toml:8:16: jitter with `distribution normal` needs a delay above 0 (tc refuses a \
         distribution table without one)\n\
         t.toml:14:20: jitter with `distribution pareto` needs a delay above 0 (tc refuses a \
         distribution table without one)\n\
         t.toml:18:1: after this change, what c sends: jitter with `distribution paretonormal` \
         needs a delay above 0 (tc refuses a distribution table without one)"
    );
}

#[test]
fn bad_limits_and_times() {
    let text = r#"name = "t"
[nodes.a]
command = ["x"]
ready = { tcp = 80 }
ready_timeout = "0s"
[nodes.b]
[[links]]
endpoints = ["a", "b"]
limit = -2
from.b = { limit = 70000 }
[[timeline]]
at = "soon"
stop = "a"
"#;
    assert_eq!(
        errors(text),
        "t.toml:5:17: ready_timeout: must be above 0\n\
         t.toml:9:9: limit: `-2` is not a whole number of packets\n\
         t.toml:10:20: limit: a queue limit of 70000 packets is above the maximum, 65536 (what \
         the kernel's NFQUEUE holds)\n\
         t.toml:12:6: at: `soon` does not start with a number"
    );
}

#[test]
fn roles_commands_and_names() {
    let text = r#"name = "Big_Lab"
[nodes.a]
role = "probe"
command = ["x"]
[nodes.b]
role = "cdn-server"
[nodes.C]
[nodes.d]
config = { port = 80 }
"#;
    assert_eq!(
        errors(text),
        "t.toml:1:8: bad lab name `Big_Lab`: use 1 to 20 lowercase letters, digits and `-`, starting with a letter\n\
         t.toml:4:11: a node runs a `role` or a `command`, not both\n\
         t.toml:6:8: unknown role `cdn-server`; the roles are: probe, has-client, ucs, dcs, urr, drr, cloud, fdn, fog-viewers, icn-router, icn-border, cdn-site, controller, icn-load, farm-server, farm-dispatcher, farm-datacenter, farm-load, p2p-tracker, p2p-peer, p2p-cloud\n\
         t.toml:7:8: bad node name `C`: use 1 to 63 lowercase letters, digits and `-`, starting with a letter and not ending with `-`\n\
         t.toml:9:10: `config` holds a role's settings, and this node has no `role`"
    );
}

#[test]
fn lab_name_from_the_command_line_or_missing() {
    let text = "name = \"t\"\n[nodes.a]\n";
    assert_eq!(
        errors_with(
            text,
            &LoadOptions {
                name: Some("Lab!"),
                set: &[]
            }
        ),
        "--name: bad lab name `Lab!`: use 1 to 20 lowercase letters, digits and `-`, starting with a letter"
    );
    assert_eq!(
        errors("[nodes.a]\n"),
        "t.toml: no lab name: add `name = \"...\"` at the top, or pass --name"
    );
    assert_eq!(
        errors("name = \"t\"\n"),
        "t.toml: no nodes: declare at least one, e.g. [nodes.client]"
    );
}

#[test]
fn settings_that_need_something_running() {
    let text = r#"name = "t"
[nodes.a]
ready = { tcp = 80 }
env = { X = "1" }
client = true
[nodes.b]
command = ["x"]
ready_timeout = "5s"
[nodes.c]
command = ["x"]
ready = { tcp = 70000 }
[nodes.d]
command = ["x"]
ready = {}
"#;
    assert_eq!(
        errors(text),
        "t.toml:3:9: `ready` on a plain host: nothing runs in it to wait for; give the node a `role` or a `command`\n\
         t.toml:4:7: `env` on a plain host: nothing runs in it to read it; give the node a `role` or a `command`\n\
         t.toml:5:10: a client must run something: give the node a `role` or a `command`\n\
         t.toml:8:17: `ready_timeout` without `ready`: nothing to wait for\n\
         t.toml:11:17: `tcp` must be a port from 1 to 65535, not 70000\n\
         t.toml:14:9: `ready` needs `tcp = PORT` or `command = [\"PROGRAM\", ...]`"
    );
}

#[test]
fn every_problem_of_a_node_is_reported() {
    let text = r#"name = "t"
[nodes.e]
role = "probe"
command = ["x"]
env = { A = 1, "B=C" = "2" }
client = "yes"
ready = { tcp = 80 }
ready_timeout = "5"
"#;
    assert_eq!(
        errors(text),
        "t.toml:4:11: a node runs a `role` or a `command`, not both\n\
         t.toml:5:13: `A` must be a string, not an integer\n\
         t.toml:5:16: `B=C` cannot be an environment variable's name\n\
         t.toml:6:10: `client` must be true or false, not a string\n\
         t.toml:8:17: ready_timeout: `5` has no unit; write it as e.g. `50ms`, `1.5s` or `500us`"
    );
}

#[test]
fn disconnected_graph_names_the_unreachable_nodes() {
    let text = r#"name = "t"
[nodes.a]
[nodes.b]
[nodes.c]
[nodes.d]
[[links]]
endpoints = ["a", "c"]
"#;
    assert_eq!(
        errors(text),
        "t.toml:3:8: the topology is not connected: no links or LANs lead from `a` to `b`, `d`"
    );
}

#[test]
fn unset_variables_and_unknown_set_names() {
    let text = r#"name = "t"
[vars]
d = "1ms"
[nodes.a]
[nodes.b]
[[links]]
endpoints = ["a", "b"]
delay = "${delay}"
"#;
    let set = [("dly".to_string(), "5ms".to_string())];
    // The unset variable is reported once: not again as a bad time.
    assert_eq!(
        errors_with(
            text,
            &LoadOptions {
                name: None,
                set: &set
            }
        ),
        "t.toml:8:9: `${delay}`: no such variable; the file's variables are: d\n\
         --set dly: no such variable; the file's variables are: d"
    );
    let text = "name = \"t\"\n[nodes.a]\ncommand = [\"x\", \"${port\"]\n";
    assert_eq!(
        errors(text),
        "t.toml:3:17: unterminated `${` (write `$${` for a literal `${`)"
    );
}

#[test]
fn subnets_must_be_networks_big_enough() {
    let text = r#"name = "t"
[nodes.a]
[nodes.b]
[nodes.c]
[[lans]]
name = "lan"
members = ["a", "b", "c"]
subnet = "10.0.0.0/30"
[[lans]]
name = "lan2"
members = ["a", "c"]
subnet = "10.1.0.1/30"
[[links]]
endpoints = ["a", "b"]
subnet = "10.2.0.0"
"#;
    assert_eq!(
        errors(text),
        "t.toml:8:10: subnet 10.0.0.0/30 has room for 2 addresses, and this LAN has 3 members; use a /29 or shorter prefix\n\
         t.toml:12:10: `10.1.0.1/30` is not a network address; did you mean 10.1.0.0/30?\n\
         t.toml:15:10: `10.2.0.0` is not a subnet; write it as e.g. \"198.19.0.0/30\""
    );
}

#[test]
fn subnets_must_not_overlap() {
    let text = r#"name = "t"
[nodes.a]
[nodes.b]
[nodes.c]
[[links]]
endpoints = ["a", "b"]
subnet = "198.19.0.0/24"
[[links]]
endpoints = ["b", "c"]
subnet = "198.19.0.4/30"
"#;
    assert_eq!(
        errors(text),
        "t.toml:10:10: subnet 198.19.0.4/30 overlaps 198.19.0.0/24, the subnet of link a-b (line 7)"
    );
}

#[test]
fn pool_exhaustion() {
    let text = r#"name = "t"
[nodes.a]
[nodes.b]
[nodes.c]
[[links]]
endpoints = ["a", "b"]
subnet = "198.18.0.0/15"
[[links]]
endpoints = ["b", "c"]
"#;
    assert_eq!(
        errors(text),
        "t.toml:8:1: the address pool 198.18.0.0/15 is full: no room for a /30 for link b-c"
    );
}

#[test]
fn timeline_events_must_make_sense() {
    let text = r#"name = "t"
[nodes.a]
command = ["x"]
[nodes.b]
[nodes.c]
[[links]]
endpoints = ["a", "b"]
[[links]]
endpoints = ["b", "c"]
[[timeline]]
at = "1s"
link = ["a", "c"]
delay = "5ms"
[[timeline]]
at = "2s"
link = ["a", "b"]
[[timeline]]
at = "3s"
stop = "b"
[[timeline]]
at = "4s"
start = "a"
rate = "1mbit"
[[timeline]]
stop = "a"
start = "a"
[[timeline]]
at = "5s"
lan = "nope"
delay = "1ms"
"#;
    assert_eq!(
        errors(text),
        format!(
            "t.toml:12:8: no link between `a` and `c`\n\
             t.toml:14:1: this event changes nothing: give at least one of {IMPAIRMENT_LIST}\n\
             t.toml:19:8: `b` is a plain host: nothing runs in it to stop\n\
             t.toml:23:1: `rate` does not apply to a `start` event\n\
             t.toml:24:1: a timeline event needs `at`, its time after the clients start (e.g. at = \"10s\")\n\
             t.toml:26:1: `stop` and `start` in one event: write them as two [[timeline]] events\n\
             t.toml:29:7: no LAN named `nope`; the file has no [[lans]]"
        )
    );
}

#[test]
fn a_missing_file_is_named() {
    let error = crate::topology::load(
        std::path::Path::new("/nonexistent/x.toml"),
        &LoadOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with("/nonexistent/x.toml: cannot read the file: "),
        "{error}"
    );
}

#[test]
fn a_signal_names_a_node_that_runs_something_and_nothing_else() {
    let text = r#"name = "t"
[nodes.a]
command = ["x"]
[nodes.b]
[[links]]
endpoints = ["a", "b"]
[[timeline]]
at = "1s"
signal = "b"
[[timeline]]
at = "2s"
signal = "a"
stop = "a"
[[timeline]]
at = "3s"
signal = "a"
delay = "5ms"
[[timeline]]
at = "4s"
signal = "z"
[[timeline]]
at = "5s"
signal = "c"
[nodes.c]
role = "ucs"
"#;
    let got = errors(text);
    for want in [
        "t.toml:9:10: `b` is a plain host: nothing runs in it to signal",
        "t.toml:12:1: `stop` and `signal` in one event: write them as two [[timeline]] events",
        "t.toml:17:1: `delay` does not apply to a `signal` event",
        "t.toml:20:10: unknown node `z`; the nodes are: a, b, c",
        "t.toml:23:10: `c` runs role `ucs`, which takes no signal (the roles that do: farm-load, p2p-peer)",
    ] {
        assert!(got.contains(want), "missing {want:?} in:\n{got}");
    }
}
