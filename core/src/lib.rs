//! cdnlab's sans-IO core: the algorithms of the papers the testbed implements, as plain types
//! and functions that the role processes of the main crate (`cdnlab`) drive over sockets.
//!
//! The rule, held by the compiler: no I/O and no clock. This crate depends on no async
//! runtime, HTTP or QUIC library (Cargo.toml; `cargo tree -p cdnlab-core -e normal` shows no
//! tokio or hyper), and its `clippy.toml` makes reading a clock (`Instant::now`,
//! `SystemTime::now`), the environment or a file a clippy error. Time comes in as values (an
//! `Instant` or seconds the caller read), content as strings and bytes; `Duration` is fine.
//!
//! - `cdn`, `has`: HTTP adaptive streaming over interconnected CDNs (papers/001).
//! - `icn`, `pricing`: ICN tables, the controller's sums, and location-dependent pricing and
//!   request mapping (papers/000).
//! - `fog`: federated fog delivery networks (papers/003).
//! - `replication`: adaptive replication in a server farm (papers/004).
//! - `p2p`: locality-aware streaming in a hybrid P2P-cloud CDN (papers/002).
//! - `lru`: the LRU caches the others share.
//! - `stats`: percentiles, means and spreads of measured samples; `zipf`: Zipf popularity.

pub mod cdn;
pub mod fog;
pub mod has;
pub mod icn;
pub mod lru;
pub mod p2p;
pub mod pricing;
pub mod replication;
pub mod stats;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod zipf;
