//! The hybrid P2P-cloud CDN on real processes (papers/002): `p2p-peer` (one process per peer:
//! plays chunks slot by slot, caches them with LRU, downloads what it lacks from the peer the
//! tracker names or from the cloud, serves its cache to other peers at its link's rate),
//! `p2p-tracker` (dispatches every download by the policy: local, proportional or Theorem 2's
//! optimal, over the request rates and upload it measures) and `p2p-cloud` (the cloud CDN,
//! counting its upload). The model, the policies and the tracker's decisions are the core's
//! (`crate::p2p`); this is their I/O.
//!
//! HTTP path: `/chunk/J`, chunk J (0 … J−1), the same bytes at every peer and the cloud.

pub mod cloud;
pub mod config;
pub mod messages;
pub mod peer;
pub mod tracker;

use crate::cdn::Payload;
use crate::roles::Start;

/// Chunk J's bytes.
fn payload(chunk: u32) -> Payload {
    Payload::numbered(0x9292_0000_0000 ^ u64::from(chunk))
}

/// J of `/chunk/J` when J is a chunk below `chunks`.
fn chunk_of(path: &str, chunks: usize) -> Option<u32> {
    let rest = path.strip_prefix("/chunk/")?;
    if rest.is_empty() || rest.len() > 9 || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let j: u32 = rest.parse().ok()?;
    ((j as usize) < chunks).then_some(j)
}

/// `p2p-tracker --config FILE`: dispatches until stopped.
pub async fn tracker(start: Start) -> Result<(), String> {
    tracker::run(start.parse(config::tracker)?, start.env, start.shutdown).await
}

/// `p2p-peer --config FILE [--out DIR]`: plays until the configured duration ends.
pub async fn peer(start: Start) -> Result<(), String> {
    peer::run(start.parse(config::peer)?, start).await
}

/// `p2p-cloud --config FILE`: serves until stopped.
pub async fn cloud(start: Start) -> Result<(), String> {
    cloud::run(start.parse(config::cloud)?, start.env, start.shutdown).await
}

#[cfg(test)]
mod tests {
    #[test]
    fn chunk_paths_are_digits_below_the_catalogue() {
        assert_eq!(super::chunk_of("/chunk/7", 40), Some(7));
        for bad in [
            "/chunk/40",
            "/chunk/",
            "/chunk/-1",
            "/chunk/7/x",
            "/chunk/+7",
            "/chunks/7",
            "/chunk/99999999999",
        ] {
            assert_eq!(super::chunk_of(bad, 40), None, "{bad}");
        }
    }
}
