//! Control-plane messages of the replicating farm (QUIC, bincode 2, lab certificates). The
//! dispatcher fills every server at the start and tells a server which replica to replace; a server
//! tells the dispatcher when a transfer ends; the dispatcher gives the data center the key of its
//! tickets and reads its byte counts. Each receiver authorizes a call by the caller's certificate
//! name.

use serde::{Deserialize, Serialize};

/// Where a server fetches a new replica from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Source {
    /// The data center (`/fill/C` at the start, `/copy/C` after a real loss).
    DataCenter,
    /// Another server storing the content (`/copy/C`), after a virtual loss.
    Peer(String),
}

/// Dispatcher → server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerRequest {
    /// Store these contents (one entry per slot, None: empty), fetched from the data center;
    /// answered once every slot holds its content. `ticket_key` checks the tickets of the
    /// dispatcher's redirects and of peers' copies, and makes those of the server's own
    /// fetches (`super::tickets`).
    Fill {
        slots: Vec<Option<u32>>,
        ticket_key: crate::roles::tokens::KeyBytes,
    },
    /// Replace slot `slot`'s replica of `evict` by one of `content` fetched from `from`;
    /// answered at once, the fetch going on after.
    Replace {
        slot: u32,
        evict: u32,
        content: u32,
        from: Source,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerResponse {
    Filled,
    Replacing,
    Refused(String),
}

/// Server → dispatcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DispatcherRequest {
    /// The transfer the dispatcher sent this server with `ticket` ended (whole or not).
    Done { ticket: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DispatcherResponse {
    Noted,
    /// The dispatcher did not think this server busy with that ticket (a late or repeated
    /// report, or one for a transfer whose lease ran out).
    NotBusy,
}

/// Dispatcher → data center.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DataCenterRequest {
    /// The key that makes the tickets the data center takes, sent before the farm is filled
    /// and again whenever a sample finds the data center without one (started again). A loss's
    /// ticket numbered below `floor` is refused: `floor` is the dispatcher's next ticket, so
    /// none taken by an earlier run of the data center is good again.
    Key {
        ticket_key: crate::roles::tokens::KeyBytes,
        floor: u64,
    },
    Measure,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DataCenterResponse {
    Keyed,
    /// The counts, and whether the data center holds a key (one started again has none).
    Usage {
        usage: DataCenterUsage,
        keyed: bool,
    },
}

/// The data center's counts since it started (in a message), or over all its runs (in the
/// dispatcher's record).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataCenterUsage {
    /// Users' requests that the farm lost, and their bytes.
    pub user_requests: u64,
    pub user_bytes: u64,
    /// Replicas copied to servers after a real loss.
    pub copy_requests: u64,
    pub copy_bytes: u64,
    /// The farm's initial contents.
    pub fill_requests: u64,
    pub fill_bytes: u64,
}

impl DataCenterUsage {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &DataCenterUsage) {
        self.user_requests += other.user_requests;
        self.user_bytes += other.user_bytes;
        self.copy_requests += other.copy_requests;
        self.copy_bytes += other.copy_bytes;
        self.fill_requests += other.fill_requests;
        self.fill_bytes += other.fill_bytes;
    }
}
