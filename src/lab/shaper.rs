//! The lab's `cdnlab-shaper` daemon (userspace backend): its config, its start, and requests to
//! its control socket.

use super::process;
use super::state::{LabState, ProcessRecord, LOGS};
use super::sys::{self, err, Error, Result};
use netem::daemon::{request, DaemonConfig, QueueSpec, Request, Response};
use netem::Impairments;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// Writes the daemon's config and starts it; returns once its control socket answers.
pub fn start(state: &LabState, seed: u64) -> Result<ProcessRecord> {
    let queues = state
        .directions
        .iter()
        .enumerate()
        .map(|(i, d)| QueueSpec {
            id: d.id(&state.topology),
            netns: Some(Path::new("/run/netns").join(&d.queue_netns)),
            queue_num: d.queue_num,
            impairments: d.impairments.clone(),
            seed: seed.wrapping_add(i as u64),
            // `links::install_queue_rules` and `set_direction` queue impaired directions only.
            no_rule_when_unimpaired: true,
        })
        .collect();
    let config = DaemonConfig::new(state.shaper_socket(), queues);
    let log = state.subdir(LOGS)?.join("shaper.log");
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(|e| Error(format!("{}: {e}", log.display())))?;
    let child = spawn(
        &config,
        &state.dir().join("shaper.json"),
        &state.shaper_socket(),
        out,
        || process::log_tail(&log, 15),
    )?;
    process::record_of(&child)
}

/// Writes the daemon's `config` to `config_path`, starts `cdnlab-shaper` (from beside this
/// executable) in a session of its own with stdout and stderr to `output`, and returns once
/// its control `socket` answers. On failure the message ends with `log_tail()`.
pub fn spawn(
    config: &DaemonConfig,
    config_path: &Path,
    socket: &Path,
    output: std::fs::File,
    log_tail: impl Fn() -> String,
) -> Result<Child> {
    let text = serde_json::to_string(config).map_err(|e| Error(e.to_string()))?;
    std::fs::write(config_path, text)
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
    let mut child = process::spawn_detached_to(&argv, &[], output)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if matches!(request(socket, &Request::Ping), Ok(r) if r.ok) {
            return Ok(child);
        }
        if let Ok(Some(status)) = child.try_wait() {
            return err(format!(
                "the link shaper exited ({status}) before it was ready:\n{}",
                log_tail()
            ));
        }
        let failed = if Instant::now() > deadline {
            Some(Error(format!(
                "the link shaper was not ready within 10 s:\n{}",
                log_tail()
            )))
        } else {
            super::interrupt::check().err()
        };
        if let Some(error) = failed {
            // Not in the lab's state yet, and in a session of its own (a Ctrl-C at the
            // terminal does not reach it): nothing else would ever stop it.
            sys::signal_group(child.id() as i32, libc::SIGKILL);
            let _ = child.wait();
            return Err(error);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Fails if the lab's shaper is gone, naming the lab, how the shaper ended (when this process
/// started it) and the last lines of its log. Without its shaper the lab's impaired links carry
/// no traffic (the queues fail closed), so whoever calls this stops the lab rather than wait.
/// The shaper is not restarted: the packets it held are lost and its schedules with them, so
/// the measurement would carry a silent gap.
pub fn check_alive(state: &LabState) -> Result<()> {
    let Some(shaper) = &state.shaper else {
        return Ok(());
    };
    if sys::process_alive(shaper.pid, shaper.start_time) {
        return Ok(());
    }
    // The shaper is dead or dying (its last threads still ending): wait, bounded, for how it
    // ended, unless its pid is already another process's (it was reaped elsewhere).
    let how = process::how_ended(shaper);
    let log = state.logs_dir().join("shaper.log");
    err(format!(
        "the link shaper of lab `{}` (cdnlab-shaper, pid {}) {how}; without it the lab's impaired links carry no traffic, so the lab is stopped. The end of {}:\n{}",
        state.lab,
        shaper.pid,
        log.display(),
        process::log_tail(&log, 15)
    ))
}

fn call(state: &LabState, req: &Request) -> Result<Response> {
    call_socket(&state.shaper_socket(), &format!("lab `{}`", state.lab), req)
}

/// Sends one request to the shaper serving `owner` (for messages) on `socket`; a refusal is
/// an error.
pub fn call_socket(socket: &Path, owner: &str, req: &Request) -> Result<Response> {
    let response = request(socket, req).map_err(|e| {
        Error(format!(
            "the link shaper of {owner} does not answer on {}: {e}",
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
