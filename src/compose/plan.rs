//! Addresses for a compose file. Docker takes each network's first host address for its bridge,
//! so a lab's addressing (a /30 per link, hosts from .1) does not carry over: every segment gets
//! a subnet of its own from 198.18.0.0/15 with room for the bridge and every member, members
//! from the second host address on, and routes computed again over those addresses.

use crate::topology::{compute_routes, Topology};
use std::net::Ipv4Addr;

/// Where compose subnets come from (RFC 2544's benchmarking range, as labs use).
const POOL: (Ipv4Addr, u8) = (Ipv4Addr::new(198, 18, 0, 0), 15);

/// Hands out aligned subnets from the pool, in order; one allocator per compose file, so the
/// topologies in one file never overlap.
pub struct Allocator {
    next: u32,
}

impl Default for Allocator {
    fn default() -> Self {
        Allocator {
            next: u32::from(POOL.0),
        }
    }
}

impl Allocator {
    /// The smallest subnet with room for the network and broadcast addresses, Docker's bridge
    /// and `members` hosts (at least a /29).
    pub fn take(&mut self, members: usize) -> Result<(Ipv4Addr, u8), String> {
        let needed = members as u64 + 3;
        let size = needed.next_power_of_two().max(8);
        let prefix = 32 - size.trailing_zeros() as u8;
        let start = u64::from(self.next).div_ceil(size) * size;
        let end = u64::from(u32::from(POOL.0)) + (1u64 << (32 - POOL.1));
        if start + size > end {
            return Err(format!(
                "the topologies need more addresses than {}/{} holds",
                POOL.0, POOL.1
            ));
        }
        self.next = (start + size) as u32;
        Ok((Ipv4Addr::from(start as u32), prefix))
    }
}

/// Docker's bridge on a subnet: its first host address.
pub fn gateway(subnet: Ipv4Addr) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(subnet) + 1)
}

/// The topology with every segment on a subnet from `allocator`, member i of a segment at the
/// subnet's (i + 2)-th address, and routes computed again. `load_balancers`: how many more
/// addresses a segment may need, at most one per member (a Swarm overlay takes one on each
/// host with a task on it; 0 for a compose file).
pub fn readdress(
    topology: &Topology,
    allocator: &mut Allocator,
    load_balancers: usize,
) -> Result<Topology, String> {
    let mut out = topology.clone();
    for (index, segment) in out.segments.iter_mut().enumerate() {
        let members = segment.members.len();
        let (subnet, prefix) = allocator.take(members + load_balancers.min(members))?;
        segment.subnet = subnet;
        segment.prefix_len = prefix;
        for (position, &member) in segment.members.iter().enumerate() {
            let iface = out.nodes[member]
                .interfaces
                .iter_mut()
                .find(|i| i.segment == index)
                .expect("every member has an interface on its segment");
            iface.addr = Ipv4Addr::from(u32::from(subnet) + 2 + position as u32);
            iface.prefix_len = prefix;
        }
    }
    for node in &mut out.nodes {
        node.routes.clear();
    }
    compute_routes(&mut out.nodes, &out.segments);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{parse, LoadOptions};

    const LAN_AND_LINK: &str = r#"
name = "t"
[nodes.a]
[nodes.b]
[nodes.c]
[nodes.d]
[[links]]
endpoints = ["c", "d"]
[[lans]]
name = "lan"
members = ["a", "b", "c"]
"#;

    /// Each segment gets its own aligned subnet, members sit above Docker's bridge address,
    /// and routes lead through the new addresses.
    #[test]
    fn segments_get_subnets_above_the_bridge_and_routes_follow() {
        let lab = parse(LAN_AND_LINK, "t.toml", &LoadOptions::default()).unwrap();
        let mut allocator = Allocator::default();
        let t = readdress(&lab, &mut allocator, 0).unwrap();
        let subnets: Vec<String> = t
            .segments
            .iter()
            .map(|s| format!("{}/{}", s.subnet, s.prefix_len))
            .collect();
        assert_eq!(subnets, ["198.18.0.0/29", "198.18.0.8/29"]);
        let d = &t.nodes[3];
        assert_eq!(d.interfaces[0].addr, Ipv4Addr::new(198, 18, 0, 3));
        assert_eq!(gateway(t.segments[0].subnet), Ipv4Addr::new(198, 18, 0, 1));
        // d reaches the LAN through c's address on their link.
        assert_eq!(d.routes.len(), 1);
        assert_eq!(d.routes[0].dst, Ipv4Addr::new(198, 18, 0, 8));
        assert_eq!(d.routes[0].via, Ipv4Addr::new(198, 18, 0, 2));
        // A second topology in the same file continues after the first.
        let again = readdress(&lab, &mut allocator, 0).unwrap();
        assert_eq!(again.segments[0].subnet, Ipv4Addr::new(198, 18, 0, 16));
        // Room for a Swarm overlay's load balancer on each of three hosts: the LAN's 3 members
        // and 3 more need a /28.
        let swarm = readdress(&lab, &mut allocator, 3).unwrap();
        assert_eq!(swarm.segments[1].prefix_len, 28);
    }

    #[test]
    fn a_large_lan_gets_a_large_enough_subnet() {
        let mut allocator = Allocator::default();
        assert_eq!(
            allocator.take(5).unwrap(),
            (Ipv4Addr::new(198, 18, 0, 0), 29)
        );
        assert_eq!(
            allocator.take(6).unwrap(),
            (Ipv4Addr::new(198, 18, 0, 16), 28)
        );
        assert_eq!(
            allocator.take(30).unwrap(),
            (Ipv4Addr::new(198, 18, 0, 64), 26)
        );
        let error = allocator.take(1 << 20).unwrap_err();
        assert!(error.contains("198.18.0.0/15"), "{error}");
    }
}
