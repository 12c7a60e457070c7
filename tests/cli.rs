//! The `cdnlab` verbs that need no lab and no root: `check`, `graph` (and the checked-in
//! pictures of the shipped topologies), `completions`, `manuals`, `--version` of every binary,
//! output into a closed pipe, and `capture`'s and `web`'s refusals.

mod common;

use common::{cdnlab, repo_root, run, text};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn shipped_topologies() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(repo_root().join("topologies"))
        .expect("topologies/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    found.sort();
    assert!(found.len() >= 10, "{found:?}");
    found
}

fn topology(name: &str) -> String {
    repo_root()
        .join("topologies")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn check_prints_the_resolved_plan_of_every_shipped_topology() {
    for path in shipped_topologies() {
        let out = run(&["check", path.to_str().unwrap()]);
        let plan = text(&out);
        assert!(out.status.success(), "{}: {plan}", path.display());
        assert!(plan.starts_with("topology `"), "{plan}");
        assert!(plan.contains("\nLINKS AND LANS"), "{plan}");
    }
    let out = run(&[
        "check",
        &topology("chain.toml"),
        "--set",
        "internet_delay=200ms",
    ]);
    let plan = text(&out);
    assert!(
        plan.contains("    router → server: delay 200ms\n"),
        "{plan}"
    );
    assert!(plan.contains("    eth0 198.18."), "{plan}");
    assert!(
        plan.contains(
            "command curl -sf -o /dev/null -w \"%{time_total}s\\n\" http://server:8080/ [client]\n"
        ),
        "{plan}"
    );
    assert!(plan.contains("    route "), "{plan}");
}

#[test]
fn check_refuses_a_bad_file_and_a_bad_role_config_with_exit_2() {
    let dir = std::env::temp_dir().join(format!("cdnlab-test-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad_link = dir.join("bad-link.toml");
    std::fs::write(
        &bad_link,
        "name = \"bad\"\n[nodes.a]\n[[links]]\nendpoints = [\"a\", \"nowhere\"]\n",
    )
    .unwrap();
    let out = run(&["check", bad_link.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bad-link.toml:4:"), "{}", text(&out));
    let bad_config = dir.join("bad-config.toml");
    std::fs::write(
        &bad_config,
        "name = \"bad\"\n[nodes.a]\nrole = \"ucs\"\nconfig = { no_such_key = 1 }\n[nodes.b]\n[[links]]\nendpoints = [\"a\", \"b\"]\n",
    )
    .unwrap();
    let out = run(&["check", bad_config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("node a (role ucs)"), "{}", text(&out));
    assert!(text(&out).contains("no_such_key"), "{}", text(&out));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `topologies/pictures/NAME.svg` is what `cdnlab graph` draws of `topologies/NAME.toml` today,
/// and topologies/README.md shows every one of them.
#[test]
fn every_shipped_topology_has_its_current_picture_in_the_readme() {
    let readme = std::fs::read_to_string(repo_root().join("topologies/README.md")).unwrap();
    let mut stale = Vec::new();
    for path in shipped_topologies() {
        let name = path.file_stem().unwrap().to_str().unwrap();
        let picture = repo_root().join(format!("topologies/pictures/{name}.svg"));
        let out = run(&["graph", path.to_str().unwrap()]);
        assert!(out.status.success(), "{name}: {}", text(&out));
        if std::fs::read(&picture).ok().as_deref() != Some(&out.stdout[..]) {
            stale.push(name.to_string());
        }
        assert!(
            readme.contains(&format!("(pictures/{name}.svg)")),
            "topologies/README.md does not show pictures/{name}.svg"
        );
    }
    assert!(
        stale.is_empty(),
        "pictures out of date or missing: {stale:?}; redraw them with scripts/draw-topologies.sh"
    );
}

#[test]
fn graph_writes_dot_and_mermaid_and_refuses_a_directory() {
    let out = run(&["graph", &topology("chain.toml"), "--format", "dot"]);
    let dot = text(&out);
    assert!(out.status.success(), "{dot}");
    assert!(
        dot.contains("\"router\" -- \"server\" [label=\"delay 50ms\"];"),
        "{dot}"
    );
    let out = run(&["graph", &topology("chain.toml"), "--format", "mermaid"]);
    assert!(text(&out).starts_with("flowchart BT\n"), "{}", text(&out));
    let out = run(&["graph", &topology("chain.toml"), "--out", "/tmp"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("is a directory"), "{}", text(&out));
}

/// `capture` refuses what it must not write to, and counts it cannot reach, before it looks
/// for a lab: cdnlab runs as root, and a device named by mistake would be overwritten.
#[test]
fn capture_refuses_a_device_a_directory_and_a_zero_count() {
    for (args, says) in [
        (
            &["-w", "/dev/null"][..],
            "-w /dev/null: not a regular file or FIFO",
        ),
        (&["-w", "/tmp"], "-w /tmp: not a regular file or FIFO"),
        (
            &["-w", "x.pcap", "-c", "0"],
            "--count: 0 packets would capture nothing",
        ),
        (&["-w", "x.pcap", "--duration", "5"], "--duration: "),
    ] {
        let mut argv = vec!["capture", "--lab", "no-such-lab", "a", "b"];
        argv.extend(args);
        let out = run(&argv);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{argv:?}: {}", text(&out));
    }
}

#[test]
fn web_refuses_an_address_beyond_loopback_without_expose_a_bad_address_and_a_missing_run() {
    let not_run = std::env::temp_dir().join(format!("cdnlab-cli-web-{}", std::process::id()));
    std::fs::create_dir_all(&not_run).unwrap();
    let not_run = not_run.to_str().unwrap();
    let default = topology("default.toml");
    for (argv, status, says) in [
        (
            vec!["web", "--listen", "0.0.0.0:0", "--results", not_run],
            2,
            "--listen 0.0.0.0:0: not a loopback address",
        ),
        (
            vec!["web", "--listen", "localhost", "--results", not_run],
            2,
            "--listen localhost: not an address and port",
        ),
        (
            vec!["web", "--listen", "127.0.0.1:0", "--results", not_run],
            1,
            "topology.json: No such file",
        ),
        (
            vec!["run", &default, "--web", "0.0.0.0:0"],
            2,
            "--web 0.0.0.0:0: not a loopback address",
        ),
    ] {
        let out = run(&argv);
        assert_eq!(out.status.code(), Some(status), "{argv:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{argv:?}: {}", text(&out));
    }
    std::fs::remove_dir_all(not_run).unwrap();
}

#[test]
fn completions_for_each_shell_name_every_verb() {
    for (shell, marker) in [
        ("bash", "_cdnlab()"),
        ("zsh", "#compdef cdnlab"),
        ("fish", "complete -c cdnlab"),
    ] {
        let out = run(&["completions", shell]);
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{shell}: {}", text(&out));
        assert!(script.contains(marker), "{shell}: {script}");
        for verb in ["run", "sweep", "graph", "check", "link"] {
            assert!(script.contains(verb), "{shell} completes no `{verb}`");
        }
    }
    assert_eq!(run(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn manuals_are_written_for_cdnlab_and_each_verb() {
    let dir = std::env::temp_dir().join(format!("cdnlab-test-manuals-{}", std::process::id()));
    let out = run(&["manuals", "--out", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    for page in [
        "cdnlab.1",
        "cdnlab-run.1",
        "cdnlab-graph.1",
        "cdnlab-link.1",
    ] {
        let roff =
            std::fs::read_to_string(dir.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(roff.contains(".TH "), "{page}: {roff}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_binary_answers_version() {
    let bin_dir = Path::new(cdnlab()).parent().unwrap();
    for (binary, name) in [
        ("cdnlab", "cdnlab"),
        ("probe", "probe"),
        ("cdnlab-shaper", "cdnlab-shaper"),
    ] {
        let out = Command::new(bin_dir.join(binary))
            .arg("--version")
            .output()
            .unwrap_or_else(|e| panic!("{binary}: {e}"));
        assert!(out.status.success(), "{binary}: {}", text(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("{name} {}", env!("CARGO_PKG_VERSION"))
        );
    }
}

/// `cdnlab check … | head -1`: the reader goes away after the first line; cdnlab finishes
/// quietly with its own status instead of panicking on the broken pipe.
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let mut child = Command::new(cdnlab())
        .args(["check", &topology("tree1000.toml")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The read end is closed here; the plan (hundreds of kilobytes) does not fit in a pipe.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(&first, b"topology `tree10");
}
