//! Theorem 1: the requests an ISP's peers serve at once is the maximum flow of a bipartite
//! graph from chunks to cache states. Source → chunk c_j with capacity Σ_l a_lm·r_l,j (the
//! requests for c_j sent to the ISP); c_j → cache state s_i whenever s_i holds c_j (capacity
//! unbounded); s_i → sink with capacity U_m·N_m^(i) (the upload of the peers in that state).
//!
//! The max flow is petgraph's Dinic's algorithm (`petgraph::algo::dinics`) on integer
//! capacities: a snapshot counts requests and upload slots.

use petgraph::algo::dinics;
use petgraph::graph::{Graph, NodeIndex};
use std::collections::BTreeMap;

/// What the peers serve of a snapshot's requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The maximum flow: requests served by peers at once.
    pub total: u64,
    /// Of each chunk's requests, how many the flow serves (the rest miss, to the cloud).
    pub per_chunk: Vec<u64>,
}

/// One peer of the snapshot: the chunks it caches and the upload slots it offers now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub chunks: Vec<u32>,
    pub slots: u64,
}

/// Theorem 1's maximum number of concurrently served requests, for `requests[j]` requests of
/// chunk j and the peers given. Peers of one cache state are merged into one node of the
/// graph (U·N^(i)), as in the theorem; a chunk index past `requests` is ignored.
pub fn served(requests: &[u64], peers: &[Peer]) -> Served {
    let mut states: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
    for peer in peers.iter().filter(|p| p.slots > 0) {
        let mut state: Vec<u32> = (peer.chunks.iter().copied())
            .filter(|&c| requests.get(c as usize).is_some_and(|&r| r > 0))
            .collect();
        if state.is_empty() {
            continue;
        }
        state.sort_unstable();
        state.dedup();
        *states.entry(state).or_default() += peer.slots;
    }
    let unbounded: u64 = requests.iter().sum();
    let mut graph: Graph<(), u64> = Graph::new();
    let source = graph.add_node(());
    let sink = graph.add_node(());
    let mut chunk_edges = vec![None; requests.len()];
    let mut chunk_nodes: Vec<Option<NodeIndex>> = vec![None; requests.len()];
    for (j, &r) in requests.iter().enumerate().filter(|(_, &r)| r > 0) {
        let node = graph.add_node(());
        chunk_edges[j] = Some(graph.add_edge(source, node, r));
        chunk_nodes[j] = Some(node);
    }
    for (state, slots) in &states {
        let node = graph.add_node(());
        for &c in state {
            if let Some(chunk) = chunk_nodes[c as usize] {
                graph.add_edge(chunk, node, unbounded);
            }
        }
        graph.add_edge(node, sink, *slots);
    }
    let (total, flows) = dinics(&graph, source, sink);
    let per_chunk = (chunk_edges.iter())
        .map(|edge| edge.map_or(0, |e| flows[e.index()]))
        .collect();
    Served { total, per_chunk }
}
