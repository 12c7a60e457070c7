//! Addresses, interfaces and routes.

use super::topology;
use crate::topology::{load, Interface, LoadOptions, Route, Topology};
use std::net::Ipv4Addr;
use std::path::Path;

fn addr(text: &str) -> Ipv4Addr {
    text.parse().unwrap()
}

fn route(dst: &str, prefix_len: u8, via: &str, ifname: &str) -> Route {
    Route {
        dst: addr(dst),
        prefix_len,
        via: addr(via),
        ifname: ifname.to_string(),
    }
}

fn interface(ifname: &str, segment: usize, address: &str, prefix_len: u8) -> Interface {
    Interface {
        ifname: ifname.to_string(),
        segment,
        addr: addr(address),
        prefix_len,
    }
}

/// Node `node`'s `/etc/hosts` as (name, address) pairs.
fn hosts_of(t: &Topology, node: usize) -> Vec<(String, Ipv4Addr)> {
    t.nodes[node]
        .hosts
        .iter()
        .map(|h| (h.name.clone(), h.addr))
        .collect()
}

fn named(entries: &[(&str, &str)]) -> Vec<(String, Ipv4Addr)> {
    entries
        .iter()
        .map(|&(name, address)| (name.to_string(), addr(address)))
        .collect()
}

fn in_subnet(address: Ipv4Addr, net: Ipv4Addr, prefix_len: u8) -> bool {
    let mask = u32::MAX
        .checked_shl(32 - u32::from(prefix_len))
        .unwrap_or(0);
    u32::from(address) & mask == u32::from(net)
}

/// Follows the routes hop by hop from every node to every address of every other node, and
/// fails unless each packet arrives within as many hops as there are nodes.
fn assert_everything_reachable(t: &Topology) {
    let owner_of = |address: Ipv4Addr| {
        t.nodes
            .iter()
            .position(|n| n.interfaces.iter().any(|i| i.addr == address))
            .unwrap()
    };
    for source in 0..t.nodes.len() {
        for target in t.nodes.iter().flat_map(|n| &n.interfaces) {
            let mut at = source;
            let mut hops = 0;
            while !t.nodes[at].interfaces.iter().any(|i| i.addr == target.addr) {
                let node = &t.nodes[at];
                let on_link = node
                    .interfaces
                    .iter()
                    .any(|i| in_subnet(target.addr, t.segments[i.segment].subnet, i.prefix_len));
                at = if on_link {
                    owner_of(target.addr)
                } else {
                    let r = node
                        .routes
                        .iter()
                        .find(|r| in_subnet(target.addr, r.dst, r.prefix_len))
                        .unwrap_or_else(|| panic!("{} has no route to {}", node.name, target.addr));
                    assert!(node.interfaces.iter().any(|i| i.ifname == r.ifname));
                    owner_of(r.via)
                };
                hops += 1;
                assert!(
                    hops <= t.nodes.len(),
                    "routing loop towards {}",
                    target.addr
                );
            }
        }
    }
}

#[test]
fn chain_addresses_and_routes() {
    let t = topology(
        r#"name = "chain"
[nodes.client]
[nodes.router]
[nodes.server]
[[links]]
endpoints = ["client", "router"]
[[links]]
endpoints = ["router", "server"]
"#,
    );
    assert_eq!(t.segments[0].subnet, addr("198.18.0.0"));
    assert_eq!(t.segments[1].subnet, addr("198.18.0.4"));
    assert_eq!(
        t.nodes[0].interfaces,
        [interface("eth0", 0, "198.18.0.1", 30)]
    );
    assert_eq!(
        t.nodes[1].interfaces,
        [
            interface("eth0", 0, "198.18.0.2", 30),
            interface("eth1", 1, "198.18.0.5", 30)
        ]
    );
    assert_eq!(
        t.nodes[2].interfaces,
        [interface("eth0", 1, "198.18.0.6", 30)]
    );
    assert_eq!(
        t.nodes[0].routes,
        [route("198.18.0.4", 30, "198.18.0.2", "eth0")]
    );
    assert_eq!(t.nodes[1].routes, []);
    assert_eq!(
        t.nodes[2].routes,
        [route("198.18.0.0", 30, "198.18.0.5", "eth0")]
    );
    // Each node names a neighbour by its address on the link they share.
    assert_eq!(
        hosts_of(&t, 0),
        named(&[
            ("client", "198.18.0.1"),
            ("router", "198.18.0.2"),
            ("server", "198.18.0.6")
        ])
    );
    assert_eq!(
        hosts_of(&t, 2),
        named(&[
            ("client", "198.18.0.1"),
            ("router", "198.18.0.5"),
            ("server", "198.18.0.6")
        ])
    );
    assert_everything_reachable(&t);
}

