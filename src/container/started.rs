//! Which nodes of a Swarm stack have started, so that Swarm starts a node's task again only
//! while no task of it has told anyone its addresses.
//!
//! A stack's services restart on failure, because Docker sometimes fails to start a container
//! at all (its secrets' mount, moby#48783); such a task never ran, and one started in its place
//! serves the card its peers are still waiting for. But a task that has served its card is
//! another matter: one started in its place would get new addresses, which its peers' routes
//! and hosts files do not follow. So each container, just before it serves its card, records
//! its service's ID in `DIR/NODE` (the stack's results directory on its host), and refuses to
//! go on when that file already holds the same ID: an earlier task of this deployment got that
//! far. A stack removed (`docker stack rm`) and deployed again has new service IDs, so its
//! tasks start; a changed stack file deployed onto a running stack keeps the IDs, and the
//! tasks it replaces stop at their records.

use std::io;
use std::path::Path;

/// The environment variable a stack's services set to their service's ID (a Swarm template).
pub const SERVICE_ENV: &str = "CDNLAB_SWARM_SERVICE";

/// Records that `node`'s task of service `service` is about to serve its card, unless an
/// earlier task of the same service already did (then the error says why it stops).
pub fn record(dir: &Path, node: &str, service: &str) -> io::Result<()> {
    crate::topology::check_node_name(node, "node")
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if service.is_empty() || service.len() > 128 || service.chars().any(char::is_whitespace) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{SERVICE_ENV} `{service}` is no Swarm service ID"),
        ));
    }
    std::fs::create_dir_all(dir)?;
    let file = dir.join(node);
    match std::fs::read_to_string(&file) {
        Ok(earlier) if earlier.trim() == service => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "a task of node `{node}` (service {service}) has already served its card: \
                     one started in its place would have new addresses, which its peers do not \
                     follow, so it does not start (the first task's log says what failed)"
                ),
            ))
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::write(&file, format!("{service}\n"))
}

/// Takes back `node`'s record, when it could not serve its card after all.
pub fn forget(dir: &Path, node: &str) {
    if crate::topology::check_node_name(node, "node").is_ok() {
        let _ = std::fs::remove_file(dir.join(node));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

    #[test]
    fn a_node_starts_once_per_deployment() {
        let dir = TempDir::new("started");
        let started = dir.0.join("_started");
        record(&started, "dgw", "svc1").unwrap();
        assert_eq!(
            std::fs::read_to_string(started.join("dgw")).unwrap(),
            "svc1\n"
        );
        // Another node of the same deployment, and the same node deployed anew, start.
        record(&started, "drr", "svc2").unwrap();
        record(&started, "dgw", "svc3").unwrap();
        // A task started again in the same deployment does not.
        let again = record(&started, "dgw", "svc3").unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        assert!(again.to_string().contains("node `dgw`"), "{again}");
        // Unless the one before took its record back, having served nothing.
        forget(&started, "dgw");
        record(&started, "dgw", "svc3").unwrap();
        for (node, service) in [("../x", "svc"), ("", "svc"), ("dgw", ""), ("dgw", "a b")] {
            let bad = record(&started, node, service).unwrap_err();
            assert_eq!(bad.kind(), io::ErrorKind::InvalidInput, "{node} {service}");
        }
        assert!(!dir.0.join("x").exists());
    }
}
