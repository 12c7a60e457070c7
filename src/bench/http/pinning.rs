//! Which CPUs the servers and the load generator run on, so that they never share a core.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::tools::Tools;

pub(in crate::bench) enum Pinning {
    Split {
        taskset: PathBuf,
    },
    /// One CPU, or no taskset: everything shares what there is.
    None(&'static str),
}

/// The CPUs of `Pinning::Split`, as taskset lists: servers on one, the load (wrk) on the other.
pub(super) const SERVER_CPU: &str = "0";
pub(in crate::bench) const WRK_CPU: &str = "1";

impl Pinning {
    pub(super) fn choose(tools: &Tools) -> Pinning {
        Pinning::with(tools.taskset.clone())
    }

    /// Servers on one CPU and the load on another when there are two CPUs and `taskset`.
    pub(in crate::bench) fn with(taskset: Option<PathBuf>) -> Pinning {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        match (taskset, cpus) {
            (Some(taskset), 2..) => Pinning::Split { taskset },
            (None, _) => Pinning::None("taskset (util-linux) is missing"),
            (Some(_), _) => Pinning::None("the machine has one CPU"),
        }
    }

    /// One sentence for the report's setup.
    pub(super) fn describe(&self) -> String {
        match self {
            Pinning::Split { .. } => format!(
                "Servers pinned to CPU {SERVER_CPU} and wrk to CPU {WRK_CPU} with taskset: wrk \
                 never competes with the server for a core, but on a 2-CPU machine its two \
                 threads share one."
            ),
            Pinning::None(why) => format!(
                "Not pinned ({why}): wrk competes with the server for the same CPUs, which \
                 lowers both columns alike."
            ),
        }
    }

    /// The CPU servers are pinned to.
    pub(super) fn server_cpu(&self) -> Option<&'static str> {
        match self {
            Pinning::Split { .. } => Some(SERVER_CPU),
            Pinning::None(_) => None,
        }
    }

    /// `program args…`, run on `cpu` when pinning.
    pub(super) fn command(&self, cpu: &str, program: &Path) -> Command {
        match self {
            Pinning::Split { taskset } => {
                let mut command = Command::new(taskset);
                command.args(["-c", cpu]).arg(program);
                command
            }
            Pinning::None(_) => Command::new(program),
        }
    }
}
