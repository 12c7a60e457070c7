//! The test harness of the integration tests that need the machine (root, namespaces, Docker):
//! each test declares what it needs, and a test whose needs this machine does not meet is listed
//! as *ignored*, so `cargo nextest run` and `cargo test` count it as skipped instead of showing a
//! pass that tested nothing. Under CI (`CI` set) nothing is skipped: a test whose needs are not
//! met fails, naming what is missing, because there a skip would hide a broken setup.
//!
//! Built on libtest-mimic (the test binary is `harness = false`), which speaks libtest's
//! command line, so nextest lists and runs these tests like any other.

#![allow(dead_code)] // Each test binary uses a different part of this module.

use std::process::{Command, ExitCode, Stdio};
use std::sync::OnceLock;

/// What a test needs from the machine it runs on.
#[derive(Clone, Copy)]
pub struct Needs {
    root: bool,
    docker: bool,
    tools: &'static [&'static str],
    /// Run only when asked for (`--ignored`), as `#[ignore]` does: a measurement, not a check.
    on_request: bool,
}

/// A test that runs anywhere.
pub const NOTHING: Needs = Needs::tools(&[]);
/// What a lab needs besides root: `ip`, and `iptables-legacy` for the userspace link
/// backend's NFQUEUE rules.
pub const LAB_TOOLS: &[&str] = &["ip", "iptables-legacy"];
/// A test that brings up labs: root for namespaces, and [`LAB_TOOLS`].
pub const LAB: Needs = Needs::root(LAB_TOOLS);
/// A test that runs containers: a Docker engine that answers.
pub const DOCKER: Needs = Needs {
    root: false,
    docker: true,
    tools: &[],
    on_request: false,
};
/// A test that brings up labs and runs containers.
pub const LAB_AND_DOCKER: Needs = Needs {
    root: true,
    docker: true,
    tools: LAB_TOOLS,
    on_request: false,
};

impl Needs {
    /// Root and these programs on `PATH`.
    pub const fn root(tools: &'static [&'static str]) -> Needs {
        Needs {
            root: true,
            docker: false,
            tools,
            on_request: false,
        }
    }

    /// Only these programs on `PATH`.
    pub const fn tools(tools: &'static [&'static str]) -> Needs {
        Needs {
            root: false,
            docker: false,
            tools,
            on_request: false,
        }
    }

    /// The same needs, for a test that runs only when asked for: a measurement.
    pub const fn on_request(self) -> Needs {
        Needs {
            on_request: true,
            ..self
        }
    }

    /// What this machine lacks of these needs, if anything.
    fn missing(self) -> Option<String> {
        // SAFETY: geteuid has no preconditions.
        if self.root && unsafe { libc::geteuid() } != 0 {
            return Some("root".into());
        }
        if let Some(tool) = self.tools.iter().find(|t| !on_path(t)) {
            return Some(format!("`{tool}` on PATH"));
        }
        if self.docker && !docker_answers() {
            return Some("a Docker engine that answers `docker info`".into());
        }
        None
    }
}

/// `cdnlab::lab::sys::on_path` again: the netem crate's tests include this file and do not
/// depend on cdnlab.
fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
}

/// Asked once per test process: `docker info` takes a moment.
fn docker_answers() -> bool {
    static ANSWERS: OnceLock<bool> = OnceLock::new();
    *ANSWERS.get_or_init(|| {
        Command::new("docker")
            .args(["info", "--format", "{{.ServerVersion}}"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Lists and runs `tests` (name, needs, body) with libtest's command line; see the module doc.
pub fn run(tests: Vec<(&'static str, Needs, fn())>) -> ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let under_ci = std::env::var_os("CI").is_some();
    let trials = tests
        .into_iter()
        .map(|(name, needs, body)| {
            let missing = needs.missing();
            let skipped = needs.on_request || (missing.is_some() && !under_ci);
            libtest_mimic::Trial::test(name, move || match missing {
                Some(what) => {
                    Err(format!("this machine cannot run this test: it needs {what}").into())
                }
                None => {
                    body();
                    Ok(())
                }
            })
            .with_ignored_flag(skipped)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}

/// `fn main` of a test binary: `tests!(LAB => a, b; NOTHING => c)` runs the functions `a`, `b`
/// and `c`, the first two only where labs can run. The calling file has `harness` in scope.
#[allow(unused_macros)] // tests/cli.rs needs nothing of the machine, and no harness.
macro_rules! tests {
    ($($needs:expr => $($test:ident),+ $(,)?);+ $(;)?) => {
        fn main() -> std::process::ExitCode {
            harness::run(vec![$($((stringify!($test), $needs, $test as fn())),+),+])
        }
    };
}
#[allow(unused_imports)]
pub(crate) use tests;
