//! Static routes: every node reaches every subnet it is not on through the neighbour that starts
//! its lowest-delay path there, so traffic follows the paths the scenario's delays describe.
//! Routes through one neighbour are then merged where they can be (see [`aggregate`]).

use super::aggregate::{aggregate, Subnets};
use super::model::{Node, NodeId, Route, Segment};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A path's cost: total delay of the senders' egress along it, then its hop count.
type Cost = (u64, u32);

/// The first step of a path: the neighbour, and the segment shared with it.
type FirstHop = (NodeId, usize);

/// Fills in every node's routes. Interfaces must already be placed.
///
/// For node U and each segment S that U is not on: the route to S's subnet goes via the first
/// hop of U's cheapest path to the nearest member of S. A hop from A onto segment T costs the
/// delay of A's egress on T (and one hop); a LAN joins each pair of its members. Ties go to the
/// lower first hop (node index, then segment index), so routes are deterministic.
pub(crate) fn compute_routes(nodes: &mut [Node], segments: &[Segment]) {
    // For each node, the segments it is on and its position among their members.
    let mut on: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nodes.len()];
    for (index, segment) in segments.iter().enumerate() {
        for (position, &member) in segment.members.iter().enumerate() {
            on[member].push((index, position));
        }
    }
    let subnets = Subnets::new(segments.iter().map(|s| (s.subnet, s.prefix_len)));
    let routes: Vec<Vec<Route>> = (0..nodes.len())
        .map(|source| {
            let paths = shortest_paths(source, &on, segments);
            aggregate(routes_from(source, &paths, nodes, segments), &subnets)
        })
        .collect();
    for (node, routes) in nodes.iter_mut().zip(routes) {
        node.routes = routes;
    }
}

/// Dijkstra from `source`: each node's cost and first hop (`None` for the source itself and
/// for nodes it cannot reach).
fn shortest_paths(
    source: NodeId,
    on: &[Vec<(usize, usize)>],
    segments: &[Segment],
) -> Vec<Option<(Cost, FirstHop)>> {
    let mut best: Vec<Option<(Cost, FirstHop)>> = vec![None; on.len()];
    let mut done = vec![false; on.len()];
    let mut queue = BinaryHeap::from([Reverse(((0u64, 0u32), source))]);
    while let Some(Reverse((cost, node))) = queue.pop() {
        if done[node] {
            continue;
        }
        done[node] = true;
        for &(index, position) in &on[node] {
            let segment = &segments[index];
            let delay = segment.egress[position].delay_ns;
            let next_cost = (cost.0.saturating_add(delay), cost.1 + 1);
            for &next in &segment.members {
                if done[next] {
                    continue;
                }
                let hop = match best[node] {
                    Some((_, hop)) => hop,
                    None => (next, index),
                };
                // Every hop adds 1 to the count, so all predecessors on a cheapest path are
                // settled before `next`: comparing first hops here picks the lowest overall.
                let better = match best[next] {
                    None => true,
                    Some((current, current_hop)) => (next_cost, hop) < (current, current_hop),
                };
                if better {
                    best[next] = Some((next_cost, hop));
                    queue.push(Reverse((next_cost, next)));
                }
            }
        }
    }
    best
}

fn routes_from(
    source: NodeId,
    paths: &[Option<(Cost, FirstHop)>],
    nodes: &[Node],
    segments: &[Segment],
) -> Vec<Route> {
    let mut routes = Vec::new();
    for segment in segments {
        if segment.members.contains(&source) {
            continue;
        }
        let nearest = segment.members.iter().filter_map(|&m| paths[m]).min();
        let Some((_, (hop, via_segment))) = nearest else {
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
