//! Every role binary's command line and logs, run as a process (no lab, no root).

use std::process::{Command, Output};

/// Every role binary with its path; checked against the library's list below.
const BINARIES: &[(&str, &str)] = &[
    ("probe", env!("CARGO_BIN_EXE_probe")),
    ("has-client", env!("CARGO_BIN_EXE_has-client")),
    ("ucs", env!("CARGO_BIN_EXE_ucs")),
    ("dcs", env!("CARGO_BIN_EXE_dcs")),
    ("urr", env!("CARGO_BIN_EXE_urr")),
    ("drr", env!("CARGO_BIN_EXE_drr")),
    ("cloud", env!("CARGO_BIN_EXE_cloud")),
    ("fdn", env!("CARGO_BIN_EXE_fdn")),
    ("fog-viewers", env!("CARGO_BIN_EXE_fog-viewers")),
    ("icn-router", env!("CARGO_BIN_EXE_icn-router")),
    ("icn-border", env!("CARGO_BIN_EXE_icn-border")),
    ("cdn-site", env!("CARGO_BIN_EXE_cdn-site")),
    ("controller", env!("CARGO_BIN_EXE_controller")),
    ("icn-load", env!("CARGO_BIN_EXE_icn-load")),
    ("farm-server", env!("CARGO_BIN_EXE_farm-server")),
    ("farm-dispatcher", env!("CARGO_BIN_EXE_farm-dispatcher")),
    ("farm-datacenter", env!("CARGO_BIN_EXE_farm-datacenter")),
    ("farm-load", env!("CARGO_BIN_EXE_farm-load")),
    ("p2p-tracker", env!("CARGO_BIN_EXE_p2p-tracker")),
    ("p2p-peer", env!("CARGO_BIN_EXE_p2p-peer")),
    ("p2p-cloud", env!("CARGO_BIN_EXE_p2p-cloud")),
];

fn run(path: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(path);
    command.args(args).env_remove("RUST_LOG");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("the binary runs")
}

#[test]
fn every_role_is_listed() {
    let listed: Vec<&str> = BINARIES.iter().map(|(name, _)| *name).collect();
    assert_eq!(listed, cdnlab::roles::ROLES);
}

#[test]
fn every_role_answers_help_and_version() {
    for (name, path) in BINARIES {
        let help = run(path, &["--help"], &[]);
        let text = String::from_utf8_lossy(&help.stdout);
        assert!(help.status.success(), "{name} --help: {help:?}");
        assert!(text.contains("--config"), "{name} --help:\n{text}");
        let version = run(path, &["--version"], &[]);
        let text = String::from_utf8_lossy(&version.stdout);
        assert!(version.status.success(), "{name} --version: {version:?}");
        assert!(
            text.trim() == format!("{name} {}", env!("CARGO_PKG_VERSION")),
            "{name} --version: {text}"
        );
    }
}

#[test]
fn a_missing_config_is_named_with_a_failing_exit() {
    for (name, path) in BINARIES {
        let out = run(path, &["--config", "/nonexistent/node.toml"], &[]);
        let log = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {log}");
        assert!(log.contains("/nonexistent/node.toml"), "{name}: {log}");
    }
}

/// `RUST_LOG=debug` gives debug lines, each led by an RFC 3339 UTC timestamp; without it there
/// are none; `CDNLAB_LOG_FORMAT=json` makes each line a JSON object.
#[test]
fn rust_log_sets_the_level_and_lines_carry_timestamps() {
    let ucs = env!("CARGO_BIN_EXE_ucs");
    let args = ["--config", "/nonexistent/node.toml"];
    let debug = run(ucs, &args, &[("RUST_LOG", "debug")]);
    let log = String::from_utf8_lossy(&debug.stderr).into_owned();
    let line = log
        .lines()
        .find(|l| l.contains("DEBUG"))
        .unwrap_or_else(|| panic!("no debug line:\n{log}"));
    let stamp = line.split_whitespace().next().unwrap_or("");
    let shape = stamp.len() >= 20
        && stamp.as_bytes()[4] == b'-'
        && stamp.as_bytes()[10] == b'T'
        && stamp.ends_with('Z')
        && stamp[..4].chars().all(|c| c.is_ascii_digit());
    assert!(shape, "not an RFC 3339 UTC timestamp: {line}");
    assert!(line.contains("config /nonexistent/node.toml"), "{line}");

    let quiet = run(ucs, &args, &[]);
    let log = String::from_utf8_lossy(&quiet.stderr);
    assert!(!log.contains("DEBUG"), "{log}");

    let json = run(
        ucs,
        &args,
        &[("RUST_LOG", "debug"), ("CDNLAB_LOG_FORMAT", "json")],
    );
    let log = String::from_utf8_lossy(&json.stderr);
    let first = log.lines().next().unwrap_or("");
    let value: serde_json::Value =
        serde_json::from_str(first).unwrap_or_else(|e| panic!("{e}: {first}"));
    assert_eq!(value["level"], "DEBUG", "{first}");
    assert!(value["timestamp"].is_string(), "{first}");
}

