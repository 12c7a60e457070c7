//! The connections one server holds, by the caller's node: at most a fixed number each, so a
//! node that connects again and again (or one whose old connections linger on a lossy link
//! until QUIC's idle timeout) cannot make a server hold connections without end. A node over
//! its share loses its oldest connection, never its newest: a well-behaved node that
//! reconnects after a failure keeps working.

use super::identity::PeerName;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

/// The close code and reason of a connection a newer one from the same node replaced.
pub(crate) const REPLACED: u32 = 4;
const REPLACED_REASON: &[u8] = b"replaced by a newer connection from the same node";

/// Open connections by caller node. Only callers the service allows are registered, so the map
/// holds at most one entry per node the service names (or per node of the lab).
#[derive(Debug, Default)]
pub(crate) struct Connections {
    open: Mutex<HashMap<String, VecDeque<quinn::Connection>>>,
}

impl Connections {
    /// Registers `connection` of `peer`, closing `peer`'s oldest if it now has more than
    /// `per_node`. The registration ends when the returned guard drops.
    pub(crate) fn register(
        self: &Arc<Self>,
        peer: &PeerName,
        connection: &quinn::Connection,
        per_node: usize,
    ) -> Registration {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let mine = open.entry(peer.as_str().to_string()).or_default();
        mine.push_back(connection.clone());
        while mine.len() > per_node.max(1) {
            if let Some(oldest) = mine.pop_front() {
                oldest.close(REPLACED.into(), REPLACED_REASON);
            }
        }
        Registration {
            connections: self.clone(),
            peer: peer.as_str().to_string(),
            id: connection.stable_id(),
        }
    }

    /// How many connections `peer` has registered (for tests).
    #[cfg(test)]
    pub(crate) fn count(&self, peer: &str) -> usize {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.get(peer).map_or(0, VecDeque::len)
    }
}

/// One registered connection; dropping it (the connection's task ended) forgets it.
pub(crate) struct Registration {
    connections: Arc<Connections>,
    peer: String,
    id: usize,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut open = self
            .connections
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(mine) = open.get_mut(&self.peer) {
            mine.retain(|c| c.stable_id() != self.id);
            if mine.is_empty() {
                open.remove(&self.peer);
            }
        }
    }
}
