//! Root-only tests of what cdnlab must never do as root, and of labs whose owner or shaper
//! dies: LAB arguments that are paths, two `up`s of one name, a killed shaper, a hung-up or
//! killed `cdnlab run`, concurrent state updates.

mod common;

use common::harness::{self, tests, LAB};
use common::{leftovers, run, run_ok, text, Lab};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Two hosts that idle, a delayed link (so the userspace backend's shaper runs), and a client
/// that plays for two minutes: long past every check below.
const IDLE_PAIR: &str = r#"
[nodes.a]
command = ["sleep", "600"]
[nodes.b]
command = ["sleep", "120"]
client = true
[[links]]
endpoints = ["a", "b"]
delay = "1ms"
"#;

/// A directory with a file in it, which no refused command may remove.
struct Sentinel(PathBuf);

impl Sentinel {
    fn new(name: &str) -> Sentinel {
        let dir = std::env::temp_dir().join(format!("cdnlab-sentinel-{name}"));
        std::fs::create_dir_all(&dir).expect("sentinel dir");
        std::fs::write(dir.join("keep"), "keep").expect("sentinel file");
        Sentinel(dir)
    }

    fn intact(&self) -> bool {
        self.0.join("keep").is_file()
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every verb that takes a LAB refuses one that is not a lab name with exit status 2 and a
/// message naming the rule, before touching anything. The sentinel directory (a path a user
/// might pass by mistake) is tried first, for every verb, so that a regression is caught there
/// before `/` and `..` are ever handed over.
fn lab_arguments_that_are_paths_are_refused_and_touch_nothing() {
    let sentinel = Sentinel::new("lab-args");
    let path = sentinel.0.to_str().unwrap().to_string();
    let run_dir_entries = || std::fs::read_dir("/run").map(|d| d.count()).unwrap_or(0);
    let before = run_dir_entries();
    let verbs = |lab: &str| -> Vec<Vec<String>> {
        let owned = |args: &[&str]| args.iter().map(|a| a.to_string()).collect();
        vec![
            owned(&["down", lab]),
            owned(&["status", lab]),
            owned(&["exec", "--lab", lab, "a", "--", "true"]),
            owned(&["link", "set", "--lab", lab, "a", "b", "--delay", "1ms"]),
            owned(&["link", "show", "--lab", lab]),
            owned(&["link", "reset", "--lab", lab]),
            owned(&["clean", lab]),
        ]
    };
    for lab in [path.as_str(), "a/b", "", "..", "/"] {
        for args in verbs(lab) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = run(&args);
            assert_eq!(
                out.status.code(),
                Some(2),
                "cdnlab {args:?}: {}",
                text(&out)
            );
            assert!(
                text(&out).contains("bad lab name"),
                "cdnlab {args:?} does not name the rule: {}",
                text(&out)
            );
            assert!(sentinel.intact(), "cdnlab {args:?} removed {path}");
        }
    }
    assert_eq!(run_dir_entries(), before, "/run changed");
}

/// Runs `cdnlab up` of `lab` four times at once (released together by a barrier), 20 times:
/// exactly one wins each time; the losers fail and leave the winner's processes and shaper
/// running, and `down` then finds all of them. Four racers, not two: on the code before the
/// atomic claim, two racers overlapped in about one round in 200, four in the first round of
/// every try (the winner's shaper and node were left running, unrecorded).
fn two_ups_of_one_name_exactly_one_wins_and_the_loser_touches_nothing() {
    const RACERS: usize = 4;
    let lab = Lab::new("t-race", IDLE_PAIR);
    let topology = lab.topology().to_str().unwrap().to_string();
    for round in 0..20 {
        let barrier = Arc::new(Barrier::new(RACERS));
        let racers: Vec<_> = (0..RACERS)
            .map(|_| {
                let (barrier, topology) = (barrier.clone(), topology.clone());
                std::thread::spawn(move || {
                    let mut command = Command::new(common::cdnlab());
                    command.args(["up", &topology]);
                    barrier.wait();
                    command.output().expect("cdnlab runs")
                })
            })
            .collect();
        let outputs: Vec<Output> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        let winners = outputs.iter().filter(|o| o.status.success()).count();
        assert_eq!(
            winners,
            1,
            "round {round}: {winners} winners\n{}",
            outputs.iter().map(text).collect::<Vec<_>>().join("\n")
        );
        let status = lab.status_json();
        assert_eq!(status["ready"], true, "round {round}: {status}");
        assert_eq!(status["shaper"]["running"], true, "round {round}: {status}");
        let a = &status["nodes"][0];
        assert_eq!(a["name"], "a");
        assert_eq!(a["process"]["running"], true, "round {round}: {status}");
        let mode = std::fs::metadata(format!("/run/cdnlab/{}", lab.name))
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()))
            .expect("the lab's state directory");
        assert_eq!(
            mode & 0o077,
            0,
            "the lab directory is open to others: {mode:o}"
        );
        run_ok(&["down", &lab.name]);
        assert_eq!(leftovers(&lab.name), Vec::<String>::new(), "round {round}");
    }
}

