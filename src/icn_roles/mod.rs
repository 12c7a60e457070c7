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

use crate::cdn_roles::config::read_table;
use std::path::PathBuf;
use std::process::ExitCode;

/// The application a name belongs to: its first component (`/app1/o7` → `app1`).
fn application(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or("")
}

/// `ROLE --config FILE`: what `bins/{icn-router,icn-border,cdn-site,controller,icn-load}.rs` run.
pub fn main(role: &'static str) -> ExitCode {
    crate::roles::main(role, run)
}

async fn run(role: &'static str, path: PathBuf) -> Result<(), String> {
    let table = read_table(&path)?;
    let in_file = |e: String| format!("{}: {e}", path.display());
    let shutdown = crate::cdn_roles::shutdown_signal()
        .await
        .map_err(|e| format!("installing signal handlers: {e}"))?;
    match role {
        "icn-router" => router::run(router::config(&table).map_err(in_file)?, shutdown).await,
        "icn-border" => border::run(border::config(&table).map_err(in_file)?, shutdown).await,
        "cdn-site" => site::run(site::config(&table).map_err(in_file)?, shutdown).await,
        "controller" => {
            controller::run(controller::config(&table).map_err(in_file)?, shutdown).await
        }
        "icn-load" => load::run(load::config(&table).map_err(in_file)?, shutdown).await,
        other => Err(format!("unknown role {other:?}")),
    }
}
