//! The environment of a node's program, as `cdnlab up` (`lab::process`) or a container's
//! compose file sets it. Read here only, once per process.

use std::ffi::CStr;
use std::path::PathBuf;

/// The lab's name (its state directory holds the certificates and the links).
pub const LAB: &str = "CDNLAB_LAB";
/// This node's name, the name its control-plane certificate carries.
pub const NODE: &str = "CDNLAB_NODE";
/// Where a client writes its results (`OUT/NODE` of the run).
pub const OUT_DIR: &str = "CDNLAB_OUT_DIR";
/// A directory of certificates that overrides the lab's (in a container: its mounted secrets).
pub const CERTS: &str = "CDNLAB_CERTS";

/// Tokio's own variable for a multi-threaded runtime's worker count.
pub const WORKER_THREADS: &str = "TOKIO_WORKER_THREADS";

/// The `CDNLAB_*` variables of this process; an empty value counts as unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeEnv {
    pub lab: Option<String>,
    pub node: Option<String>,
    pub out_dir: Option<PathBuf>,
    pub certs: Option<PathBuf>,
}

impl NodeEnv {
    /// Reads the variables of this process.
    pub fn read() -> NodeEnv {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        let text = |name| var(name).map(|v| v.to_string_lossy().into_owned());
        NodeEnv {
            lab: text(LAB),
            node: text(NODE),
            out_dir: var(OUT_DIR).map(PathBuf::from),
            certs: var(CERTS).map(PathBuf::from),
        }
    }

    /// This node's name: `$CDNLAB_NODE`, else the host name, else `unknown` (a role run by
    /// hand still names itself in its answers and results).
    pub fn node_name(&self) -> String {
        self.node.clone().unwrap_or_else(host_name)
    }
}

/// How many workers tokio would start: `TOKIO_WORKER_THREADS` when it is a positive number,
/// else one per CPU this process may run on (its affinity and cgroup quota).
pub fn worker_threads() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    parse_worker_threads(std::env::var(WORKER_THREADS).ok().as_deref(), cpus)
}

/// `worker_threads` given the variable's value and the CPU count. A value tokio would refuse
/// is left for tokio to report when it builds its runtime.
fn parse_worker_threads(value: Option<&str>, cpus: usize) -> usize {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(cpus)
}

/// This node's name as `NodeEnv::node_name` reads it from the process's environment.
pub fn node_name() -> String {
    NodeEnv::read().node_name()
}

fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length, which is passed with it.
    let result = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    match CStr::from_bytes_until_nul(&buf) {
        Ok(name) if result == 0 && !name.is_empty() => name.to_string_lossy().into_owned(),
        _ => "unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_threads_is_a_positive_count_else_the_cpus() {
        assert_eq!(parse_worker_threads(Some("1"), 8), 1);
        assert_eq!(parse_worker_threads(Some(" 3 "), 8), 3);
        assert_eq!(parse_worker_threads(None, 8), 8);
        assert_eq!(parse_worker_threads(Some("0"), 2), 2);
        assert_eq!(parse_worker_threads(Some("many"), 2), 2);
    }

    #[test]
    fn the_node_name_is_the_variable_else_the_host_name() {
        let named = NodeEnv {
            node: Some("dcs1".into()),
            ..NodeEnv::default()
        };
        assert_eq!(named.node_name(), "dcs1");
        let unnamed = NodeEnv::default().node_name();
        assert!(!unnamed.is_empty());
        assert_eq!(unnamed, host_name());
    }
}
