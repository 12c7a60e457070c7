//! The testbed as containers (`docker-compose.yml`): what runs inside each container. The
//! orchestrator's namespaces, veths and routes are docker's networks there; `cdnlab container`
//! sets up the rest from its command line — routes, each network's impairments, the node's
//! program — and lets scripts change impairments at run time through `docker exec`.

pub mod entry;
pub mod links;
pub mod spec;

use std::io;
use std::path::Path;

/// Issues the control plane's certificates into `dir` (a volume every container mounts),
/// unless a CA and a certificate for every node are already there: containers started
/// earlier keep trusting what they loaded. Returns whether it issued.
pub fn issue_certs_once(dir: &Path, lab: &str, nodes: &[&str]) -> io::Result<bool> {
    let present = |name: &str| dir.join(name).is_file();
    if present("ca.pem")
        && nodes
            .iter()
            .all(|n| present(&format!("{n}.pem")) && present(&format!("{n}.key")))
    {
        return Ok(false);
    }
    crate::control::issue_lab_certs(dir, lab, nodes)?;
    Ok(true)
}
