//! `cdnlab completions SHELL`: the shell's completion script for every verb and flag, on
//! standard output (`cdnlab completions bash > /etc/bash_completion.d/cdnlab`).

use super::{Cli, Failure};
use clap::CommandFactory;

#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    shell: clap_complete::Shell,
}

pub fn run(args: CompletionsArgs) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "cdnlab", &mut script);
    crate::say_text!("{}", String::from_utf8_lossy(&script));
    Ok(())
}