/// A role asked for one tokio worker runs on the current-thread scheduler (as `bench http`
/// starts them): it serves and stops cleanly on SIGTERM like one on the multi-threaded runtime.
#[test]
fn a_role_with_one_worker_serves_and_stops_on_sigterm() {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    let dir = std::env::temp_dir().join(format!("cdnlab-one-worker-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A free port may be taken between our probe and the role's bind: try a few.
    for _attempt in 0..5 {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = dir.join("ucs.toml");
        std::fs::write(
            &config,
            format!(
                "port = {port}\nurl = \"http://127.0.0.1:{port}\"\nvideos = [{{ name = \"v\", segments = 1, segment_duration = \"2s\", qualities = [{{ id = \"q\", bitrate = \"400kbit\" }}] }}]\n"
            ),
        )
        .unwrap();
        let mut child = KillOnDrop(
            Command::new(env!("CARGO_BIN_EXE_ucs"))
                .args(["--config".as_ref(), config.as_os_str()])
                .env("TOKIO_WORKER_THREADS", "1")
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
        let start = Instant::now();
        let stream = loop {
            if let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) {
                break Some(stream);
            }
            if child.0.try_wait().unwrap().is_some() || start.elapsed() > Duration::from_secs(10) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let Some(mut stream) = stream else {
            continue;
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream
            .write_all(b"GET /v/q/seg-00000.ts HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        let head_end = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a whole response head");
        let head = String::from_utf8_lossy(&answer[..head_end]).to_lowercase();
        assert!(head.starts_with("http/1.1 200"), "{head}");
        assert!(head.contains("content-length: 100000"), "{head}");
        assert_eq!(answer.len() - head_end - 4, 100_000);

        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        let pid = i32::try_from(child.0.id()).unwrap();
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let status = child.0.wait().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(status.success(), "ucs exited with {status} after SIGTERM");
        return;
    }
    panic!("ucs never listened on a free port in five attempts");
}

/// A child process killed (if still running) when the test ends, passed or not.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every test file with a test that needs the machine (a lab or Docker, declared in its
/// `tests!` list: tests/common/harness.rs) is in nextest's `labs` group, so no two of them share
/// the machine at once: a lab test left out runs beside another and both measure a loaded
/// machine.
#[test]
fn every_lab_test_file_runs_in_the_labs_group() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = std::fs::read_to_string(root.join(".config/nextest.toml")).expect("nextest.toml");
    let filter = config
        .lines()
        .filter_map(|l| l.trim().strip_prefix("filter = "))
        .find(|f| f.contains("binary(lab)"))
        .expect("the labs group's filter");
    let mut missing = Vec::new();
    let mut machine_files = 0;
    for dir in ["tests", "netem/tests"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("a tests directory") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("test file");
            let Some(list) = text.split("\ntests!(").nth(1) else {
                continue;
            };
            let needs_machine = ["LAB", "DOCKER", "Needs::root"]
                .iter()
                .any(|needs| list.contains(needs));
            let stem = path.file_stem().and_then(|s| s.to_str()).expect("name");
            machine_files += usize::from(needs_machine);
            if needs_machine && !filter.contains(&format!("binary({stem})")) {
                missing.push(format!("{dir}/{stem}.rs"));
            }
        }
    }
    assert!(
        machine_files >= 10,
        "only {machine_files} test files need the machine"
    );
    assert!(
        missing.is_empty(),
        "{} bring up labs or containers but are not in .config/nextest.toml's labs group",
        missing.join(", ")
    );
}
