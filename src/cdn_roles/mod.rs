//! The interconnected-CDN role servers: the I/O around `crate::cdn`'s sans-IO logic.
//!
//! Four roles, each a binary in `bins/` (`ucs`, `dcs`, `urr`, `drr`) run as
//! `ROLE --config FILE` by `cdnlab up`:
//!
//! - uCS (`content_server::ContentServer::origin`): the upstream CDN's content server, the
//!   origin. Serves every chunk and the manifests.
//! - dCS (`ContentServer::edge`): a downstream content server. Serves the chunks the dRR
//!   assigned to it (over the control plane), optionally fetching others once from the origin.
//! - uRR (`request_router::UpstreamRouter`): computes the placement, offers it to the dRR over
//!   the control plane, gets back where every downstream chunk is, and only then listens for
//!   HTTP: manifests per policy, 302s to a uCS or to the dRR.
//! - dRR (`request_router::DownstreamRouter`): assigns offloaded chunks to its dCSes, tells each
//!   what it holds, answers the uRR with the locations, and 302s clients to the right dCS.
//!
//! The chunk-location exchange (`exchange`) is CDNI-style and rides `crate::control` (QUIC,
//! mutual TLS with the lab's certificates). HTTP is the role runtime's (`crate::roles::http`):
//! hyper with HTTP/1.1 and h2c on one port, keep-alive, HEAD, single Range, strong ETags.

pub mod config;
pub mod content_server;
pub mod exchange;
pub mod exchange_io;
mod origin;
pub mod request_router;
pub mod run;
pub mod segment_cache;

#[cfg(test)]
mod tests;

pub use config::{DcsConfig, DrrConfig, Peer, UcsConfig, UrrConfig};
pub use content_server::{ContentServer, Source};
pub use exchange::{
    Assignment, DcsRequest, DcsResponse, DrrRequest, DrrResponse, OffloadRequest, OffloadedVideo,
};
pub use request_router::{DownstreamRouter, UpstreamRouter};
