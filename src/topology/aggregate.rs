//! Merging a node's routes: subnets reached through the same neighbour share one covering
//! prefix, as long as that prefix holds nothing else but the node's own subnets. One route per
//! subnet makes the routes of a lab grow with the square of its size (a 1000-node tree: a
//! million, half a gigabyte of kernel memory and most of `up`'s time); merged, a leaf of the
//! tree needs a handful. Forwarding is unchanged for every address: an address in a merged
//! prefix lies in a subnet reached through that neighbour or in one of the node's own (the
//! longer match), and an address in no subnet of the lab is still in no route.

use super::model::Route;
use std::net::Ipv4Addr;

/// Every subnet of a lab, to tell whether a prefix holds only the lab's addresses.
pub(crate) struct Subnets {
    /// First addresses, sorted.
    starts: Vec<u32>,
    /// `sizes_before[i]`: the addresses in the subnets before `starts[i]` (one more entry at
    /// the end: all of them).
    sizes_before: Vec<u64>,
}

impl Subnets {
    /// The lab's (disjoint) subnets as network address and prefix length.
    pub(crate) fn new(subnets: impl IntoIterator<Item = (Ipv4Addr, u8)>) -> Subnets {
        let mut subnets: Vec<(u32, u8)> = subnets
            .into_iter()
            .map(|(net, prefix_len)| (u32::from(net), prefix_len))
            .collect();
        subnets.sort_unstable();
        let mut sizes_before = vec![0u64];
        for &(_, prefix_len) in &subnets {
            let size = 1u64 << (32 - u32::from(prefix_len.min(32)));
            sizes_before.push(sizes_before[sizes_before.len() - 1] + size);
        }
        Subnets {
            starts: subnets.into_iter().map(|(start, _)| start).collect(),
            sizes_before,
        }
    }

    /// True if the subnets fill every address of the prefix from `low` to `high`. Prefixes
    /// nest or are disjoint, so the subnets starting inside it are the ones in it.
    fn fill(&self, low: u32, high: u32) -> bool {
        let from = self.starts.partition_point(|&start| start < low);
        let to = self.starts.partition_point(|&start| start <= high);
        self.sizes_before[to] - self.sizes_before[from] == u64::from(high - low) + 1
    }
}

/// `routes` (to disjoint subnets of `subnets`) merged: each result is the smallest prefix
/// covering a group of routes with one next hop and interface, holding no subnet reached
/// another way and no address outside `subnets`; the results are disjoint and sorted by
/// address. A route that can share its prefix with no other stays as it was.
pub(crate) fn aggregate(mut routes: Vec<Route>, subnets: &Subnets) -> Vec<Route> {
    routes.sort_by_key(|r| u32::from(r.dst));
    let mut merged = Vec::new();
    merge(&routes, subnets, &mut merged);
    merged
}

/// Appends the merged routes of `routes` (sorted, disjoint) to `out`: all of them in their
/// covering prefix if they share the next hop and the prefix holds only the lab's subnets,
/// else each half of that prefix apart.
fn merge(routes: &[Route], subnets: &Subnets, out: &mut Vec<Route>) {
    let (Some(first), Some(last)) = (routes.first(), routes.last()) else {
        return;
    };
    if routes.len() == 1 {
        out.push(first.clone());
        return;
    }
    // Disjoint and sorted by start, the last subnet also ends last.
    let (low, high) = (u32::from(first.dst), end(last));
    let prefix_len = (low ^ high).leading_zeros() as u8;
    let cover = low & mask(prefix_len);
    let same_hop = routes
        .iter()
        .all(|r| r.via == first.via && r.ifname == first.ifname);
    if same_hop && subnets.fill(cover, cover | !mask(prefix_len)) {
        out.push(Route {
            dst: Ipv4Addr::from(cover),
            prefix_len,
            ..first.clone()
        });
        return;
    }
    // Two disjoint subnets differ, so the cover is shorter than /32 and its halves split
    // them: none straddles the middle (it would be the whole cover, overlapping the other).
    let middle = cover | (1u32 << (31 - u32::from(prefix_len)));
    let split = routes.partition_point(|r| u32::from(r.dst) < middle);
    merge(&routes[..split], subnets, out);
    merge(&routes[split..], subnets, out);
}

/// The last address of a route's subnet.
fn end(route: &Route) -> u32 {
    u32::from(route.dst) | !mask(route.prefix_len)
}

