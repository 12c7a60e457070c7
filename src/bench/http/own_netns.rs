//! The benchmark's own network namespace, with only loopback, for one TCP congestion control:
//! which one new connections get decides who leads at 500 KB and 2 MB (BBR paces loopback
//! flows, and slows senders of page references most), so the bench sets it rather than
//! inheriting whatever the machine's default is.

use crate::lab::state::NETNS_PREFIX;
use crate::lab::{sys, Error, Result};

/// The congestion controls every table row is measured under: Linux's default, then BBR.
pub const CONGESTION_CONTROLS: [&str; 2] = ["cubic", "bbr"];

/// The lab name the namespaces go by, so `cdnlab down bench-http` (and `cdnlab clean`)
/// remove one a killed run left behind.
const LAB: &str = "bench-http";

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
    /// `cdnlab-bench-http.CONGESTION` with loopback up and `congestion` as the default for new
    /// TCP connections. Fails if the namespace already exists (another run, or a killed one).
    pub fn create(congestion: &'static str) -> std::result::Result<OwnNetns, Unavailable> {
        let name = format!("{NETNS_PREFIX}{LAB}.{congestion}");
        if std::path::Path::new("/run/netns").join(&name).exists() {
            return Err(Unavailable::Failed(Error(format!(
                "network namespace {name} exists: another `bench http` is running, or one was \
                 killed; `cdnlab down {LAB}` removes it"
            ))));
        }
        if !available().iter().any(|known| known == congestion) {
            // A congestion control built as a module is listed once loaded.
            let _ = sys::run(&["modprobe", "-q", &format!("tcp_{congestion}")], None);
            if !available().iter().any(|known| known == congestion) {
                return Err(Unavailable::Congestion(format!(
                    "not in {AVAILABLE}, and no module tcp_{congestion} loads"
                )));
            }
        }
        // Where the list cannot be widened (a read-only /proc/sys, a namespace of the machine's
        // own), this one cannot be measured; the others still can.
        let allowed = Allowance::grant(congestion)
            .map_err(|e| Unavailable::Congestion(format!("not allowed, and {e}")))?;
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

impl Drop for OwnNetns {
    fn drop(&mut self) {
        if let Err(e) = sys::ip_batch(None, &[format!("netns del {}", self.name)]) {
            tracing::warn!("removing network namespace {}: {e}", self.name);
        }
    }
}

const AVAILABLE: &str = "net/ipv4/tcp_available_congestion_control";
const ALLOWED: &str = "net/ipv4/tcp_allowed_congestion_control";

/// The congestion controls this kernel has loaded.
fn available() -> Vec<String> {
    read_list(AVAILABLE).unwrap_or_default()
}

fn read_list(key: &str) -> Result<Vec<String>> {
    let path = format!("/proc/sys/{key}");
    std::fs::read_to_string(&path)
        .map(|text| text.split_whitespace().map(str::to_string).collect())
        .map_err(|e| Error(format!("{path}: {e}")))
}

/// A congestion control added to the machine's allowed list for the benchmark's run: Linux
/// lets a namespace other than the machine's own default only to one on that list (reno and
/// the machine's default, unless an administrator added more). The list as it was is
/// written back when this is dropped.
struct Allowance {
    before: Vec<String>,
}

impl Allowance {
    /// `None` if `congestion` is already allowed: nothing to grant or restore.
    fn grant(congestion: &str) -> Result<Option<Allowance>> {
        let before = read_list(ALLOWED)?;
        if before.iter().any(|allowed| allowed == congestion) {
            return Ok(None);
        }
        let widened = format!("{} {congestion}", before.join(" "));
        sys::write_sysctl(ALLOWED, widened.trim())?;
        tracing::info!(
            "widened {ALLOWED} from `{}` to `{}` until the benchmark ends (if it is killed, \
             write the first back)",
            before.join(" "),
            widened.trim()
        );
        Ok(Some(Allowance { before }))
    }
}

impl Drop for Allowance {
    fn drop(&mut self) {
        if let Err(e) = sys::write_sysctl(ALLOWED, &self.before.join(" ")) {
            tracing::warn!(
                "restoring {ALLOWED} to `{}`: {e}; set it back by hand",
                self.before.join(" ")
            );
        }
    }
}
