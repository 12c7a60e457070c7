//! Does this kernel have `sch_netem`? Decided from what the kernel says about itself.
//!
//! The sure test would be to add a netem qdisc somewhere, but that needs a throw-away network
//! namespace (root, a namespace to create and remove) on every run of `cdnlab up`, and it loads
//! the module as a side effect. Reading the facts is cheap and without effects:
//! - `/sys/module/sch_netem` exists when the module is loaded;
//! - the kernel's build configuration (`/proc/config.gz`, else `/boot/config-<release>`) says
//!   `CONFIG_NET_SCH_NETEM=y` (built in), `=m` (a module) or `is not set`;
//! - `sch_netem.ko` (maybe compressed) under `/lib/modules/<release>/` can be loaded on demand
//!   (the kernel requests the module when tc asks for a netem qdisc).
//!
//! When nothing can be read, the answer is no: the userspace backend works on every kernel.

use std::path::Path;
use std::process::Command;

/// What the machine says about `sch_netem`, gathered by [`netem_available`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetemFacts {
    /// The kernel's build configuration, when one was readable.
    pub kernel_config: Option<String>,
    /// `/sys/module/sch_netem` exists.
    pub module_loaded: bool,
    /// `sch_netem.ko` (or `.ko.gz`, `.ko.xz`, `.ko.zst`) is installed for the running kernel.
    pub module_installed: bool,
}

/// The decision over the facts: loaded, or built in, or a module that is installed; when the
/// configuration is unknown, an installed module is enough.
pub fn netem_available_from(facts: &NetemFacts) -> bool {
    if facts.module_loaded {
        return true;
    }
    match facts.kernel_config.as_deref().map(netem_config) {
        Some(Some("y")) => true,
        Some(Some("m")) | None => facts.module_installed,
        Some(_) => false,
    }
}

/// True when this kernel can run tc-netem (reads the facts, then [`netem_available_from`]).
pub fn netem_available() -> bool {
    netem_available_from(&read_facts())
}

/// The value of `CONFIG_NET_SCH_NETEM` in a kernel configuration (`None`: not set).
fn netem_config(config: &str) -> Option<&str> {
    config
        .lines()
        .find_map(|line| line.trim().strip_prefix("CONFIG_NET_SCH_NETEM="))
}

fn read_facts() -> NetemFacts {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|text| text.trim().to_string())
        .unwrap_or_default();
    NetemFacts {
        kernel_config: read_kernel_config(&release),
        module_loaded: Path::new("/sys/module/sch_netem").exists(),
        module_installed: !release.is_empty()
            && ["/lib/modules", "/usr/lib/modules"].iter().any(|base| {
                ["", ".gz", ".xz", ".zst"].iter().any(|ext| {
                    Path::new(base)
                        .join(&release)
                        .join(format!("kernel/net/sched/sch_netem.ko{ext}"))
                        .exists()
                })
            }),
    }
}

/// `/proc/config.gz` through `gzip -dc` (no gzip decoder in our dependencies), else the
/// distribution's `/boot/config-<release>`.
fn read_kernel_config(release: &str) -> Option<String> {
    let from_proc = Path::new("/proc/config.gz")
        .exists()
        .then(|| {
            Command::new("gzip")
                .args(["-dc", "/proc/config.gz"])
                .output()
                .ok()
        })
        .flatten()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).into_owned());
    from_proc.or_else(|| std::fs::read_to_string(format!("/boot/config-{release}")).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(config: Option<&str>, loaded: bool, installed: bool) -> NetemFacts {
        NetemFacts {
            kernel_config: config.map(String::from),
            module_loaded: loaded,
            module_installed: installed,
        }
    }

    #[test]
    fn decision_follows_the_kernel_configuration() {
        let built_in = "CONFIG_NET_SCHED=y\nCONFIG_NET_SCH_NETEM=y\n";
        let module = "CONFIG_MODULES=y\nCONFIG_NET_SCH_NETEM=m\n";
        let absent = "# CONFIG_MODULES is not set\n# CONFIG_NET_SCH_NETEM is not set\n";
        assert!(netem_available_from(&facts(Some(built_in), false, false)));
        assert!(netem_available_from(&facts(Some(module), false, true)));
        assert!(
            !netem_available_from(&facts(Some(module), false, false)),
            "module not installed"
        );
        assert!(!netem_available_from(&facts(Some(absent), false, false)));
        assert!(
            !netem_available_from(&facts(Some(absent), false, true)),
            "a stale module file"
        );
        assert!(
            !netem_available_from(&facts(Some(""), false, false)),
            "not in the config at all"
        );
        assert!(
            netem_available_from(&facts(Some(absent), true, false)),
            "loaded wins"
        );
        // Without a readable configuration, only a module tells.
        assert!(netem_available_from(&facts(None, false, true)));
        assert!(netem_available_from(&facts(None, true, false)));
        assert!(!netem_available_from(&facts(None, false, false)));
    }

    #[test]
    fn config_value_is_read_from_its_line() {
        assert_eq!(netem_config("CONFIG_NET_SCH_NETEM=m\n"), Some("m"));
        assert_eq!(
            netem_config("CONFIG_NET_SCH_NETEMX=y\n# CONFIG_NET_SCH_NETEM is not set\n"),
            None
        );
    }
}