/// A cloud and two FDNs, each with its own link to the cloud, and a slow link between them.
const FEDERATION: &str = r#"name = "federation"
[nodes.cloud]
[nodes.fdn1]
[nodes.fdn2]
[[links]]
endpoints = ["fdn1", "fdn2"]
delay = "1000ms"
[[links]]
endpoints = ["fdn1", "cloud"]
delay = "250ms"
[[links]]
endpoints = ["fdn2", "cloud"]
delay = "250ms"
"#;

/// A node on several links is named, by each other node, by its address on the link the
/// lowest-delay path enters it by: the cloud names fdn2 by fdn2's address on their own link,
/// not by fdn2's first address (on the slow federation link, whose subnet the cloud would
/// reach through fdn1).
#[test]
fn names_follow_the_lowest_delay_path() {
    let t = topology(FEDERATION);
    let index = |name: &str| t.nodes.iter().position(|n| n.name == name).unwrap();
    let address_on = |node: &str, segment: &str| {
        let segment = t.segments.iter().position(|s| s.name == segment).unwrap();
        t.nodes[index(node)]
            .interfaces
            .iter()
            .find(|i| i.segment == segment)
            .unwrap()
            .addr
    };
    let name_of = |by: &str, node: &str| {
        t.nodes[index(by)]
            .hosts
            .iter()
            .find(|h| h.name == node)
            .unwrap()
            .addr
    };
    assert_eq!(name_of("cloud", "fdn2"), address_on("fdn2", "fdn2-cloud"));
    assert_eq!(name_of("cloud", "fdn1"), address_on("fdn1", "fdn1-cloud"));
    // fdn1 to fdn2 through the cloud (500 ms) beats their own link (1000 ms).
    assert_eq!(name_of("fdn1", "fdn2"), address_on("fdn2", "fdn2-cloud"));
    assert_eq!(name_of("fdn2", "cloud"), address_on("cloud", "fdn2-cloud"));
    // Its own name, as every node's first address, for a node on no path to itself.
    assert_eq!(name_of("fdn2", "fdn2"), address_on("fdn2", "fdn1-fdn2"));
    // The cloud's name for fdn2 is on a link the cloud is on: no route, no third node.
    let cloud = &t.nodes[index("cloud")];
    let on_link = cloud.interfaces.iter().any(|i| {
        in_subnet(
            name_of("cloud", "fdn2"),
            t.segments[i.segment].subnet,
            i.prefix_len,
        )
    });
    assert!(on_link, "{cloud:?}");
    assert_everything_reachable(&t);
}

/// The same federation with a cloud that forwards nobody's traffic (`transit = false`): the
/// FDNs reach each other over their own slow link, never through the cloud, and the cloud
/// still reaches each FDN directly.
#[test]
fn no_path_passes_through_a_node_that_is_not_transit() {
    let t = topology(&FEDERATION.replace("[nodes.cloud]\n", "[nodes.cloud]\ntransit = false\n"));
    let (cloud, fdn1, fdn2) = (0, 1, 2);
    assert!(!t.nodes[cloud].transit && t.nodes[fdn1].transit);
    // fdn2's address on fdn1-fdn2 (.2), and on fdn2-cloud (.9); the cloud's on it (.10).
    assert_eq!(
        hosts_of(&t, fdn1)[fdn2],
        named(&[("fdn2", "198.18.0.2")])[0]
    );
    assert_eq!(
        hosts_of(&t, cloud)[fdn2],
        named(&[("fdn2", "198.18.0.9")])[0]
    );
    // fdn1 reaches the fdn2-cloud link through fdn2, not through the cloud.
    assert_eq!(
        t.nodes[fdn1].routes,
        [route("198.18.0.8", 30, "198.18.0.2", "eth0")]
    );
    assert_everything_reachable(&t);
    assert_eq!(
        super::errors("name = \"t\"\n[nodes.a]\ntransit = \"no\"\n"),
        "t.toml:3:11: `transit` must be true or false, not a string"
    );
}

