//! The ICN-based telco CDN on real processes (papers/000): `icn-router` (content store, PIT,
//! FIB), `icn-border` (maps misses to CDN sites in the controller's proportions), `cdn-site`
//! (a content server with its SM module), `controller` (SM, LDP and PARM on their periods) and
//! `icn-load` (a region's users, Poisson per application). The algorithms are in `crate::icn`
//! and `crate::pricing`; this is their I/O.

pub mod border;
pub mod controller;
pub mod load;
pub mod messages;
pub mod router;
pub mod site;

use crate::roles::Start;

/// The largest object a CDN site serves (`object_size`), and so the most a router or border
/// reads of one answer: what it holds in memory per request is bounded by it.
pub const MAX_OBJECT_BYTES: u64 = 64 << 20;

/// The application a name belongs to: its first component (`/app1/o7` → `app1`).
fn application(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or("")
}

/// `icn-router --config FILE`: serves until stopped.
pub async fn router(start: Start) -> Result<(), String> {
    router::run(start.parse(router::config)?, start.shutdown).await
}

/// `icn-border --config FILE`: serves until stopped.
pub async fn border(start: Start) -> Result<(), String> {
    border::run(start.parse(border::config)?, &start.env, start.shutdown).await
}

/// `cdn-site --config FILE`: serves until stopped.
pub async fn site(start: Start) -> Result<(), String> {
    let config = start.parse(site::config)?;
    site::run(config, start.env, start.shutdown).await
}

/// `controller --config FILE`: runs SM, LDP and PARM on their periods until stopped.
pub async fn controller(start: Start) -> Result<(), String> {
    let config = start.parse(controller::config)?;
    controller::run(config, &start.env, start.shutdown).await
}

/// `icn-load --config FILE [--out DIR]`: a region's users until the configured duration ends.
pub async fn load(start: Start) -> Result<(), String> {
    load::run(start.parse(load::config)?, start).await
}
