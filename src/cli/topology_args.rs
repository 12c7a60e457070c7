//! The flags of the verbs that read a topology file (`check`, `graph`) and of those that bring
//! a lab up from one (`up`, `run`).

use super::Failure;
use crate::lab::{self, BackendChoice};
use crate::topology::{self, LoadOptions};
use std::path::PathBuf;

/// A topology file and what the command line changes in it.
#[derive(clap::Args)]
pub struct TopologyFile {
    /// The topology file (TOML; see topologies/README.md).
    pub topology: PathBuf,
    /// Lab name (default: the file's `name`).
    #[arg(long)]
    pub name: Option<String>,
    /// Override a variable of the file's [vars]: `--set internet_delay=200ms`.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = topology::parse_set)]
    pub set: Vec<(String, String)>,
}

impl TopologyFile {
    /// The topology file read, with --name and --set applied.
    pub fn load(&self) -> Result<topology::Topology, Failure> {
        Ok(topology::load(
            &self.topology,
            &LoadOptions {
                name: self.name.as_deref(),
                set: &self.set,
            },
        )?)
    }
}

#[derive(clap::Args)]
pub struct TopologyArgs {
    #[command(flatten)]
    pub file: TopologyFile,
    #[command(flatten)]
    pub emulation: EmulationArgs,
}

/// How links are emulated: every verb that builds links takes these.
#[derive(clap::Args)]
pub struct EmulationArgs {
    /// Link emulation: tc-netem in the kernel, the userspace shaper, or whichever the kernel allows.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub link_backend: BackendChoice,
    /// Seed of the link emulation's random numbers (loss, jitter).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl TopologyArgs {
    /// The topology file read, with --name and --set applied.
    pub fn load(&self) -> Result<topology::Topology, Failure> {
        self.file.load()
    }

    /// `up`'s options (clients write into the lab's state directory).
    pub fn up_options(&self) -> lab::UpOptions {
        lab::UpOptions {
            link_backend: self.emulation.link_backend,
            out_dir: None,
            seed: self.emulation.seed,
        }
    }
}
