//! `cdnlab compose TOPOLOGY [PROFILE=TOPOLOGY]… [--set K=V]… [--out FILE]`: a compose file
//! for topologies (see `compose`).

use super::{usage_error, Failure};
use crate::compose;
use crate::topology;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ComposeArgs {
    /// Topology files: the first plain (its services start by default), the others as
    /// PROFILE=FILE (their services start with `--profile PROFILE`).
    #[arg(required = true, value_name = "[PROFILE=]TOPOLOGY")]
    topologies: Vec<String>,
    /// Override a variable in every file that has it: `--set internet_delay=200ms`.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = topology::parse_set)]
    set: Vec<(String, String)>,
    /// Write the compose file here (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write a script that runs the topologies' timelines (`SCRIPT LAB`, right after
    /// `up -d`), which compose cannot.
    #[arg(long, value_name = "FILE")]
    timeline_script: Option<PathBuf>,
}

pub fn run(args: ComposeArgs) -> Result<(), Failure> {
    let mut inputs = Vec::new();
    for spec in &args.topologies {
        let (profile, path) = match spec.split_once('=') {
            Some((profile, path)) => (Some(profile), path),
            None => (None, spec.as_str()),
        };
        inputs.push(compose::load(profile, path.as_ref(), &args.set).map_err(usage_error)?);
    }
    for (name, _) in &args.set {
        if !inputs.iter().any(|i| i.topology.vars.contains_key(name)) {
            return Err(usage_error(format!(
                "--set {name}: no variable of that name in any of the files"
            )));
        }
    }
    let generated = compose::generate(&inputs).map_err(usage_error)?;
    if let Some(path) = &args.timeline_script {
        let Some(script) = &generated.timeline_script else {
            return Err(usage_error(
                "--timeline-script: none of the topologies has a timeline",
            ));
        };
        write(path, script)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| usage_error(format!("{}: {e}", path.display())))?;
    }
    match &args.out {
        Some(path) => write(path, &generated.compose)?,
        None => print!("{}", generated.compose),
    }
    Ok(())
}

fn write(path: &std::path::Path, text: &str) -> Result<(), Failure> {
    crate::roles::summary::write_atomically(path, text.as_bytes())
        .map_err(|e| usage_error(e.to_string()))
}