#[test]
fn lower_delay_beats_fewer_hops() {
    // a-b is direct but slow; a-c-b takes two hops and 20ms. d hangs off b.
    let t = topology(
        r#"name = "triangle"
[nodes.a]
[nodes.b]
[nodes.c]
[nodes.d]
[[links]]
endpoints = ["a", "b"]
delay = "50ms"
[[links]]
endpoints = ["a", "c"]
delay = "10ms"
[[links]]
endpoints = ["c", "b"]
delay = "10ms"
[[links]]
endpoints = ["b", "d"]
delay = "1ms"
"#,
    );
    // a → b's other subnets (c-b, b-d) goes through c (its address on a-c, 198.18.0.6): one
    // route covers both.
    assert_eq!(
        t.nodes[0].routes,
        [route("198.18.0.8", 29, "198.18.0.6", "eth1")]
    );
    // b → a-c: c is 10ms away, a 50ms: via c's address on c-b, out of b's c-b interface.
    assert_eq!(
        t.nodes[1].routes,
        [route("198.18.0.4", 30, "198.18.0.9", "eth1")]
    );
    // d reaches everything through b: one route, whose /28 holds d's own subnet, which wins
    // as the longer match.
    assert_eq!(
        t.nodes[3].routes,
        [route("198.18.0.0", 28, "198.18.0.13", "eth0")]
    );
    assert_everything_reachable(&t);
}

#[test]
fn only_the_senders_egress_delay_counts() {
    // The slow direction of a-b is b→a; a→b is fast, so a still sends to d through b.
    let t = topology(
        r#"name = "asym"
[nodes.a]
[nodes.b]
[nodes.c]
[nodes.d]
[[links]]
endpoints = ["a", "b"]
from.b = { delay = "50ms" }
[[links]]
endpoints = ["a", "c"]
delay = "10ms"
[[links]]
endpoints = ["c", "b"]
delay = "10ms"
[[links]]
endpoints = ["b", "d"]
"#,
    );
    // a → c-b and b-d: both through b.
    assert_eq!(
        t.nodes[0].routes,
        [route("198.18.0.8", 29, "198.18.0.2", "eth0")]
    );
    // d's only neighbour is b.
    assert_eq!(
        t.nodes[3].routes,
        [route("198.18.0.0", 28, "198.18.0.13", "eth0")]
    );
    // b → a-c: c (10ms) rather than a (50ms from b).
    assert_eq!(
        t.nodes[1].routes,
        [route("198.18.0.4", 30, "198.18.0.9", "eth1")]
    );
}

#[test]
fn equal_paths_go_through_the_lower_node_index() {
    // c is declared before b, so of the equal paths a-b-d and a-c-d, a-c-d wins.
    let t = topology(
        r#"name = "square"
[nodes.a]
[nodes.c]
[nodes.b]
[nodes.d]
[nodes.e]
[[links]]
endpoints = ["a", "b"]
delay = "5ms"
[[links]]
endpoints = ["a", "c"]
delay = "5ms"
[[links]]
endpoints = ["b", "d"]
delay = "5ms"
[[links]]
endpoints = ["c", "d"]
delay = "5ms"
[[links]]
endpoints = ["d", "e"]
delay = "5ms"
"#,
    );
    let a = &t.nodes[0];
    assert_eq!(
        a.routes,
        [
            route("198.18.0.8", 30, "198.18.0.2", "eth0"),
            route("198.18.0.12", 30, "198.18.0.6", "eth1"),
            route("198.18.0.16", 30, "198.18.0.6", "eth1"),
        ]
    );
    assert_everything_reachable(&t);
}

