//! `cdnlab web`: the live view of a running lab, or the replay of a finished run's directory,
//! served to a browser; and the listening address `cdnlab run --web` shares with it.

use super::{failure, resolve_lab, usage_error, Failure};
use crate::lab::interrupt;
use crate::web::{hub::Hub, Server};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

#[derive(clap::Args)]
pub struct WebArgs {
    /// The lab to show (default: the only lab up).
    #[arg(long)]
    lab: Option<String>,
    /// Replay a finished run's directory (what `cdnlab run` wrote) instead of a running lab.
    #[arg(long, conflicts_with = "lab")]
    results: Option<PathBuf>,
    #[command(flatten)]
    listen: Listen,
}

/// Where the page is served.
#[derive(clap::Args)]
pub struct Listen {
    /// The address and port to serve the page on.
    #[arg(long, default_value = DEFAULT_LISTEN)]
    listen: String,
    /// Allow --listen on an address other than loopback: anyone who can reach it then sees
    /// the lab's topology, link counters, events and clients' results (read-only).
    #[arg(long)]
    expose: bool,
}

impl Listen {
    /// The listening socket, bound before anything else is done (so a taken port fails first).
    pub fn bind(&self) -> Result<TcpListener, Failure> {
        bind(&self.listen, self.expose, "--listen")
    }
}

/// Binds `address` (flag `flag`), refusing an address beyond loopback unless `expose`.
pub fn bind(address: &str, expose: bool, flag: &str) -> Result<TcpListener, Failure> {
    let addr: SocketAddr = address.parse().map_err(|_| {
        usage_error(format!(
            "{flag} {address}: not an address and port (like {DEFAULT_LISTEN})"
        ))
    })?;
    if !addr.ip().is_loopback() && !expose {
        return Err(usage_error(format!(
            "{flag} {addr}: not a loopback address; the page would show this lab's topology, link \
             counters, events and clients' results to anyone who can reach it. Add --expose to allow it"
        )));
    }
    TcpListener::bind(addr).map_err(|e| failure(format!("{flag} {addr}: {e}")))
}

pub fn run(args: WebArgs) -> Result<(), Failure> {
    let listener = args.listen.bind()?;
    let hub = Arc::new(Hub::default());
    interrupt::install();
    match &args.results {
        Some(dir) => {
            crate::web::replay(dir, &hub).map_err(failure)?;
            let server = Server::start(listener, hub).map_err(failure)?;
            crate::say!(
                "replaying {} on http://{} (Ctrl-C ends)",
                dir.display(),
                server.addr
            );
            while interrupt::check().is_ok() {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        }
        None => {
            let lab = resolve_lab(args.lab)?;
            crate::lab::LabState::load(&lab).map_err(|e| failure(format!("lab {lab}: {e}")))?;
            let server = Server::start(listener, hub.clone()).map_err(failure)?;
            crate::say!("showing lab {lab} on http://{} (Ctrl-C ends)", server.addr);
            let follow = crate::web::Follow::default();
            let followed = std::thread::scope(|scope| {
                let follower = scope.spawn(|| crate::web::follow_lab(&lab, &hub, &follow));
                while !follower.is_finished() {
                    if interrupt::check().is_err() {
                        follow.stop();
                    }
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                follower.join()
            });
            followed
                .map_err(|_| failure("the lab's sampler stopped"))?
                .map_err(failure)?;
            if interrupt::check().is_ok() {
                crate::say!("lab {lab} is down");
            }
            // The pages get the end before the server goes.
            std::thread::sleep(crate::web::SAMPLE_EVERY * 3);
        }
    }
    Ok(())
}
