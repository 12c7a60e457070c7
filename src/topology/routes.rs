//! Static routes and names: every node reaches every subnet it is not on through the neighbour
//! that starts its lowest-delay path there, so traffic follows the paths the scenario's delays
//! describe. Routes through one neighbour are then merged where they can be (see [`aggregate`]).
//! Each node's names follow the same paths: a name resolves to the address its node has on the
//! segment by which the lowest-delay path enters it, so a node on several segments is never
//! reached the long way round (through a third node) because of which of its addresses a name
//! happened to pick.

use super::aggregate::{aggregate, Subnets};
use super::model::{HostEntry, Node, NodeId, Route, Segment};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A path's cost: total delay of the senders' egress along it, then its hop count.
type Cost = (u64, u32);

/// The first step of a path: the neighbour, and the segment shared with it.
type FirstHop = (NodeId, usize);

/// A cheapest path from the source: its cost, its first hop, and the segment of its last hop
/// (the one it enters its destination by).
#[derive(Clone, Copy)]
struct Path {
    cost: Cost,
    first_hop: FirstHop,
    last_segment: usize,
}

/// Fills in every node's routes and names. Interfaces must already be placed.
///
/// For node U and each segment S that U is not on: the route to S's subnet goes via the first
/// hop of U's cheapest path to the nearest member of S. A hop from A onto segment T costs the
/// delay of A's egress on T (and one hop); a LAN joins each pair of its members. Ties go to the
/// lower first hop (node index, then segment index), so routes are deterministic.
///
/// U's name for another node V is V's address on the last segment of U's cheapest path to V;
/// its name for itself, and for a node it cannot reach, is that node's first address.
///
/// Paths pass through no node marked `transit = false` (they may start or end there).
pub(crate) fn compute_routes(nodes: &mut [Node], segments: &[Segment]) {
    // For each node, the segments it is on and its position among their members.
    let mut on: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nodes.len()];
    for (index, segment) in segments.iter().enumerate() {
        for (position, &member) in segment.members.iter().enumerate() {
            on[member].push((index, position));
        }
    }
    let subnets = Subnets::new(segments.iter().map(|s| (s.subnet, s.prefix_len)));
    let transit: Vec<bool> = nodes.iter().map(|n| n.transit).collect();
    let computed: Vec<(Vec<Route>, Vec<HostEntry>)> = (0..nodes.len())
        .map(|source| {
            let paths = shortest_paths(source, &on, &transit, segments);
            let routes = aggregate(routes_from(source, &paths, nodes, segments), &subnets);
            (routes, hosts_from(&paths, nodes))
        })
        .collect();
    for (node, (routes, hosts)) in nodes.iter_mut().zip(computed) {
        node.routes = routes;
        node.hosts = hosts;
    }
}

/// Dijkstra from `source`: each node's cost and first hop (`None` for the source itself and
/// for nodes it cannot reach). Paths go on from no node that is not `transit`.
fn shortest_paths(
    source: NodeId,
    on: &[Vec<(usize, usize)>],
    transit: &[bool],
    segments: &[Segment],
) -> Vec<Option<Path>> {
    let mut best: Vec<Option<Path>> = vec![None; on.len()];
    let mut done = vec![false; on.len()];
    let mut queue = BinaryHeap::from([Reverse(((0u64, 0u32), source))]);
    while let Some(Reverse((cost, node))) = queue.pop() {
        if done[node] {
            continue;
        }
        done[node] = true;
        if node != source && !transit[node] {
            continue;
        }
        for &(index, position) in &on[node] {
            let segment = &segments[index];
            let delay = segment.egress[position].delay_ns;
            let next_cost = (cost.0.saturating_add(delay), cost.1 + 1);
            for &next in &segment.members {
                if done[next] {
                    continue;
                }
                let hop = match best[node] {
                    Some(path) => path.first_hop,
                    None => (next, index),
                };
                // Every hop adds 1 to the count, so all predecessors on a cheapest path are
                // settled before `next`: comparing first hops here picks the lowest overall.
                let better = match best[next] {
                    None => true,
                    Some(current) => (next_cost, hop) < (current.cost, current.first_hop),
                };
                if better {
                    best[next] = Some(Path {
                        cost: next_cost,
                        first_hop: hop,
                        last_segment: index,
                    });
                    queue.push(Reverse((next_cost, next)));
                }
            }
        }
    }
    best
}

fn routes_from(
    source: NodeId,
    paths: &[Option<Path>],
    nodes: &[Node],
    segments: &[Segment],
) -> Vec<Route> {
    let mut routes = Vec::new();
    for segment in segments {
        if segment.members.contains(&source) {
            continue;
        }
        // Through its nearest member that forwards, so the segment's other members are not
        // reached through one that does not; through a member that does not only when no
        // other is reachable.
        let nearest = segment
            .members
            .iter()
            .filter_map(|&m| Some((!nodes[m].transit, paths[m]?)))
            .min_by_key(|(stops, path)| (*stops, path.cost, path.first_hop))
            .map(|(_, path)| path);
        let Some(Path {
            first_hop: (hop, via_segment),
            ..
        }) = nearest
        else {
            continue;
        };
        let interface_on = |node: NodeId| {
            nodes[node]
                .interfaces
                .iter()
                .find(|i| i.segment == via_segment)
        };
        if let (Some(mine), Some(theirs)) = (interface_on(source), interface_on(hop)) {
            routes.push(Route {
                dst: segment.subnet,
                prefix_len: segment.prefix_len,
                via: theirs.addr,
                ifname: mine.ifname.clone(),
            });
        }
    }
    routes
}

/// A node's `/etc/hosts` from its cheapest paths (see [`compute_routes`]). A node on no segment
/// has no address and no entry.
fn hosts_from(paths: &[Option<Path>], nodes: &[Node]) -> Vec<HostEntry> {
    nodes
        .iter()
        .zip(paths)
        .filter_map(|(node, path)| {
            let entered_by = path.and_then(|path| {
                node.interfaces
                    .iter()
                    .find(|i| i.segment == path.last_segment)
            });
            let iface = entered_by.or(node.interfaces.first())?;
            Some(HostEntry {
                name: node.name.clone(),
                addr: iface.addr,
            })
        })
        .collect()
}