#[test]
fn lans_get_the_smallest_subnet_and_join_every_member() {
    let t = topology(
        r#"name = "lan"
[nodes.a]
[nodes.b]
[nodes.c]
[nodes.d]
[[lans]]
name = "office"
members = ["a", "b", "c"]
delay = "1ms"
[[links]]
endpoints = ["c", "d"]
"#,
    );
    // Links are allocated first, then LANs: c-d gets 198.18.0.0/30, the LAN the next /29.
    assert_eq!(
        (t.segments[0].name.as_str(), t.segments[0].subnet),
        ("c-d", addr("198.18.0.0"))
    );
    assert_eq!(
        (t.segments[1].subnet, t.segments[1].prefix_len),
        (addr("198.18.0.8"), 29)
    );
    assert_eq!(
        t.nodes[0].interfaces,
        [interface("eth0", 1, "198.18.0.9", 29)]
    );
    assert_eq!(
        t.nodes[1].interfaces,
        [interface("eth0", 1, "198.18.0.10", 29)]
    );
    assert_eq!(
        t.nodes[2].interfaces,
        [
            interface("eth0", 0, "198.18.0.1", 30),
            interface("eth1", 1, "198.18.0.11", 29)
        ]
    );
    assert_eq!(
        t.nodes[0].routes,
        [route("198.18.0.0", 30, "198.18.0.11", "eth0")]
    );
    assert_eq!(
        t.nodes[1].routes,
        [route("198.18.0.0", 30, "198.18.0.11", "eth0")]
    );
    assert_eq!(t.nodes[2].routes, []);
    assert_eq!(
        t.nodes[3].routes,
        [route("198.18.0.8", 29, "198.18.0.1", "eth0")]
    );
    // c is on the LAN and the c-d link: d names it by its c-d address, the LAN's members
    // by its LAN address.
    assert_eq!(
        hosts_of(&t, 3),
        named(&[
            ("a", "198.18.0.9"),
            ("b", "198.18.0.10"),
            ("c", "198.18.0.1"),
            ("d", "198.18.0.2")
        ])
    );
    assert_eq!(hosts_of(&t, 0)[2], named(&[("c", "198.18.0.11")])[0]);
    assert_everything_reachable(&t);
}

#[test]
fn explicit_subnets_are_kept_and_skipped_by_the_pool() {
    let t = topology(
        r#"name = "explicit"
[nodes.a]
[nodes.b]
[nodes.c]
[[links]]
endpoints = ["a", "b"]
[[links]]
endpoints = ["b", "c"]
subnet = "198.18.0.0/29"
"#,
    );
    assert_eq!(t.segments[0].subnet, addr("198.18.0.8"));
    assert_eq!(
        (t.segments[1].subnet, t.segments[1].prefix_len),
        (addr("198.18.0.0"), 29)
    );
    assert_eq!(
        t.nodes[2].interfaces,
        [interface("eth0", 1, "198.18.0.2", 29)]
    );
    assert_everything_reachable(&t);
}

/// How fast this is belongs to `cdnlab bench scale` (its `plan` column); here, what it decides.
#[test]
fn a_hundred_node_tree_routes_every_node_to_every_segment() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/tree100.toml");
    let t = load(&path, &LoadOptions::default()).unwrap();
    assert_eq!(t.nodes.len(), 100);
    // A leaf and a branch node reach everything they are not on through one neighbour (the
    // branch, the root): a few prefixes each (none may hold the unused end of the address
    // block), where one route per subnet would be 98 and 89.
    for name in ["b9-l10", "b9"] {
        let node = t.nodes.iter().find(|n| n.name == name).unwrap();
        assert!(node.routes.len() <= 8, "{name}: {:?}", node.routes);
    }
    // The root sends each branch's subtree its own way: the few aligned prefixes that make up
    // its block of 10 leaf subnets (37 in all, where one per subnet would be 90).
    let root = &t.nodes[0];
    assert!(
        (9..=9 * 5).contains(&root.routes.len()),
        "{:?}",
        root.routes
    );
    assert_everything_reachable(&t);
}
