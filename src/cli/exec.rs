//! `cdnlab exec`: a command inside a node's network namespace.

use super::{failure, load_lab, node_names, usage_error, Failure, LabFlag};
use std::os::unix::process::CommandExt;

#[derive(clap::Args)]
pub struct ExecArgs {
    #[command(flatten)]
    lab: LabFlag,
    /// The node whose namespace the command runs in.
    node: String,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// Replaces this process with the command, run inside the node's namespace.
pub fn run(args: ExecArgs) -> Result<(), Failure> {
    let lab = args.lab.resolve()?;
    let state = load_lab(&lab)?;
    let node = &args.node;
    let Some(index) = state.topology.nodes.iter().position(|n| &n.name == node) else {
        return Err(usage_error(format!(
            "lab `{lab}` has no node `{node}`; its nodes: {}",
            node_names(&state)
        )));
    };
    let error = std::process::Command::new("ip")
        .args(["netns", "exec", &state.netns(index)])
        .args(&args.command)
        .exec();
    Err(failure(format!("cannot run ip netns exec: {error}")))
}
