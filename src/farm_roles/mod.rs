//! The replicating server farm on real processes (papers/004): `farm-server` (d slots, one
//! transfer at a time, a drawn service time), `farm-dispatcher` (the coordinating entity: a
//! redirect to an idle server storing the content, or a loss sent to the data center, and the
//! adaptive scheme telling servers which replica to replace), `farm-datacenter` (the origin
//! behind the WAN, counting what the farm costs it) and `farm-load` (Poisson requests with
//! Zipf popularity, which a `signal` timeline event changes). The model, the replications and
//! the coordinator are the core crate's (`crate::replication`); this is their I/O.
//!
//! HTTP paths: `/c/C` a user's request for content C (0 … n−1), `/copy/C` a replica copied
//! to a server, `/fill/C` a server's initial contents. At a server or the data center each
//! carries a ticket (`?ticket=T`, [`tickets`]): from the dispatcher's redirect, or made by the
//! server that fetches a replica.

pub mod config;
pub mod datacenter;
pub mod dispatcher;
pub mod load;
pub mod messages;
pub mod server;
pub mod tickets;

use crate::cdn::Payload;

/// The header of the dispatcher's redirect that says what it decided: `served` (by a farm
/// server) or `lost` (sent to the data center).
pub const DECISION: &str = "x-farm-decision";
use crate::roles::Start;

/// Content C's bytes: the same at the data center and on every server.
fn payload(content: u32) -> Payload {
    Payload::numbered(0xfa23_0000_0000 ^ u64::from(content))
}

/// C of `/KIND/C` when C is a content below `contents`.
fn content_of(path: &str, kind: &str, contents: usize) -> Option<u32> {
    let rest = path
        .strip_prefix('/')?
        .strip_prefix(kind)?
        .strip_prefix('/')?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) || rest.len() > 9 {
        return None;
    }
    let c: u32 = rest.parse().ok()?;
    ((c as usize) < contents).then_some(c)
}

/// `farm-server --config FILE`: serves until stopped.
pub async fn server(start: Start) -> Result<(), String> {
    server::run(start.parse(config::server)?, start.env, start.shutdown).await
}

/// `farm-dispatcher --config FILE`: fills the farm, then dispatches until stopped.
pub async fn dispatcher(start: Start) -> Result<(), String> {
    dispatcher::run(start.parse(config::dispatcher)?, start.env, start.shutdown).await
}

/// `farm-datacenter --config FILE`: serves until stopped.
pub async fn datacenter(start: Start) -> Result<(), String> {
    datacenter::run(start.parse(config::datacenter)?, start.env, start.shutdown).await
}

/// `farm-load --config FILE [--out DIR]`: requests until the configured duration ends.
pub async fn load(start: Start) -> Result<(), String> {
    load::run(start.parse(config::load)?, start).await
}

#[cfg(test)]
mod tests {
    #[test]
    fn content_paths_are_digits_below_the_catalog() {
        assert_eq!(super::content_of("/c/7", "c", 50), Some(7));
        assert_eq!(super::content_of("/copy/0", "copy", 50), Some(0));
        for bad in [
            "/c/50",
            "/c/",
            "/c/-1",
            "/c/7/x",
            "/c/+7",
            "/cc/7",
            "/c/99999999999",
        ] {
            assert_eq!(super::content_of(bad, "c", 50), None, "{bad}");
        }
    }
}
