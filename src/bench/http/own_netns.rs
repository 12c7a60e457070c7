//! The benchmark's own network namespace, with only loopback, for one TCP congestion control:
//! which one new connections get decides who leads at 500 KB and 2 MB (BBR paces loopback
//! flows, and slows senders of page references most), so the bench sets it rather than
//! inheriting whatever the machine's default is.

use super::allowance::{self, available, Allowance, GrantError};
use crate::lab::file_lock::{self, FileLock};
use crate::lab::state::{stateless_owner_lock, NETNS_PREFIX};
use crate::lab::{sys, Error, Result};

/// The congestion controls every table row is measured under: Linux's default, then BBR.
pub const CONGESTION_CONTROLS: [&str; 2] = ["cubic", "bbr"];

/// The lab name the namespaces go by, so `cdnlab down bench-http` (and `cdnlab clean`)
/// remove one a killed run left behind.
const LAB: &str = "bench-http";

/// How long [`Session::begin`] waits for the lock: long enough for a `cdnlab clean` to
/// remove a killed run's namespaces (it holds the lock meanwhile), short beside another run.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The machine's one `bench http` run: an exclusive lock the kernel releases however the
/// process ends, so a run that finds leftovers (namespaces, a widened list of congestion
/// controls) knows they are a killed run's, not a live one's, and `cdnlab clean` keeps the
/// namespaces of a live one. Namespaces are made only through it.
pub struct Session {
    _lock: FileLock,
}

impl Session {
    /// Takes the lock, then checks that no namespace of the bench is left (a killed run's:
    /// `cdnlab down bench-http` removes them) and writes back a list of congestion controls
    /// a killed run left widened. Fails if another process still holds the lock after
    /// [`LOCK_WAIT`].
    pub fn begin() -> Result<Session> {
        let path = stateless_owner_lock(LAB);
        let lock = FileLock::take_within(&path, LOCK_WAIT)?.ok_or_else(|| {
            let holder = file_lock::holder(&path)
                .ok()
                .flatten()
                .map_or(String::new(), |pid| format!(" (pid {pid})"));
            Error(format!(
                "another `cdnlab bench http` is running on this machine, or a `cdnlab clean` \
                 is removing its namespaces: a process{holder} has held {} for {} s",
                path.display(),
                LOCK_WAIT.as_secs()
            ))
        })?;
        for congestion in CONGESTION_CONTROLS {
            let name = netns_name(congestion);
            if std::path::Path::new("/run/netns").join(&name).exists() {
                return Err(Error(format!(
                    "network namespace {name} exists, left by a `bench http` that was killed; \
                     `cdnlab down {LAB}` removes it"
                )));
            }
        }
        allowance::restore_left_behind()?;
        Ok(Session { _lock: lock })
    }

    /// `cdnlab-bench-http.CONGESTION` with loopback up and `congestion` as the default for new
    /// TCP connections.
    pub fn create(&self, congestion: &'static str) -> std::result::Result<OwnNetns, Unavailable> {
        OwnNetns::create(congestion)
    }
}

/// A namespace made for one congestion control, deleted when dropped.
pub struct OwnNetns {
    name: String,
    /// Set while the congestion control had to be allowed for namespaces other than the
    /// machine's own; dropped (restoring the list) after the namespace is gone.
    _allowed: Option<Allowance>,
}

/// Why a namespace could not be had for a congestion control.
pub enum Unavailable {
    /// This kernel has no such congestion control (the report says so and goes on).
    Congestion(String),
    /// Anything else stops the benchmark.
    Failed(Error),
}

impl OwnNetns {
    fn create(congestion: &'static str) -> std::result::Result<OwnNetns, Unavailable> {
        let name = netns_name(congestion);
        if !available().iter().any(|known| known == congestion) {
            // A congestion control built as a module is listed once loaded.
            let _ = sys::run(&["modprobe", "-q", &format!("tcp_{congestion}")], None);
            if !available().iter().any(|known| known == congestion) {
                return Err(Unavailable::Congestion(format!(
                    "not in net/ipv4/tcp_available_congestion_control, and no module \
                     tcp_{congestion} loads"
                )));
            }
        }
        // Where the list cannot be widened (a read-only /proc/sys, a namespace of the machine's
        // own), this one cannot be measured; the others still can.
        let allowed = Allowance::grant(congestion).map_err(|e| match e {
            GrantError::Sysctl(e) => Unavailable::Congestion(format!("not allowed, and {e}")),
            GrantError::Record(e) => Unavailable::Failed(e),
        })?;
        sys::ip_batch(None, &[format!("netns add {name}")]).map_err(Unavailable::Failed)?;
        // From here on, dropping it deletes the namespace (and then restores the allowance).
        let netns = OwnNetns {
            name,
            _allowed: allowed,
        };
        sys::ip_batch(Some(&netns.name), &["link set lo up".into()])
            .map_err(Unavailable::Failed)?;
        netns
            .run(|| sys::write_sysctl("net/ipv4/tcp_congestion_control", congestion))
            .map_err(Unavailable::Failed)?;
        Ok(netns)
    }

    /// Its name under /run/netns.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `f` inside the namespace: its sockets and the processes it starts live there.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        sys::in_netns(&self.name, f)
    }
}

fn netns_name(congestion: &str) -> String {
    format!("{NETNS_PREFIX}{LAB}.{congestion}")
}

impl Drop for OwnNetns {
    fn drop(&mut self) {
        if let Err(e) = sys::ip_batch(None, &[format!("netns del {}", self.name)]) {
            tracing::warn!("removing network namespace {}: {e}", self.name);
        }
    }
}
