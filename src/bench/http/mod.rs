//! `bench http`: our content server (`ucs`) and request router (`urr`) against nginx, on
//! loopback, under the same load from wrk: segment GETs per second for 100 KB, 500 KB and 2 MB
//! objects (synthetic payloads and files from a media directory) and 302s per second. Every
//! row is measured twice, under CUBIC and under BBR, each in a network namespace of its own
//! whose default congestion control the bench sets (`own_netns`).
//!
//! Fairness: every server gets the same CPU budget — one worker (nginx `worker_processes 1`,
//! our roles' tokio runtime with `TOKIO_WORKER_THREADS=1`, which `roles::main` runs on tokio's
//! current-thread scheduler; the roles otherwise start one worker per core) and, on a machine with at least two CPUs, all of its threads pinned to CPU 0 with
//! taskset while wrk runs pinned to CPU 1, so load generator and server never share a core.
//! nginx is given its usual fast static setup (sendfile, tcp_nopush, open_file_cache, no access
//! log, keep-alive without a request limit). Needs Debian's `nginx` and `wrk`; it is run by
//! hand, never by CI.

pub mod allowance;
mod client;
mod cpu_usage;
mod nginx;
mod objects;
pub mod own_netns;
mod pinning;
mod report;
mod role_servers;
mod server;
mod tools;
mod work_dir;
mod wrk;

use std::path::Path;

use super::{progress, BenchOptions, Report};
use crate::lab::{interrupt, sys, Error, Result};
use client::{check_answer, Expect};
use objects::{segment_path, size_label, write_media, OBJECTS};
use own_netns::{Session, Unavailable, CONGESTION_CONTROLS};
use report::{Effort, Row};
use role_servers::{ucs_config, urr_config};
use tools::Tools;
use wrk::{load, spread, Load};

// What the ICN benchmark borrows: the same servers, pinning and working directory.
pub(super) use cpu_usage::ticks_per_second;
pub(super) use pinning::{Pinning, WRK_CPU};
pub(super) use role_servers::start_role;
pub(super) use server::{free_ports, Server};
pub(super) use tools::find_program;
pub(super) use work_dir::WorkDir;

pub fn run(options: &BenchOptions) -> Result<Report> {
    let tools = Tools::find()?;
    let effort = if options.quick {
        Effort {
            seconds: 3,
            rounds: 1,
        }
    } else {
        Effort {
            seconds: 10,
            rounds: 3,
        }
    };
    let session = Session::begin()?;
    let work = WorkDir::create("http")?;
    let media = write_media(&work)?;
    let pinning = Pinning::choose(&tools);
    let mut rows = Vec::new();
    let mut unavailable = Vec::new();
    for congestion in CONGESTION_CONTROLS {
        let netns = match session.create(congestion) {
            Ok(netns) => netns,
            Err(Unavailable::Congestion(why)) => {
                unavailable.push(format!("{congestion} ({why})"));
                continue;
            }
            Err(Unavailable::Failed(e)) => return Err(e),
        };
        rows.extend(netns.run(|| {
            progress(format!(
                "http, {congestion}: starting nginx, ucs (synthetic), ucs (media_dir), urr"
            ));
            let servers = Servers::start(&tools, &pinning, &work, &media)?;
            servers
                .cases()
                .iter()
                .map(|case| measure(&tools, &pinning, case, &effort, congestion))
                .collect::<Result<Vec<Row>>>()
        })?);
    }
    if rows.is_empty() {
        return Err(Error(format!(
            "bench http: no congestion control could be set: {}",
            unavailable.join("; ")
        )));
    }
    Ok(report::report(
        &rows,
        &effort,
        &pinning,
        &tools,
        &unavailable,
    ))
}

/// Every server under test, up and accepting connections.
struct Servers {
    /// Static files on `nginx_static`, redirects on `nginx_redirect`.
    nginx: Server,
    nginx_static: u16,
    nginx_redirect: u16,
    /// Synthetic payloads.
    ucs: Server,
    /// The same objects as files from a media directory.
    ucs_files: Server,
    /// Redirects to `ucs`.
    urr: Server,
    ucs_url: String,
}

