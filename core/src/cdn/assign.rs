//! Which content server of a CDN holds each chunk: consistent hashing on the chunk's path (as
//! Traffic Router does), round robin, or least loaded. Assignment is per path, i.e. per
//! (quality, index), so the qualities of one chunk index may sit on different servers.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::hashing::{HashRing, HashRingError};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Assign {
    /// The server owning the path on a ring with `vnodes` points per server
    /// (`hashing::DEFAULT_VNODES` is a good value). Adding a server moves only ~1/(n+1) of
    /// the chunks.
    ConsistentHash { vnodes: usize },
    /// The i-th chunk (in the order given) to server `i mod n`.
    RoundRobin,
    /// Each chunk in turn to the server with the fewest chunks so far, starting from `loads`
    /// (one count per server, e.g. chunks of other videos it already holds); ties go to the
    /// lower server index.
    LeastLoaded { loads: Vec<u64> },
}

/// Why chunks could not be assigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AssignError {
    NoServers,
    Ring(HashRingError),
    LoadsLength { loads: usize, servers: usize },
}

impl fmt::Display for AssignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssignError::NoServers => {
                f.write_str("chunks to place but no content server to hold them")
            }
            AssignError::Ring(e) => e.fmt(f),
            AssignError::LoadsLength { loads, servers } => {
                write!(
                    f,
                    "least-loaded needs one load per server: {loads} loads for {servers} servers"
                )
            }
        }
    }
}

impl std::error::Error for AssignError {}

/// The server index (into `servers`) for each of `paths`, in order. `servers` are names that
/// identify the servers stably (their URLs): the hash ring is built from them.
pub fn assign<S: AsRef<str>, P: AsRef<str>>(
    strategy: &Assign,
    servers: &[S],
    paths: &[P],
) -> Result<Vec<usize>, AssignError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    if servers.is_empty() {
        return Err(AssignError::NoServers);
    }
    match strategy {
        Assign::ConsistentHash { vnodes } => {
            let ring = HashRing::new(servers, *vnodes).map_err(AssignError::Ring)?;
            Ok(paths.iter().map(|p| ring.server_for(p.as_ref())).collect())
        }
        Assign::RoundRobin => Ok((0..paths.len()).map(|i| i % servers.len()).collect()),
        Assign::LeastLoaded { loads } => {
            if loads.len() != servers.len() {
                return Err(AssignError::LoadsLength {
                    loads: loads.len(),
                    servers: servers.len(),
                });
            }
            let mut loads = loads.clone();
            let mut chosen = Vec::with_capacity(paths.len());
            for _ in paths {
                // `min_by_key` returns the first minimum: the lowest index among ties.
                let (server, _) = loads
                    .iter()
                    .enumerate()
                    .min_by_key(|&(_, &load)| load)
                    .ok_or(AssignError::NoServers)?;
                loads[server] = loads[server].saturating_add(1);
                chosen.push(server);
            }
            Ok(chosen)
        }
    }
}
