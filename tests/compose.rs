//! The docker-compose testbed end to end: build the image FROM scratch (scripts/build-image.sh),
//! bring `docker-compose.yml` up under a project of its own, inject a delay change on the
//! Internet network while the clients play (scripts/set-delay.sh --compose), wait for every
//! client's summary, check start-up delay and played quality, find the change in the
//! upstream-rr client's per-segment log, and check that `down -v` leaves no container, network
//! or volume behind. Needs a Docker engine; skipped without one, except under CI.

mod common;

use common::harness::{self, tests, DOCKER};
use common::{build_image, docker, read_json, repo_root, text, TestDir};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const PROJECT: &str = "cdnlabtestcompose";
const IMAGE: &str = "cdnlab-test:compose";
const CLIENTS: [&str; 3] = ["c-upstream-rr", "c-direct-rr", "c-direct-cs"];
const CHUNKS: usize = 30;
const ICN_PROJECT: &str = "cdnlabtesticn";
const ICN_DURATION: &str = "40s";

/// `docker compose` (v2) where it exists, else `docker-compose` (v1, Debian 12's).
fn compose_program() -> Vec<&'static str> {
    let v2 = Command::new("docker")
        .args(["compose", "version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if v2 {
        vec!["docker", "compose"]
    } else {
        vec!["docker-compose"]
    }
}

/// The testbed under test; dropping it takes everything down, whatever happened.
struct Testbed {
    results: PathBuf,
    compose: Vec<&'static str>,
    project: &'static str,
    /// `--profile` (none: the default services).
    profile: Option<&'static str>,
}

impl Testbed {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.compose[0]);
        command
            .args(&self.compose[1..])
            .args(["-p", self.project, "-f"])
            .arg(repo_root().join("docker-compose.yml"))
            .args(self.profile.iter().flat_map(|p| ["--profile", p]))
            .args(args)
            .env("CDNLAB_IMAGE", IMAGE)
            .env("CDNLAB_RESULTS", &self.results)
            .env("CHUNKS", CHUNKS.to_string())
            .env("DURATION", ICN_DURATION)
            .env("COMPOSE_PROJECT_NAME", self.project);
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("compose runs")
    }

    fn logs(&self) -> String {
        text(&self.run(&["logs", "--no-color", "--tail", "40"]))
    }

    fn down(&self) -> Output {
        self.run(&["down", "-v", "--remove-orphans", "--timeout", "5"])
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        let _ = self.down();
        let _ = docker(&["rmi", IMAGE]);
    }
}

