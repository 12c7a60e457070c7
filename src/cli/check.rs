//! `cdnlab check TOPOLOGY`: reads a topology file as `up` would (variables, addresses, routes,
//! each node's role config), and prints the resolved plan without building anything, so it
//! needs no root. Exit 2, naming each problem, if the file or a role config is wrong.

use super::topology_args::TopologyFile;
use super::{usage_error, Failure};
use crate::role_configs;
use crate::topology;

#[derive(clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    file: TopologyFile,
}

pub fn run(args: CheckArgs) -> Result<(), Failure> {
    let topology = args.file.load()?;
    let source = args.file.topology.display();
    let problems: Vec<String> = role_configs::check_topology(&topology)
        .into_iter()
        .map(|problem| format!("{source}: {problem}"))
        .collect();
    if !problems.is_empty() {
        return Err(usage_error(problems.join("\n")));
    }
    crate::say_text!("{}", topology::describe(&topology));
    Ok(())
}
