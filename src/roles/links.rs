//! Facts about this node's links that a role's algorithm needs (today: a link's rate, the
//! capacity C_m a CDN site prices with), read from whichever runtime started the node:
//!
//! - in a lab (`cdnlab up`): the lab's state, which `cdnlab link set` keeps current;
//! - in a container (`cdnlab container run`, the compose and Swarm stacks): the state the
//!   container's entrypoint writes when it sets up its networks.
//!
//! Both are read at the moment of asking, so a rate changed at run time is seen.

use super::env::NodeEnv;

/// The rate (bit/s) at which node `env.node` sends towards `peer`: a node on a link or LAN with
/// this one (in a container also the network's name). `None` when the link is unlimited or
/// unknown, or the node runs outside both.
pub fn egress_rate_bps(env: &NodeEnv, peer: &str) -> Option<u64> {
    in_lab(env, peer).or_else(|| in_container(peer))
}

fn in_lab(env: &NodeEnv, peer: &str) -> Option<u64> {
    let state = crate::lab::LabState::load(env.lab.as_deref()?).ok()?;
    state.egress_rate_bps(env.node.as_deref()?, peer).flatten()
}

fn in_container(peer: &str) -> Option<u64> {
    let state = crate::container::links::ContainerState::load().ok()?;
    state
        .nets
        .iter()
        .find(|n| n.name == peer || n.peers.iter().any(|p| p == peer))?
        .impairments
        .rate_bps
}