/// What docker still holds of `project`: containers, networks, volumes.
fn leftovers(project: &str) -> Vec<String> {
    let label = format!("label=com.docker.compose.project={project}");
    let mut found = Vec::new();
    for kind in [
        &["ps", "-a", "-q"][..],
        &["network", "ls", "-q"][..],
        &["volume", "ls", "-q"][..],
    ] {
        let out = common::docker(&[kind, &["--filter", &label]].concat());
        found.extend(
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(|id| format!("{} {id}", kind[0])),
        );
    }
    found
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

/// The seconds of segment 0's download (first request to last byte) in a `segments.csv`.
fn first_download_s(segments_csv: &str) -> f64 {
    let row = segments_csv.lines().nth(1).expect("a segment row");
    row.split(',')
        .nth(5)
        .expect("download_time_s")
        .parse()
        .expect("seconds")
}

/// The seconds of the first hop (the request to uRR) of every segment, in order.
fn urr_hops(segments_csv: &str) -> Vec<f64> {
    segments_csv
        .lines()
        .skip(1)
        .map(|line| {
            let hops = line.rsplit(',').next().unwrap_or_default();
            let first = hops.split(';').next().unwrap_or_default();
            let (host, seconds) = first.split_once(':').expect("host:seconds");
            assert_eq!(
                host, "urr",
                "the first hop of an upstream-rr segment: {line}"
            );
            seconds.parse().expect("seconds")
        })
        .collect()
}

/// Removes whatever docker holds of `project` (see [`leftovers`]): what an earlier, killed run
/// left, even of an older compose file whose names `down` no longer knows.
fn remove_leftovers(project: &str) {
    for item in leftovers(project) {
        let (kind, id) = item.split_once(' ').unwrap_or_default();
        let args: &[&str] = match kind {
            "ps" => &["rm", "-f", id],
            "network" => &["network", "rm", id],
            _ => &["volume", "rm", "-f", id],
        };
        let _ = docker(args);
    }
}

/// Takes down a leftover of an earlier, killed run of the test, then builds the image.
fn build_testbed_image(testbed: &Testbed) {
    let _ = testbed.down();
    remove_leftovers(testbed.project);
    build_image(IMAGE);
}

/// Waits up to `limit` for every file to hold JSON; their contents in order.
fn wait_for_json(testbed: &Testbed, files: &[PathBuf], limit: Duration) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + limit;
    loop {
        let found: Vec<Option<serde_json::Value>> = files.iter().map(|f| read_json(f)).collect();
        if found.iter().all(Option::is_some) {
            return found.into_iter().flatten().collect();
        }
        assert!(
            Instant::now() < deadline,
            "not every one of {files:?} within {limit:?}:\n{}",
            testbed.logs()
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn compose_testbed_plays_and_takes_a_delay_change() {
    let results = TestDir::created("compose");
    let testbed = Testbed {
        results: results.to_path_buf(),
        compose: compose_program(),
        project: PROJECT,
        profile: None,
    };
    build_testbed_image(&testbed);

    let up = testbed.run(&["up", "-d"]);
    assert!(
        up.status.success(),
        "compose up: {}\n{}",
        text(&up),
        testbed.logs()
    );

    // The clients play 30 chunks of 2 s, about 33 s at the default 5 Mbit/s: the change comes
    // while they are well into it.
    std::thread::sleep(Duration::from_secs(10));
    // A change one container refuses is checked everywhere first and made nowhere.
    let refused = Command::new(repo_root().join("scripts/set-delay.sh"))
        .args([
            "--compose",
            "dborder-uborder",
            "250ms",
            "--",
            "--loss",
            "150%",
        ])
        .env("COMPOSE_PROJECT_NAME", PROJECT)
        .output()
        .unwrap();
    let said = text(&refused);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains("cannot take the change: nothing was changed"),
        "{said}"
    );
    assert!(
        !said.contains("dborder-uborder: delay"),
        "a change was made: {said}"
    );
    let inject = Command::new(repo_root().join("scripts/set-delay.sh"))
        .args(["--compose", "dborder-uborder", "250ms"])
        .env("COMPOSE_PROJECT_NAME", PROJECT)
        .output()
        .unwrap();
    assert!(inject.status.success(), "set-delay.sh: {}", text(&inject));
    let said = text(&inject);
    assert_eq!(
        said.matches("dborder-uborder: delay 250ms").count(),
        2,
        "{said}"
    );

    let files: Vec<PathBuf> = CLIENTS
        .iter()
        .map(|c| results.join("icdn").join(c).join("summary.json"))
        .collect();
    let summaries = wait_for_json(&testbed, &files, Duration::from_secs(150));

    for (client, summary) in CLIENTS.iter().zip(&summaries) {
        assert_eq!(summary["failed"], false, "{client}: {summary}");
        assert_eq!(
            summary["segments_downloaded"], CHUNKS,
            "{client}: {summary}"
        );
        let startup = summary["startup_delay_s"].as_f64().unwrap();
        // Playback starts once segment 0 is in, so start-up holds its whole download: at least
        // one round trip and 0.5 Mbit/s × 2 s over 5 Mbit/s, 0.2 s. How long beyond that
        // depends on the machine (BENCHMARKS.md and RESULTS.md measure it), so no upper bound.
        let csv = std::fs::read_to_string(results.join("icdn").join(client).join("segments.csv"))
            .unwrap();
        let first = first_download_s(&csv);
        assert!(
            startup > 0.1 && startup >= first - 1e-6,
            "{client}: startup {startup} s, segment 0's download {first} s"
        );
        let quality = summary["avg_quality_mbps"].as_f64().unwrap();
        // 5 Mbit/s carries the 2 Mbit/s top quality: the session averages near it.
        assert!(
            (1.0..=2.0).contains(&quality),
            "{client}: quality {quality} Mbit/s"
        );
        assert!(summary["stall_count"].is_u64(), "{client}: {summary}");
    }

    // Under upstream-rr every segment's first request goes to uRR over the Internet: a round
    // trip of 60 + 2D ms, 160 ms before the change and 560 ms after it. In segment order the
    // hop steps up once: from the step on, every hop takes at least the new round trip (no
    // machine load makes one faster; 0.54 leaves 20 ms for clock granularity). The change comes
    // 10 s in, while the 20 s buffer is still filling: the first segments lie before it (how
    // many depends on how soon the clients started), most of the 30 after it.
    // A single hop can be slow on a busy machine, so each side is judged by its median: before
    // the step nearer the old round trip than the new (under the midpoint, 0.36 s), after it
    // below 0.8 s, the midpoint to what the delay applied twice each way would give (1.06 s).
    let csv = std::fs::read_to_string(results.join("icdn/c-upstream-rr/segments.csv")).unwrap();
    let hops = urr_hops(&csv);
    assert_eq!(hops.len(), CHUNKS, "{csv}");
    assert!(
        hops.iter().all(|&h| h > 0.14),
        "faster than 60 + 2D: {hops:?}"
    );
    let step = hops.iter().rposition(|&h| h < 0.54).map_or(0, |k| k + 1);
    let (before, after) = hops.split_at(step);
    assert!(
        !before.is_empty() && after.len() >= 3,
        "step at segment {step}: {hops:?}"
    );
    assert!(median(before) < 0.36, "before the change: {hops:?}");
    assert!(median(after) < 0.8, "after the change: {hops:?}");

    let down = testbed.down();
    assert!(down.status.success(), "compose down: {}", text(&down));
    assert_eq!(
        leftovers(PROJECT),
        Vec::<String>::new(),
        "left behind by down -v"
    );
}

/// site1's planned share in each installed mapping of a period with demand (the shares sum to
/// 1; after the users stop they are all 0), in time order.
fn site1_shares(controller: &serde_json::Value) -> Vec<f64> {
    controller["periods"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["version"].is_u64())
        .filter_map(|p| {
            let shares: Vec<f64> = p["site_share"]
                .as_array()?
                .iter()
                .filter_map(|s| s.as_f64())
                .collect();
            (shares.iter().sum::<f64>() > 0.99).then(|| shares[0])
        })
        .collect()
}

/// The `icn` profile (papers/000's system as 18 containers): the regions' users are served,
/// PARM installs rules, and `set-bandwidth.sh --compose icn-core-site1 1mbit` reaches site1's SM
/// module (C_1 = 1 Mbit/s) and moves the mapping away from site1 at the next PARM period.
fn compose_icn_profile_maps_away_from_a_slowed_site() {
    let results = TestDir::created("compose-icn");
    let testbed = Testbed {
        results: results.to_path_buf(),
        compose: compose_program(),
        project: ICN_PROJECT,
        profile: Some("icn"),
    };
    build_testbed_image(&testbed);
    let up = testbed.run(&[
        "up",
        "-d",
        "icn-load1",
        "icn-load2",
        "icn-load3",
        "icn-load4",
    ]);
    assert!(
        up.status.success(),
        "compose up: {}\n{}",
        text(&up),
        testbed.logs()
    );
    // The change comes once two mappings with demand are installed (controller.json is
    // rewritten every period), whenever the containers came up: not after a fixed sleep that
    // a slow start would turn into a change before the first mapping.
    let controller_json = results.join("icn/controller/controller.json");
    let deadline = Instant::now() + Duration::from_secs(120);
    while read_json(&controller_json).map_or(0, |c| site1_shares(&c).len()) < 2 {
        assert!(
            Instant::now() < deadline,
            "no two mappings within 120 s:\n{}",
            testbed.logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let before = site1_shares(&read_json(&controller_json).expect("controller.json"));
    let slow = Command::new(repo_root().join("scripts/set-bandwidth.sh"))
        .args(["--compose", "icn-core-site1", "1mbit"])
        .env("COMPOSE_PROJECT_NAME", ICN_PROJECT)
        .output()
        .unwrap();
    assert!(slow.status.success(), "set-bandwidth.sh: {}", text(&slow));

    let files: Vec<PathBuf> = (1..=4)
        .map(|l| results.join(format!("icn/load{l}")).join("summary.json"))
        .collect();
    for load in wait_for_json(&testbed, &files, Duration::from_secs(150)) {
        assert_eq!(load["failed"], false, "{load}");
        assert!(load["requests"].as_u64() > Some(100), "{load}");
    }
    let controller = read_json(&controller_json).expect("controller.json");
    // In the last period every site answered.
    let capacity = controller["ticks"]
        .as_array()
        .and_then(|t| t.iter().rev().find(|t| t["capacity_mbps"][0].is_f64()))
        .map(|t| t["capacity_mbps"][0].clone());
    assert_eq!(
        capacity,
        Some(serde_json::json!(1.0)),
        "site1's C_m at the end"
    );
    // site1's planned share: high in the mappings installed before the change, under half of
    // that in the last one. These are PARM's decisions from the capacities the sites report,
    // not timings: 0.287-0.288 before and 0.088 after in every run seen (this test in CI and
    // by hand, and its lab twin in tests/icn.rs). A failure needs C_1 misread or the LP to
    // decide otherwise. Expected pass rate: above 99.9%.
    let shares = site1_shares(&controller);
    assert!(shares.len() > before.len(), "{before:?} then {shares:?}");
    let (first, last) = (before[0], shares[shares.len() - 1]);
    assert!(
        first > 0.2 && last < 0.5 * first,
        "site1's shares {before:?} before the change, {shares:?} in all"
    );

    let down = testbed.down();
    assert!(down.status.success(), "compose down: {}", text(&down));
    assert_eq!(
        leftovers(ICN_PROJECT),
        Vec::<String>::new(),
        "left behind by down -v"
    );
}

/// Every shipped topology, and all of them in one file, generate a compose file that compose
/// itself accepts (`config -q` parses it, checks its references and interpolates it).
fn every_shipped_topology_generates_a_file_compose_accepts() {
    let dir = TestDir::created("compose-config");
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo_root().join("topologies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let mut generated: Vec<PathBuf> = files
        .iter()
        .map(|topology| {
            let out = dir
                .join(topology.file_name().unwrap())
                .with_extension("yml");
            let made = Command::new(env!("CARGO_BIN_EXE_cdnlab"))
                .arg("compose")
                .arg(topology)
                .arg("--out")
                .arg(&out)
                .output()
                .unwrap();
            assert!(
                made.status.success(),
                "{}: {}",
                topology.display(),
                text(&made)
            );
            out
        })
        .collect();
    generated.push(repo_root().join("docker-compose.yml"));
    let compose = compose_program();
    // The 1 000-node tree's file is written above but not given to compose: Compose v1 takes
    // about 50 s of CPU over its 36 000 lines, while the same generator's tree100 takes 1 s.
    // README ("The testbed as containers") has it checked by hand.
    for file in generated.iter().filter(|f| !f.ends_with("tree1000.yml")) {
        let config = Command::new(compose[0])
            .args(&compose[1..])
            .arg("-f")
            .arg(file)
            .args(["config", "-q"])
            .output()
            .unwrap();
        assert!(
            config.status.success(),
            "{}: {}",
            file.display(),
            text(&config)
        );
    }
}

tests!(
    DOCKER =>
        compose_testbed_plays_and_takes_a_delay_change,
        compose_icn_profile_maps_away_from_a_slowed_site,
        every_shipped_topology_generates_a_file_compose_accepts;
);
