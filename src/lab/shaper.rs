//! The lab's `cdnlab-shaper` daemon (userspace backend): its config, its start, and requests to
//! its control socket.

use super::process;
use super::state::{LabState, ProcessRecord};
use super::sys::{self, err, Error, Result};
use netem::daemon::{request, Request, Response};
use netem::Impairments;
use std::time::{Duration, Instant};

/// Writes the daemon's config and starts it; returns once its control socket answers.
pub fn start(state: &LabState, seed: u64) -> Result<ProcessRecord> {
    let queues: Vec<serde_json::Value> = state
        .directions
        .iter()
        .enumerate()
        .map(|(i, d)| {
            serde_json::json!({
                "id": d.id(&state.topology),
                "netns": format!("/run/netns/{}", d.queue_netns),
                "queue_num": d.queue_num,
                "impairments": d.impairments,
                "seed": seed.wrapping_add(i as u64),
            })
        })
        .collect();
    let config = serde_json::json!({
        "control_socket": state.shaper_socket(),
        "queues": queues,
    });
    let config_path = state.dir().join("shaper.json");
    std::fs::write(&config_path, config.to_string())
        .map_err(|e| Error(format!("{}: {e}", config_path.display())))?;
    let binary = sys::bin_dir()?.join("cdnlab-shaper");
    if !binary.is_file() {
        return err(format!(
            "{} is missing: build the workspace (cargo build) so the shaper sits beside cdnlab",
            binary.display()
        ));
    }
    let argv = vec![
        binary.to_string_lossy().into_owned(),
        "--config".to_string(),
        config_path.to_string_lossy().into_owned(),
    ];
    let log = state.logs_dir().join("shaper.log");
    let mut child = process::spawn_detached(&argv, &[], &log)?;
    let record = process::record_of(&child)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if matches!(request(&state.shaper_socket(), &Request::Ping), Ok(r) if r.ok) {
            return Ok(record);
        }
        if let Ok(Some(status)) = child.try_wait() {
            return err(format!(
                "the link shaper exited ({status}) before it was ready:\n{}",
                process::log_tail(&log, 15)
            ));
        }
        if Instant::now() > deadline {
            sys::signal_group(record.pid, libc::SIGKILL);
            return err(format!(
                "the link shaper was not ready within 10 s:\n{}",
                process::log_tail(&log, 15)
            ));
        }
        super::interrupt::check()?;
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn call(state: &LabState, req: &Request) -> Result<Response> {
    let socket = state.shaper_socket();
    let response = request(&socket, req).map_err(|e| {
        Error(format!(
            "the link shaper of lab `{}` does not answer on {}: {e}",
            state.lab,
            socket.display()
        ))
    })?;
    if !response.ok {
        return err(format!(
            "the link shaper refused: {}",
            response.error.clone().unwrap_or_default()
        ));
    }
    Ok(response)
}

/// Changes the impairments of the queue `id`.
pub fn set(state: &LabState, id: &str, impairments: &Impairments) -> Result<()> {
    call(
        state,
        &Request::Set {
            id: id.to_string(),
            impairments: impairments.clone(),
        },
    )
    .map(|_| ())
}

/// The daemon's view of every queue (impairments, counters, packets held).
pub fn show(state: &LabState) -> Result<Response> {
    call(state, &Request::Show)
}
