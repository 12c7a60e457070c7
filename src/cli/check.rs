//! `cdnlab check TOPOLOGY`: reads a topology file as `up` would (variables, addresses, routes,
//! each node's role config), and prints the resolved plan without building anything, so it
//! needs no root. Exit 2, naming each problem, if the file or a role config is wrong.

use super::topology_args::TopologyFile;
use super::{usage_error, Failure};
use crate::role_configs;
use crate::topology::{self, Program};

#[derive(clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    file: TopologyFile,
}

pub fn run(args: CheckArgs) -> Result<(), Failure> {
    let topology = args.file.load()?;
    let source = args.file.topology.display();
    let mut problems = Vec::new();
    for node in &topology.nodes {
        if let Program::Role { role, config } = &node.program {
            if let Err(e) = role_configs::check(role, &node.name, config) {
                problems.push(format!("{source}: node {} (role {role}): {e}", node.name));
            }
        }
    }
    if !problems.is_empty() {
        return Err(usage_error(problems.join("\n")));
    }
    crate::say_text!("{}", topology::describe(&topology));
    Ok(())
}