impl Servers {
    fn start(tools: &Tools, pinning: &Pinning, work: &WorkDir, media: &Path) -> Result<Servers> {
        let [nginx_static, nginx_redirect, ucs_port, ucs_files_port, urr_port] = free_ports()?;
        let ucs_url = format!("http://127.0.0.1:{ucs_port}");
        let nginx_ports = [nginx_static, nginx_redirect];
        let mut nginx = nginx::start(tools, pinning, work, media, nginx_ports, &ucs_url)?;
        let roles = sys::bin_dir()?;
        let role = |name, port, config: String| {
            start_role(&roles, &work.path, pinning, name, port, &config)
        };
        let ucs = role("ucs", ucs_port, ucs_config(ucs_port, None))?;
        let ucs_files = role(
            "ucs",
            ucs_files_port,
            ucs_config(ucs_files_port, Some(media)),
        )?;
        let urr = role("urr", urr_port, urr_config(urr_port, &ucs_url))?;
        nginx.wait_ready(nginx_redirect)?;
        Ok(Servers {
            nginx,
            nginx_static,
            nginx_redirect,
            ucs,
            ucs_files,
            urr,
            ucs_url,
        })
    }

    /// The table's rows: each object from both of our sources, then the redirect.
    fn cases(&self) -> Vec<Case<'_>> {
        let mut cases = Vec::new();
        for (source, ours) in [
            ("synthetic", &self.ucs),
            ("media_dir file", &self.ucs_files),
        ] {
            for (quality, _, bytes) in OBJECTS {
                cases.push(Case {
                    label: format!("{} segment, {source}", size_label(bytes)),
                    path: segment_path(quality),
                    expect: Expect::Body(bytes),
                    nginx: (&self.nginx, self.nginx_static),
                    ours: (ours, ours.port),
                });
            }
        }
        let redirected = segment_path(OBJECTS[0].0);
        cases.push(Case {
            label: "302 to the upstream uCS".into(),
            expect: Expect::Redirect(format!("{}{redirected}", self.ucs_url)),
            path: redirected,
            nginx: (&self.nginx, self.nginx_redirect),
            ours: (&self.urr, self.urr.port),
        });
        cases
    }
}

/// One row: the same path asked of nginx and of one of our servers.
struct Case<'a> {
    label: String,
    path: String,
    expect: Expect,
    nginx: (&'a Server, u16),
    ours: (&'a Server, u16),
}

/// Checks both servers' answer to the case's path, then loads each in turn, round after round.
fn measure(
    tools: &Tools,
    pinning: &Pinning,
    case: &Case,
    effort: &Effort,
    congestion: &'static str,
) -> Result<Row> {
    interrupt::check()?;
    check_answer(case.nginx.1, &case.path, &case.expect, "nginx")?;
    check_answer(case.ours.1, &case.path, &case.expect, case.ours.0.name)?;
    // Rounds alternate between the servers, so a burst of other work on the machine
    // hits both alike; the medians go in the table.
    let Effort { seconds, rounds } = *effort;
    let (mut theirs, mut ours): (Vec<Load>, Vec<Load>) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        for (server, port, runs) in [
            (case.nginx.0, case.nginx.1, &mut theirs),
            (case.ours.0, case.ours.1, &mut ours),
        ] {
            interrupt::check()?;
            progress(format!(
                "http, {congestion}: {}: {}, {seconds} s, round {round} of {rounds}",
                case.label, server.name
            ));
            runs.push(load(tools, pinning, server, port, &case.path, seconds)?);
        }
    }
    Ok(Row {
        congestion,
        label: case.label.clone(),
        ours_name: case.ours.0.name,
        nginx_spread: spread(&theirs),
        ours_spread: spread(&ours),
        nginx: Load::median(&theirs),
        ours: Load::median(&ours),
    })
}
