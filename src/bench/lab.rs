//! A benchmark's lab: built from topology text, always removed (on error, panic or early
//! return too), with the `probe` binary run inside its nodes.

use super::BenchOptions;
use crate::lab::{self, sys, Error, LabState, Result, UpOptions};
use crate::probe::RttReport;
use crate::topology::{self, LoadOptions, Topology};
use netem::daemon::Response;
use serde::de::DeserializeOwned;
use std::process::{Child, Command, Output, Stdio};

/// The port `probe serve` listens on in every benchmark topology.
pub const PORT: u16 = 9000;

/// The link emulation's seed: fixed, so a rerun draws the same losses and jitter.
const SEED: u64 = 1;

/// Three nodes in a line, `client — router — server`, the server running `probe serve`.
/// `access` and `core` are TOML lines (impairment keys) for the client–router and the
/// router–server link.
pub fn chain(lab: &str, access: &str, core: &str) -> String {
    format!(
        r#"name = "{lab}"
[nodes.client]
[nodes.router]
[nodes.server]
role = "probe"
config = {{ mode = "server", port = {PORT} }}
ready = {{ tcp = {PORT} }}

[[links]]
endpoints = ["client", "router"]
{access}

[[links]]
endpoints = ["router", "server"]
{core}
"#
    )
}

/// Parses a benchmark's topology text (as lab `name` if given, else the text's own name) and
/// removes whatever an earlier, interrupted run of the same benchmark left behind, so `start`
/// never meets a stale lab.
pub fn prepare(text: &str, name: Option<&str>) -> Result<Topology> {
    let options = LoadOptions { name, set: &[] };
    let topology = topology::parse(text, "<benchmark topology>", &options)
        .map_err(|e| Error(format!("a benchmark topology does not parse: {e}")))?;
    if let Some(failure) = lab::clean(std::slice::from_ref(&topology.name), false)?.failure() {
        return Err(failure);
    }
    Ok(topology)
}

/// A lab that is up; dropping it tears it down.
pub struct BenchLab {
    state: LabState,
    /// Set by `down`, so `drop` does not tear down twice.
    down: bool,
}

impl BenchLab {
    /// `prepare` then `start`.
    pub fn up(text: &str, options: &BenchOptions) -> Result<BenchLab> {
        BenchLab::start(prepare(text, None)?, options)
    }

    /// Brings a prepared topology up (nothing else: `scale` times exactly this).
    pub fn start(topology: Topology, options: &BenchOptions) -> Result<BenchLab> {
        let state = lab::up(
            topology,
            &UpOptions {
                link_backend: options.link_backend,
                out_dir: None,
                seed: SEED,
            },
        )?;
        Ok(BenchLab { state, down: false })
    }

    pub fn state(&self) -> &LabState {
        &self.state
    }

    /// `cdnlab down` of this lab (what `scale` times); the guard is then spent.
    pub fn down(mut self) -> Result<()> {
        self.down = true;
        lab::down(&self.state.lab)
    }

    /// The shaper daemon's queues and counters, or `None` on the kernel backend (no daemon).
    pub fn shaper_status(&self) -> Result<Option<Response>> {
        if self.state.shaper.is_none() {
            return Ok(None);
        }
        lab::shaper::show(&self.state).map(Some)
    }

    /// The seed of the shaper queue for what `sender` sends on the segment named `segment`
    /// (`None` without a shaper): the lab's seed plus the direction's index, as
    /// `lab::shaper::start` hands them out. With it the shaper's model can be replayed.
    pub fn shaper_seed(&self, segment: &str, sender: &str) -> Option<u64> {
        self.state.shaper.as_ref()?;
        let topology = &self.state.topology;
        let segment = topology.segments.iter().position(|s| s.name == segment)?;
        let sender = topology.nodes.iter().position(|n| n.name == sender)?;
        let index = self.state.direction_index(segment, sender)?;
        Some(SEED.wrapping_add(index as u64))
    }

