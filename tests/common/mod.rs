//! Shared by the integration tests: their harness (what each test needs of the machine), running
//! the built binaries, and a lab guard that removes its lab even when the test fails.

#![allow(dead_code)] // Each test binary uses a different part of this module.

pub mod harness;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn cdnlab() -> &'static str {
    env!("CARGO_BIN_EXE_cdnlab")
}

pub fn probe() -> &'static str {
    env!("CARGO_BIN_EXE_probe")
}

/// The repository's root (the root crate's manifest directory).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A finished command's stdout and stderr, for a failure message.
pub fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The JSON in `path`, if it is there and whole.
pub fn read_json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Runs `docker ARGS` and returns its output.
pub fn docker(args: &[&str]) -> Output {
    Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs")
}

/// Builds the testbed's image from the test's own binaries (`scripts/build-image.sh`).
pub fn build_image(tag: &str) {
    let bin_dir = Path::new(cdnlab())
        .parent()
        .expect("the binaries' directory");
    let build = Command::new(repo_root().join("scripts/build-image.sh"))
        .arg("--bin-dir")
        .arg(bin_dir)
        .args(["--tag", tag])
        .output()
        .expect("build-image.sh runs");
    assert!(build.status.success(), "build-image.sh: {}", text(&build));
}

/// Runs `cdnlab ARGS` and returns its output.
pub fn run(args: &[&str]) -> Output {
    Command::new(cdnlab())
        .args(args)
        .output()
        .expect("cdnlab runs")
}

/// Runs `cdnlab ARGS`, failing the test with its output unless it succeeds; returns stdout.
pub fn run_ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "cdnlab {} failed ({}):\n{}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A lab for one test: its topology is written to a temporary file, and dropping the guard
/// removes the lab whatever state it is in.
pub struct Lab {
    pub name: String,
    pub dir: PathBuf,
}

impl Lab {
    /// `topology` is TOML without `name`; `{probe}` is replaced by the probe binary's path.
    pub fn new(name: &str, topology: &str) -> Lab {
        let dir = std::env::temp_dir().join(format!("cdnlab-test-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let text = format!(
            "name = \"{name}\"\n{}",
            topology.replace("{probe}", probe())
        );
        std::fs::write(dir.join("topology.toml"), text).expect("write topology");
        // A leftover of an earlier, killed run of this same test.
        let _ = run(&["clean", name]);
        Lab {
            name: name.to_string(),
            dir,
        }
    }

    pub fn topology(&self) -> PathBuf {
        self.dir.join("topology.toml")
    }

    pub fn up(&self) {
        run_ok(&["up", self.topology().to_str().unwrap()]);
    }

    /// Runs a command in a node, returning stdout (the test fails if it fails).
    pub fn exec(&self, node: &str, command: &[&str]) -> String {
        let mut args = vec!["exec", "--lab", &self.name, node, "--"];
        args.extend(command);
        run_ok(&args)
    }

    pub fn status_json(&self) -> serde_json::Value {
        serde_json::from_str(&run_ok(&["status", &self.name, "--json"])).expect("status JSON")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = run(&["down", &self.name]);
        let _ = run(&["clean", &self.name]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Processes of lab `name` still running: node processes (their environment names the lab)
/// and its shaper (its command line names a config in the lab's state directory).
fn lab_processes(name: &str) -> Vec<String> {
    let env_mark = format!("CDNLAB_LAB={name}");
    let config_mark = format!("/run/cdnlab/{name}/");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i64>() else {
            continue;
        };
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let in_env = environ
            .split(|&b| b == 0)
            .any(|var| var == env_mark.as_bytes());
        let shaper = cmdline
            .split(|&b| b == 0)
            .any(|arg| arg.starts_with(config_mark.as_bytes()));
        if (in_env || shaper) && alive(pid) {
            let command = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push(format!("process {pid}: {}", command.trim()));
        }
    }
    found
}

/// Everything of lab `name` that is still on the machine: namespaces, /etc/netns entries, its
/// state directory, its node and shaper processes. Empty when the lab is fully gone.
pub fn leftovers(name: &str) -> Vec<String> {
    let prefix = format!("cdnlab-{name}.");
    let mut found = Vec::new();
    for dir in ["/run/netns", "/etc/netns"] {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if file.starts_with(&prefix) {
                found.push(format!("{dir}/{file}"));
            }
        }
    }
    let state = Path::new("/run/cdnlab").join(name);
    if state.exists() {
        found.push(state.display().to_string());
    }
    found.extend(lab_processes(name));
    found
}

/// True if the process exists (and is not a zombie).
pub fn alive(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
                .unwrap_or(false)
        })
        .unwrap_or(false)
}

/// `cdnlab-test-NAME` under the temporary directory, for a test's files: a leftover of an
/// earlier run is removed first, and the directory when dropped, unless the test is failing
/// (then it stays, to be looked at). Declared before whatever writes into it (a lab, a
/// Compose project), so dropped after it.
pub struct TestDir(PathBuf);

impl TestDir {
    /// The directory, not made yet (`cdnlab run --out` makes its own).
    pub fn new(name: &str) -> TestDir {
        let path = std::env::temp_dir().join(format!("cdnlab-test-{name}"));
        let _ = std::fs::remove_dir_all(&path);
        TestDir(path)
    }

    /// The directory, made empty.
    pub fn created(name: &str) -> TestDir {
        let dir = TestDir::new(name);
        std::fs::create_dir_all(&dir.0).expect("a test directory under the temporary directory");
        dir
    }
}

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TestDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `cdnlab run TOPOLOGY --name NAME --out (temp dir) ARGS…`: the run's summary and directory.
/// Fails the test, with the run's output, unless it succeeds and leaves nothing behind.
pub fn run_topology(name: &str, topology: &str, args: &[&str]) -> (serde_json::Value, TestDir) {
    let out = TestDir::new(name);
    let _ = run(&["clean", name]);
    let mut all = vec![
        "run",
        topology,
        "--name",
        name,
        "--out",
        out.to_str().unwrap(),
    ];
    all.extend(args);
    let result = run(&all);
    let summary: serde_json::Value = std::fs::read_to_string(out.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| {
            panic!(
                "no summary ({}):\n{}\n{}",
                result.status,
                String::from_utf8_lossy(&result.stdout),
                String::from_utf8_lossy(&result.stderr)
            )
        });
    assert!(result.status.success(), "{summary}");
    assert_eq!(leftovers(name), Vec::<String>::new());
    (summary, out)
}

/// `cdnlab run TOPOLOGY --set SET` for each `(SET, WANT)`: each must fail before anything is
/// made, with an error containing WANT, and leave nothing of lab `name` behind.
#[allow(dead_code)] // Not every test binary that includes this module refuses parameters.
pub fn check_refused_sets(topology: &str, name: &str, cases: &[(&str, &str)]) {
    let out = TestDir::new(name);
    for (set, want) in cases {
        let output = run(&[
            "run",
            topology,
            "--name",
            name,
            "--set",
            set,
            "--out",
            out.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{set} was accepted");
        assert!(stderr.contains(want), "{set}: {stderr}");
        assert!(stderr.contains("Nothing was created"), "{set}: {stderr}");
        assert_eq!(leftovers(name), Vec::<String>::new());
    }
}
