//! The testbed as containers (`docker-compose.yml`): what runs inside each container. The
//! orchestrator's namespaces, veths and routes are docker's networks there; `cdnlab container`
//! sets up the rest from its command line — routes, each network's impairments, the node's
//! program — and lets scripts change impairments at run time through `docker exec`. In a Swarm
//! stack, where the orchestrator picks addresses, the containers tell each other theirs through
//! the `directory`.

pub mod directory;
pub mod entry;
pub mod links;
pub mod spec;
pub mod started;

use std::io;
use std::path::Path;

/// Issues the control plane's certificates into `dir/NODE/` for every node (each a volume of
/// its own, which only the certs service and that node's container mount, so no container holds
/// another node's key), unless every node's CA, certificate and key are already there:
/// containers started earlier keep trusting what they loaded. Returns whether it issued.
/// `dir`'s parents are made as needed (a path the user names); `dir` itself is made, or must
/// be a directory, by `KeyDir::open`, which keeps it private.
pub fn issue_certs_once(dir: &Path, lab: &str, nodes: &[&str]) -> io::Result<bool> {
    let present = |node: &str, name: &str| dir.join(node).join(name).is_file();
    if nodes.iter().all(|n| {
        present(n, "ca.pem") && present(n, &format!("{n}.pem")) && present(n, &format!("{n}.key"))
    }) {
        return Ok(false);
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    crate::control::issue_lab_certs_per_node(dir, lab, nodes)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

    /// Each node's directory (its own volume in compose) gets what that node loads, and a
    /// second run keeps them, so containers already running keep trusting the same CA.
    #[test]
    fn certs_are_issued_per_node_once() {
        let top = TempDir::new("container-certs");
        // Its parents are made too, as for a path given to `cdnlab container certs --dir`.
        let dir = top.0.join("not-yet/certs");
        assert!(issue_certs_once(&dir, "t", &["cloud", "fdn1"]).unwrap());
        let ca = std::fs::read(dir.join("fdn1/ca.pem")).unwrap();
        for node in ["cloud", "fdn1"] {
            let identity = crate::control::Identity::load(&dir.join(node), node).unwrap();
            assert_eq!(identity.node(), node);
        }
        assert!(!dir.join("fdn1/cloud.key").exists());
        assert!(!issue_certs_once(&dir, "t", &["cloud", "fdn1"]).unwrap());
        assert_eq!(std::fs::read(dir.join("fdn1/ca.pem")).unwrap(), ca);
        // A node whose volume is new (missing files) gets everything issued afresh.
        std::fs::remove_file(dir.join("cloud/cloud.key")).unwrap();
        assert!(issue_certs_once(&dir, "t", &["cloud", "fdn1"]).unwrap());
        assert_ne!(std::fs::read(dir.join("fdn1/ca.pem")).unwrap(), ca);
    }
}