    /// Reads sysctl `key` (`net/ipv4/...` form) of `node`'s namespace, writing `value` to it
    /// first if given; returns the value read.
    pub fn sysctl(&self, node: &str, key: &str, value: Option<&str>) -> Result<String> {
        let netns = self.netns(node)?;
        let key = key.to_string();
        let value = value.map(str::to_string);
        sys::in_netns(&netns, move || {
            if let Some(value) = &value {
                sys::write_sysctl(&key, value)?;
            }
            let path = format!("/proc/sys/{key}");
            std::fs::read_to_string(&path)
                .map(|text| text.trim().to_string())
                .map_err(|e| Error(format!("{path}: {e}")))
        })
    }

    /// The namespace of `node`.
    fn netns(&self, node: &str) -> Result<String> {
        self.state
            .topology
            .nodes
            .iter()
            .position(|n| n.name == node)
            .map(|index| self.state.netns(index))
            .ok_or_else(|| {
                Error(format!(
                    "benchmark lab `{}` has no node `{node}`",
                    self.state.lab
                ))
            })
    }

    /// The `probe` command line, run inside `node`'s namespace.
    fn probe_command(&self, node: &str, args: &[&str]) -> Result<Command> {
        let netns = self.netns(node)?;
        let probe = sys::bin_dir()?.join("probe");
        if !probe.is_file() {
            return Err(Error(format!(
                "{} is missing: build the workspace so `probe` sits beside cdnlab",
                probe.display()
            )));
        }
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &netns])
            .arg(probe)
            .args(args)
            .stdin(Stdio::null());
        Ok(command)
    }

    /// Runs `probe ARGS` in `node` and parses the JSON report it prints.
    pub fn probe<T: DeserializeOwned>(&self, node: &str, args: &[&str]) -> Result<T> {
        let output = self
            .probe_command(node, args)?
            .output()
            .map_err(|e| Error(format!("cannot run ip netns exec: {e}")))?;
        parse_report(args, output)
    }

    /// `probe rtt` from the client to the server's echo port: `count` pings, one per
    /// `interval` (tc time), with every sample if `samples`.
    pub fn client_rtt(&self, count: u64, interval: &str, samples: bool) -> Result<RttReport> {
        let target = format!("server:{PORT}");
        let count = count.to_string();
        let mut args = vec![
            "rtt",
            "--target",
            &target,
            "--count",
            &count,
            "--interval",
            interval,
        ];
        if samples {
            args.push("--samples");
        }
        self.probe("client", &args)
    }

    /// Starts `probe ARGS` in `node`; `finish` collects its report.
    pub fn spawn_probe(&self, node: &str, args: &[&str]) -> Result<RunningProbe> {
        let child = self
            .probe_command(node, args)?
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error(format!("cannot run ip netns exec: {e}")))?;
        Ok(RunningProbe {
            child: Some(child),
            args: args.iter().map(|a| a.to_string()).collect(),
        })
    }
}

impl Drop for BenchLab {
    fn drop(&mut self) {
        if !self.down {
            if let Err(e) = lab::teardown::teardown(&self.state) {
                tracing::warn!("removing benchmark lab `{}`: {e}", self.state.lab);
            }
        }
    }
}

/// A `probe` running in the background; killed if dropped before `finish`.
pub struct RunningProbe {
    child: Option<Child>,
    args: Vec<String>,
}

impl RunningProbe {
    /// Waits for the probe and parses its report.
    pub fn finish<T: DeserializeOwned>(mut self) -> Result<T> {
        let Some(child) = self.child.take() else {
            return Err(Error("the probe was already collected".into()));
        };
        let output = child
            .wait_with_output()
            .map_err(|e| Error(format!("waiting for probe: {e}")))?;
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        parse_report(&args, output)
    }
}

impl Drop for RunningProbe {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A probe's JSON report, or an error with its command line and stderr.
fn parse_report<T: DeserializeOwned>(args: &[&str], output: Output) -> Result<T> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(Error(format!(
            "`probe {}` failed ({}): {}",
            args.join(" "),
            output.status,
            stderr.trim()
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).map_err(|e| {
        Error(format!(
            "`probe {}` printed no report I can read ({e}): {}",
            args.join(" "),
            stdout.trim()
        ))
    })
}
