//! A role's place in the control plane (`crate::control`): its identity, loaded from the lab's
//! certificates, and connections to its peers.

use std::path::PathBuf;
use std::sync::Arc;

use super::env::{self, NodeEnv};
use crate::control::{Client, Identity};

/// The UDP port a role's control service listens on unless its config says otherwise.
pub const DEFAULT_CONTROL_PORT: u16 = 4433;

/// This node's control-plane identity: `$CDNLAB_NODE`'s certificate from `$CDNLAB_CERTS` (or
/// from the state directory of the lab `$CDNLAB_LAB` names).
pub fn load_identity(env: &NodeEnv) -> Result<Arc<Identity>, String> {
    let node = env.node.as_deref().ok_or_else(|| {
        format!(
            "{} is not set: the control plane needs this node's name (run under `cdnlab up`)",
            env::NODE
        )
    })?;
    let dir: PathBuf = match (&env.certs, &env.lab) {
        (Some(dir), _) => dir.clone(),
        (None, Some(lab)) => crate::lab::state::lab_dir(lab)
            .map_err(|e| format!("{}: {e}", env::LAB))?
            .join(crate::lab::state::CERTS),
        (None, None) => {
            return Err(format!(
                "neither {} nor {} is set: cannot find the lab's certificates",
                env::CERTS,
                env::LAB
            ))
        }
    };
    Identity::load(&dir, node)
        .map(Arc::new)
        .map_err(|e| format!("loading the control-plane identity of node {node}: {e}"))
}

/// A control-plane client to `addr` (`NAME:PORT`, resolved now), verifying it is node `name`.
pub async fn connect(addr: &str, name: &str, identity: &Identity) -> Result<Client, String> {
    let resolved = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| format!("resolving {addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr} resolves to no address"))?;
    Client::connect(resolved, name, identity)
        .await
        .map_err(|e| e.to_string())
}
