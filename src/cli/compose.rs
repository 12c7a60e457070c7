//! `cdnlab compose TOPOLOGY [PROFILE=TOPOLOGY]… [--set K=V]… [--out FILE]`: a compose file
//! for topologies; with `--swarm`, a Docker Swarm stack file for one (see `compose`).

use super::{usage_error, Failure};
use crate::compose;
use crate::topology;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ComposeArgs {
    /// Topology files: the first plain (its services start by default), the others as
    /// PROFILE=FILE (their services start with `--profile PROFILE`). A file that exists under
    /// the whole argument is taken as a path, `=` and all (a sweep's `runs/000-d=0ms/…`).
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
    /// Write a Docker Swarm stack file (`docker stack deploy -c FILE LAB`) of one topology:
    /// overlay networks, addresses learned at start-up, certificates as secrets, placement.
    #[arg(long)]
    swarm: bool,
    /// With --swarm: place the nodes that name no `host` on N host classes (`h1`..`hN`, the
    /// Swarm nodes labelled `cdnlab.host=hK`), neighbours together.
    #[arg(long, value_name = "N", requires = "swarm", value_parser = clap::value_parser!(u16).range(1..))]
    hosts: Option<u16>,
    /// With --swarm: where the nodes' certificates are issued, which the stack's secrets name
    /// (default: `certs-LAB` beside the output file). Kept if already there.
    #[arg(long, value_name = "DIR", requires = "swarm")]
    certs: Option<PathBuf>,
}

pub fn run(args: ComposeArgs) -> Result<(), Failure> {
    let mut inputs = Vec::new();
    for spec in &args.topologies {
        let (profile, path) = split_profile(spec);
        inputs.push(compose::load(profile, path.as_ref(), &args.set).map_err(usage_error)?);
    }
    for (name, _) in &args.set {
        if !inputs.iter().any(|i| i.topology.vars.contains_key(name)) {
            return Err(usage_error(format!(
                "--set {name}: no variable of that name in any of the files"
            )));
        }
    }
    // What can be refused is refused before `generate`, which issues a stack's certificates.
    let timed = inputs.iter().any(|i| !i.topology.timeline.is_empty());
    if args.timeline_script.is_some() && !timed {
        return Err(usage_error(
            "--timeline-script: none of the topologies has a timeline",
        ));
    }
    for (flag, path) in [
        ("--out", &args.out),
        ("--timeline-script", &args.timeline_script),
    ] {
        let parent = path.as_deref().and_then(|p| p.parent());
        if let Some(dir) = parent.filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
            return Err(usage_error(format!(
                "{flag}: {} is not a directory",
                dir.display()
            )));
        }
    }
    let target = if args.swarm {
        let lab = &inputs[0].topology.name;
        let beside = args
            .out
            .as_deref()
            .and_then(|p| p.parent())
            .map(PathBuf::from)
            .unwrap_or_default();
        let certs = args
            .certs
            .clone()
            .unwrap_or_else(|| beside.join(format!("certs-{lab}")));
        let certs = std::path::absolute(&certs)
            .map_err(|e| usage_error(format!("--certs {}: {e}", certs.display())))?;
        compose::Target::Swarm(compose::swarm::SwarmOptions {
            certs,
            hosts: args.hosts.map(usize::from),
        })
    } else {
        compose::Target::Compose
    };
    let generated = compose::generate(&inputs, &target).map_err(usage_error)?;
    let script = args
        .timeline_script
        .as_ref()
        .zip(generated.timeline_script.as_ref());
    // The compose file first: it stands alone, while the script only drives its containers.
    match &args.out {
        Some(path) => crate::atomic_write::write_atomically(path, generated.compose.as_bytes())
            .map_err(|e| usage_error(e.to_string()))?,
        None => crate::say_text!("{}", generated.compose),
    }
    if let Some((path, script)) = script {
        crate::atomic_write::write_executable(path, script.as_bytes())
            .map_err(|e| usage_error(e.to_string()))?;
    }
    Ok(())
}

/// `[PROFILE=]TOPOLOGY` as (profile, path): split at the first `=`, unless a file exists under
/// the whole argument, whose path then has a `=` of its own.
fn split_profile(spec: &str) -> (Option<&str>, &str) {
    match spec.split_once('=') {
        Some((profile, path)) if !std::path::Path::new(spec).exists() => (Some(profile), path),
        _ => (None, spec),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

    /// A stack that is refused for its flags is refused before its certificates are issued:
    /// none is left behind.
    #[test]
    fn a_refused_stack_leaves_no_certificates() {
        let dir = TempDir::new("compose-refused");
        std::fs::create_dir_all(&dir.0).unwrap();
        let topology = concat!(env!("CARGO_MANIFEST_DIR"), "/topologies/chain.toml");
        let args = |out: PathBuf, timeline_script: Option<PathBuf>| ComposeArgs {
            topologies: vec![topology.into()],
            set: Vec::new(),
            out: Some(out),
            timeline_script,
            swarm: true,
            hosts: None,
            certs: Some(dir.0.join("certs")),
        };
        let script = Some(dir.0.join("timeline.sh"));
        let refused = |args: ComposeArgs| run(args).err().map(|f| f.message).unwrap_or_default();
        let no_timeline = refused(args(dir.0.join("stack.yml"), script));
        assert!(no_timeline.contains("has a timeline"), "{no_timeline}");
        let nowhere = refused(args(dir.0.join("missing/stack.yml"), None));
        assert!(nowhere.contains("is not a directory"), "{nowhere}");
        assert!(!dir.0.join("certs").exists(), "certificates issued");
        assert!(!dir.0.join("stack.yml").exists());
        // Taken, the same stack issues them.
        if let Err(failed) = run(args(dir.0.join("stack.yml"), None)) {
            panic!("{}", failed.message);
        }
        assert!(dir.0.join("certs").is_dir() && dir.0.join("stack.yml").is_file());
    }

    /// A sweep's run file, whose directory has a `=`, is a path whole; otherwise the first `=`
    /// ends the profile.
    #[test]
    fn a_path_with_an_equals_sign_is_not_split() {
        let dir = TempDir::new("compose-profile");
        let run = dir.0.join("runs/000-d=0ms");
        std::fs::create_dir_all(&run).unwrap();
        let file = run.join("topology.toml");
        std::fs::write(&file, "").unwrap();
        let whole = file.to_str().unwrap();
        assert_eq!(split_profile(whole), (None, whole));
        assert_eq!(
            split_profile("edge=topologies/fog.toml"),
            (Some("edge"), "topologies/fog.toml")
        );
        assert_eq!(split_profile("fog.toml"), (None, "fog.toml"));
    }
}
