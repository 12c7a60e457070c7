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
