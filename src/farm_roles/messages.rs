//! Control-plane messages of the replicating farm (QUIC, bincode 2, lab certificates). The
//! dispatcher fills every server at the start and tells a server which replica to replace;
//! a server tells the dispatcher when a transfer ends; the dispatcher reads the data center's
//! byte counts. Each receiver authorizes a call by the caller's certificate name.

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
    /// dispatcher's redirects ([`ticket_context`]).
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

/// The query a redirect to a server carries: the ticket of the transfer the dispatcher
/// assigned it (a `roles::tokens` token of the transfer's number, for that server and
/// content), whose number the server reports back with `Done`. A request without a ticket
/// the dispatcher made for that server and content did not come through the dispatcher, and
/// a server refuses it.
pub const TICKET: &str = "ticket";

/// The ticket in a request's query (`ticket=T`), if it has one.
pub fn ticket_of(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix(TICKET)?.strip_prefix('='))
}

/// What a ticket is for: a transfer of `content` by `server`, so that one given for another
/// server or content is no ticket there.
pub fn ticket_context(server: &str, content: u32) -> String {
    format!("{server}/c/{content}")
}

/// Dispatcher → data center.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DataCenterRequest {
    Measure,
}

/// The data center's counts since it started.
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

#[cfg(test)]
mod tests {
    use super::ticket_of;

    #[test]
    fn a_ticket_is_read_from_the_query() {
        assert_eq!(ticket_of(Some("ticket=42-ab")), Some("42-ab"));
        assert_eq!(ticket_of(Some("x=1&ticket=7-cd")), Some("7-cd"));
        for query in [None, Some(""), Some("tickets=3"), Some("x=ticket=3")] {
            assert_eq!(ticket_of(query), None, "{query:?}");
        }
    }
}
