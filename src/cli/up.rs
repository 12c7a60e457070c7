//! `cdnlab up`: bring a lab up and leave it running for the user.

use super::topology_args::TopologyArgs;
use super::Failure;
use crate::lab::{self, interrupt};

pub fn run(args: TopologyArgs) -> Result<(), Failure> {
    let topology = args.load()?;
    interrupt::install();
    let mut state = lab::up(topology, &args.up_options())?;
    // The lab stays up after this process exits: it is the user's now, not a leftover.
    state.update(|state| {
        state.owner = None;
        Ok(())
    })?;
    crate::say!(
        "lab `{}` is up ({} nodes, {} link backend); `cdnlab status {}` shows it, `cdnlab down {}` removes it",
        state.lab,
        state.topology.nodes.len(),
        state.backend.name(),
        state.lab,
        state.lab
    );
    Ok(())
}