/// `cdnlab run LAB` in the background, with its output piped.
fn start_run(lab: &Lab) -> Child {
    // In the lab's own directory, which the lab guard removes after the run has ended.
    let out = lab.dir.join("out");
    Command::new(common::cdnlab())
        .args(["run", lab.topology().to_str().unwrap(), "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cdnlab run starts")
}

/// The lab's state, once `run` has brought it up and started its clients.
fn wait_until_playing(lab: &Lab, run: &mut Child) -> serde_json::Value {
    let path = Path::new("/run/cdnlab").join(&lab.name).join("state.json");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state: Option<serde_json::Value> = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        if let Some(state) = state.filter(|s| s["ready"] == true && s["processes"]["b"].is_object())
        {
            return state;
        }
        if let Ok(Some(status)) = run.try_wait() {
            panic!("run exited ({status}) before its client started");
        }
        assert!(Instant::now() < deadline, "run never started its client");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Lab `name` of `topology`, being played by a `cdnlab run` in the background.
fn playing(name: &str, topology: &str) -> (Lab, Child, serde_json::Value) {
    let lab = Lab::new(name, topology);
    let mut child = start_run(&lab);
    let state = wait_until_playing(&lab, &mut child);
    (lab, child, state)
}

/// Sends `signal` to `pid`, which the test read from its own child or the lab's state.
fn signal(pid: i32, signal: i32) {
    // SAFETY: kill has no memory effects.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill {pid}");
}

/// Waits for `run` to exit; its client plays for 120 s, so an exit within 60 s means the run
/// noticed what happened rather than waiting its clients out.
fn wait_for_exit(run: Child) -> Output {
    let pid = run.id() as i32;
    let waiter = std::thread::spawn(move || run.wait_with_output().expect("run output"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !waiter.is_finished() {
        if Instant::now() > deadline {
            signal(pid, libc::SIGKILL);
            panic!("run did not stop within 60 s; its client would have played for 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    waiter.join().unwrap()
}

/// A shaper killed mid-run: `run` stops (not after its clients' two minutes), says which lab's
/// shaper died and how, and removes the lab.
fn a_killed_shaper_stops_the_run_with_a_message_naming_it() {
    let (lab, child, state) = playing("t-shaperdeath", IDLE_PAIR);
    signal(
        state["shaper"]["pid"].as_i64().expect("a shaper pid") as i32,
        libc::SIGKILL,
    );
    let out = wait_for_exit(child);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("link shaper of lab `t-shaperdeath`") && said.contains("signal 9"),
        "{said}"
    );
    assert_eq!(leftovers(&lab.name), Vec::<String>::new());
}

/// A hang-up (the terminal closed) is handled like Ctrl-C: the run stops and leaves nothing.
fn a_hung_up_run_leaves_nothing() {
    let (lab, child, _) = playing("t-hangup", IDLE_PAIR);
    signal(child.id() as i32, libc::SIGHUP);
    let out = wait_for_exit(child);
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(leftovers(&lab.name), Vec::<String>::new());
}

/// While `run` is alive, `clean LAB` keeps its lab (it is not a leftover); after `run` is
/// killed outright, the next command says the lab was left behind and how to remove it, and
/// `clean LAB` removes it.
fn clean_keeps_a_live_run_and_a_killed_runs_lab_is_reported_then_cleaned() {
    let (lab, mut child, _) = playing("t-orphan", IDLE_PAIR);
    let kept = run_ok(&["clean", &lab.name]);
    assert!(kept.contains("kept: lab `t-orphan`"), "{kept}");
    assert!(Path::new("/run/cdnlab/t-orphan/state.json").exists());
    child.kill().expect("SIGKILL to run");
    child.wait().expect("run reaped");
    let status = run(&["status", &lab.name]);
    let said = text(&status);
    assert!(
        said.contains("lab `t-orphan` was left behind") && said.contains("cdnlab down t-orphan"),
        "{said}"
    );
    let cleaned = run_ok(&["clean", &lab.name]);
    assert!(cleaned.contains("removed: t-orphan"), "{cleaned}");
    assert_eq!(leftovers(&lab.name), Vec::<String>::new());
}

/// A timeline event two seconds into the run that changes the direction a→b of `IDLE_PAIR`.
const A_TO_B_AT_2S: &str = r#"
[[timeline]]
at = "2s"
link = ["a", "b"]
from = "a"
delay = "5ms"
"#;

/// A `link set` made while `run` plays its timeline is kept when the timeline then changes
/// another direction: both read, change and write the state under the lab's lock, so the
/// run's timeline never writes back a stale copy over the user's change.
fn a_link_set_during_a_run_survives_the_runs_timeline() {
    let (lab, child, _) = playing("t-statelock", &format!("{IDLE_PAIR}{A_TO_B_AT_2S}"));
    run_ok(&[
        "link", "set", "--lab", &lab.name, "a", "b", "--from", "b", "--delay", "7ms",
    ]);
    let delay_ns = |from: &str| {
        let status = lab.status_json();
        let link = status["links"]
            .as_array()
            .and_then(|links| links.iter().find(|l| l["from"] == from).cloned())
            .expect("the direction");
        link["settings"]["delay_ns"].as_u64().expect("delay_ns")
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while delay_ns("a") != 5_000_000 {
        assert!(Instant::now() < deadline, "the timeline event never fired");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        delay_ns("b"),
        7_000_000,
        "the user's change to b→a was lost"
    );
    signal(child.id() as i32, libc::SIGTERM);
    wait_for_exit(child);
    assert_eq!(leftovers(&lab.name), Vec::<String>::new());
}

/// `down` while a state change holds the lab's lock (as `link set` does mid-update): the
/// processes and namespaces go, but the state directory stays until the change is done, and
/// a state file written in that time goes with it. Before, `down` removed the directory under
/// the change, which then wrote its file into a directory that was no longer the lab's. A
/// `link set` that comes meanwhile waits too, and fails without writing anything back.
fn down_waits_for_a_state_change_in_progress() {
    let lab = Lab::new("t-downlock", IDLE_PAIR);
    lab.up();
    let dir = Path::new("/run/cdnlab").join(&lab.name);
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join("state.lock"))
        .expect("the lab's state lock");
    // SAFETY: flock on a file this test owns.
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) },
        0
    );
    let down = Command::new(common::cdnlab())
        .args(["down", &lab.name])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cdnlab down");
    let namespaces_gone = || {
        leftovers(&lab.name)
            .iter()
            .all(|l| !l.starts_with("/run/netns") && !l.starts_with("process"))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !namespaces_gone() {
        assert!(
            Instant::now() < deadline,
            "down never removed the lab's namespaces"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let late_change = Command::new(common::cdnlab())
        .args([
            "link", "set", "--lab", &lab.name, "a", "b", "--delay", "3ms",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cdnlab link set");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        dir.join("state.lock").is_file(),
        "down removed the state directory while a change held its lock"
    );
    let state = std::fs::read(dir.join("state.json")).expect("the lab's state");
    std::fs::write(dir.join("state.json"), state).expect("the change writes its state");
    drop(lock);
    let out = down.wait_with_output().expect("down exits");
    assert!(out.status.success(), "{}", text(&out));
    let late = late_change.wait_with_output().expect("link set exits");
    assert!(
        !late.status.success(),
        "a change to a lab taken down: {}",
        text(&late)
    );
    assert_eq!(leftovers(&lab.name), Vec::<String>::new());
}

/// `clean` of two labs, one of which cannot be removed (a directory in the state root that is
/// not provably a lab's: neither lock nor state file): the other is still removed and said to
/// be, the failure names its lab, and the exit status is not zero.
fn clean_reports_every_lab_when_one_fails() {
    let lab = Lab::new("t-cleanok", IDLE_PAIR);
    lab.up();
    let stranger = Path::new("/run/cdnlab/t-cleanodd");
    std::fs::create_dir_all(stranger).expect("a stray directory");
    std::fs::write(stranger.join("notes"), "not a lab's").expect("a stray file");
    let out = run(&["clean", "t-cleanodd", &lab.name]);
    let said = text(&out);
    let _ = std::fs::remove_dir_all(stranger);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("removed: t-cleanok"), "{said}");
    assert!(
        said.contains("lab `t-cleanodd`") && said.contains("not provably"),
        "{said}"
    );
    assert_eq!(leftovers(&lab.name), Vec::<String>::new());
}

tests!(
    LAB =>
        lab_arguments_that_are_paths_are_refused_and_touch_nothing,
        two_ups_of_one_name_exactly_one_wins_and_the_loser_touches_nothing,
        a_killed_shaper_stops_the_run_with_a_message_naming_it,
        a_hung_up_run_leaves_nothing,
        clean_keeps_a_live_run_and_a_killed_runs_lab_is_reported_then_cleaned,
        a_link_set_during_a_run_survives_the_runs_timeline,
        down_waits_for_a_state_change_in_progress,
        clean_reports_every_lab_when_one_fails;
);