/// The netmask of a prefix length (0 to 32).
fn mask(prefix_len: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix_len.min(32)))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn route(dst: &str, prefix_len: u8, via: &str) -> Route {
        Route {
            dst: dst.parse().unwrap(),
            prefix_len,
            via: via.parse().unwrap(),
            ifname: "eth0".into(),
        }
    }

    fn subnets_of(routes: &[Route], own: &[(&str, u8)]) -> Subnets {
        Subnets::new(
            routes
                .iter()
                .map(|r| (r.dst, r.prefix_len))
                .chain(own.iter().map(|(net, len)| (net.parse().unwrap(), *len))),
        )
    }

    fn contains(outer: &Route, inner: &Route) -> bool {
        outer.prefix_len <= inner.prefix_len
            && u32::from(inner.dst) & mask(outer.prefix_len) == u32::from(outer.dst)
    }

    #[test]
    fn routes_through_one_neighbour_become_their_cover_with_the_nodes_own_subnet() {
        let routes = vec![
            route("198.18.0.12", 30, "198.18.0.1"),
            route("198.18.0.4", 30, "198.18.0.1"),
            route("198.18.0.8", 30, "198.18.0.1"),
        ];
        let subnets = subnets_of(&routes, &[("198.18.0.0", 30)]);
        assert_eq!(
            aggregate(routes, &subnets),
            [route("198.18.0.0", 28, "198.18.0.1")]
        );
    }

    #[test]
    fn a_cover_with_addresses_of_no_subnet_is_split_until_it_has_none() {
        // 198.18.0.0/28 would hold the unused 198.18.0.8/30, and each half holds one route.
        let routes = vec![
            route("198.18.0.4", 30, "198.18.0.1"),
            route("198.18.0.12", 30, "198.18.0.1"),
        ];
        let subnets = subnets_of(&routes, &[("198.18.0.0", 30)]);
        assert_eq!(aggregate(routes.clone(), &subnets), routes);
    }

    #[test]
    fn a_lone_route_and_routes_through_other_neighbours_stay_apart() {
        let lone = vec![route("198.18.0.4", 30, "198.18.0.1")];
        assert_eq!(aggregate(lone.clone(), &subnets_of(&lone, &[])), lone);
        let routes = vec![
            route("198.18.0.8", 30, "198.18.0.2"),
            route("198.18.0.12", 30, "198.18.0.6"),
            route("198.18.0.16", 30, "198.18.0.6"),
        ];
        let subnets = subnets_of(&routes, &[("198.18.0.0", 29)]);
        assert_eq!(aggregate(routes.clone(), &subnets), routes);
        assert_eq!(aggregate(Vec::new(), &subnets), []);
    }

    /// Disjoint subnets (/8 to /30 inside 10.0.0.0/8), each reached through one of three next
    /// hops, or (hop 3) one of the node's own.
    fn disjoint_subnets() -> impl Strategy<Value = Vec<(Route, bool)>> {
        prop::collection::vec((0u32..1 << 24, 8u8..=30, 0u8..4), 0..60).prop_map(|picks| {
            let mut found: Vec<(Route, bool)> = Vec::new();
            for (offset, prefix_len, hop) in picks {
                let dst = (10u32 << 24 | offset) & mask(prefix_len);
                let candidate = Route {
                    dst: Ipv4Addr::from(dst),
                    prefix_len,
                    via: Ipv4Addr::new(192, 0, 2, hop),
                    ifname: format!("eth{hop}"),
                };
                if !found
                    .iter()
                    .any(|(r, _)| contains(r, &candidate) || contains(&candidate, r))
                {
                    found.push((candidate, hop == 3));
                }
            }
            found
        })
    }

    proptest! {
        /// Every address is forwarded as with one route per subnet: each routed subnet lies in
        /// exactly one merged route, which has its hop; a merged route holds only the lab's
        /// subnets (so no address of none) and none reached through another hop.
        #[test]
        fn prop_routes_merged_forward_as_before(found in disjoint_subnets()) {
            let subnets = Subnets::new(found.iter().map(|(r, _)| (r.dst, r.prefix_len)));
            let routes: Vec<Route> =
                found.iter().filter(|(_, own)| !own).map(|(r, _)| r.clone()).collect();
            let merged = aggregate(routes.clone(), &subnets);
            prop_assert!(merged.len() <= routes.len());
            for (i, m) in merged.iter().enumerate() {
                prop_assert!(merged[i + 1..].iter().all(|b| !contains(m, b) && !contains(b, m)));
                prop_assert!(subnets.fill(u32::from(m.dst), end(m)), "{:?} holds unused addresses", m);
                for r in routes.iter().filter(|r| contains(m, r)) {
                    prop_assert_eq!((r.via, &r.ifname), (m.via, &m.ifname));
                }
            }
            for r in &routes {
                prop_assert_eq!(merged.iter().filter(|m| contains(m, r)).count(), 1, "{:?}", r);
            }
        }
    }
}
