//! The live view in a real browser: Debian's headless Chromium, driven through its WebDriver
//! (chromedriver), follows `cdnlab run --web` of the interconnected-CDN scenario with a timeline
//! event, and the test reads what the page shows.

mod common;

use common::harness::{self, tests, Needs};
use common::{cdnlab, leftovers, repo_root, Lab};
use serde_json::{json, Value};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A lab, Chromium and its driver.
const BROWSER: Needs = Needs::root(&["ip", "iptables-legacy", "chromium", "chromedriver"]);

/// When the timeline event fires, seconds after the clients start.
const EVENT_AT_S: u64 = 4;

/// A free TCP port on loopback (free when asked; nothing else on this machine races for it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A child process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The few WebDriver calls the test makes (W3C WebDriver over HTTP, JSON in and out).
struct Driver {
    base: String,
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
}

impl Driver {
    fn new(port: u16) -> Driver {
        Driver {
            base: format!("http://127.0.0.1:{port}"),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime"),
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("an HTTP client"),
        }
    }

    /// `METHOD path` with `body`; the answer's `value`, or `Err` with the driver's error.
    fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        self.runtime.block_on(async {
            let mut request = self.client.request(method, format!("{}{path}", self.base));
            if let Some(body) = body {
                request = request
                    .header("content-type", "application/json")
                    .body(body.to_string());
            }
            let response = request.send().await.map_err(|e| e.to_string())?;
            let status = response.status();
            let bytes = response.bytes().await.map_err(|e| e.to_string())?;
            let answer: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
            if !status.is_success() {
                return Err(format!("{path}: {status}: {answer}"));
            }
            Ok(answer["value"].clone())
        })
    }

    fn post(&self, path: &str, body: Value) -> Value {
        self.call(reqwest::Method::POST, path, Some(body))
            .unwrap_or_else(|e| panic!("WebDriver: {e}"))
    }
}

/// Waits until `what` answers `Some`, at most `limit`.
fn wait_for<T>(limit: Duration, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The interconnected-CDN topology (three clients, 13 links) with a timeline event that
/// raises one client's access delay while the clients play.
fn topology() -> String {
    let shipped = std::fs::read_to_string(repo_root().join("topologies/interconnected-cdn.toml"))
        .expect("the shipped topology");
    let without_name: String = shipped
        .lines()
        .filter(|line| !line.starts_with("name ="))
        .map(|line| format!("{line}\n"))
        .collect();
    format!(
        "{without_name}\n[[timeline]]\nat = \"{EVENT_AT_S}s\"\nlink = [\"c-direct-cs\", \"acc\"]\ndelay = \"30ms\"\n"
    )
}

/// The page loads without console errors, draws every node, shows a client's access link
/// busy while it downloads (and idle before), and lists the timeline event within a second of
/// its firing; the run ends with every client done and the lab gone. A screenshot of the page
/// while the clients play is left in the test's temporary directory (and at
/// `$CDNLAB_WEB_SCREENSHOT` if set: the README's comes from there).
fn the_page_shows_a_running_lab_live_in_chromium() {
    let lab = Lab::new("t-web", &topology());
    let out = lab.dir.join("run");
    let web_port = free_port();
    let mut run = Killed(
        Command::new(cdnlab())
            .args([
                "run",
                lab.topology().to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .args([
                "--set",
                "chunks=10",
                "--web",
                &format!("127.0.0.1:{web_port}"),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cdnlab run starts"),
    );
    let driver_port = free_port();
    let _chromedriver = Killed(
        Command::new("chromedriver")
            .arg(format!("--port={driver_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts"),
    );
    let driver = Driver::new(driver_port);
    wait_for(Duration::from_secs(20), "chromedriver", || {
        driver
            .call(reqwest::Method::GET, "/status", None)
            .ok()
            .filter(|status| status["ready"] == true)
    });
    let session = driver.post(
        "/session",
        json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1100"],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}}),
    );
    let id = session["sessionId"]
        .as_str()
        .expect("a session")
        .to_string();
    let page = format!("http://127.0.0.1:{web_port}/");
    // The view starts once the lab is up.
    wait_for(Duration::from_secs(90), "the live view", || {
        TcpListener::bind(("127.0.0.1", web_port)).err()
    });
    driver.post(&format!("/session/{id}/url"), json!({"url": page}));
    let snapshot = || {
        driver.post(
            &format!("/session/{id}/execute/sync"),
            json!({"script": "return window.cdnlab.snapshot();", "args": []}),
        )
    };
    // Until the run ends (the page says so), keeping the last look; a screenshot while the
    // clients play, once the event is on the page and each client has six segments.
    let mut shot = false;
    let last = wait_for(
        Duration::from_secs(120),
        "the run's end on the page",
        || {
            let s = snapshot();
            let playing = ["c-upstream-rr", "c-direct-rr", "c-direct-cs"]
                .iter()
                .all(|c| s["clients"][c]["segments"].as_u64() >= Some(6));
            if !shot && playing && s["eventsShown"].as_u64() >= Some(2) {
                shot = true;
                let screenshot = driver.call(
                    reqwest::Method::GET,
                    &format!("/session/{id}/screenshot"),
                    None,
                );
                if let Ok(Value::String(png)) = screenshot {
                    save_screenshot(&png);
                }
            }
            (!s["ended"].is_null()).then_some(s)
        },
    );
    let logs = driver.post(&format!("/session/{id}/se/log"), json!({"type": "browser"}));
    let _ = driver.call(reqwest::Method::DELETE, &format!("/session/{id}"), None);

    let errors: Vec<&Value> = logs
        .as_array()
        .map(|entries| entries.iter().filter(|e| e["level"] == "SEVERE").collect())
        .unwrap_or_default();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert_eq!(last["errors"], json!([]), "errors on the page");
    assert_eq!(last["mode"], "live");

    let topology: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("topology.json")).unwrap()).unwrap();
    let mut want: Vec<&str> = topology["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    let mut drawn: Vec<&str> = last["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    want.sort_unstable();
    drawn.sort_unstable();
    assert_eq!(drawn, want, "nodes drawn");

    // acc → c-direct-cs carries that client's downloads at up to its 5 Mbit/s access rate:
    // above half the rate while it fetches, idle again once every client is done.
    let series: Vec<f64> = last["throughput"]["c-direct-cs-acc/acc"]
        .as_array()
        .expect("the access link's series")
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(series.len() > 10, "{series:?}");
    let peak = series.iter().copied().fold(0.0, f64::max);
    assert!(
        peak > 2_500_000.0,
        "the access link never carried the downloads: {series:?}"
    );
    let after = series[series.len() - 1];
    assert!(
        after < 500_000.0,
        "still busy after the clients: {series:?}"
    );

    let events = last["events"].as_array().unwrap();
    let fired = events
        .iter()
        .find(|e| {
            e["text"]
                .as_str()
                .unwrap_or("")
                .starts_with("link set c-direct-cs")
        })
        .unwrap_or_else(|| panic!("the timeline event is not on the page: {events:?}"));
    let shown_after_ms =
        fired["received_ms"].as_f64().unwrap() - fired["time_unix_s"].as_f64().unwrap() * 1000.0;
    assert!(
        (-50.0..1000.0).contains(&shown_after_ms),
        "the event reached the page {shown_after_ms} ms after it fired"
    );
    assert_eq!(last["eventsShown"].as_u64(), Some(events.len() as u64));
    for client in ["c-upstream-rr", "c-direct-rr", "c-direct-cs"] {
        assert_eq!(
            last["clients"][client]["state"], "done",
            "{}",
            last["clients"]
        );
        assert_eq!(
            last["clients"][client]["segments"], 10,
            "{}",
            last["clients"]
        );
    }

    let status = run.0.wait().expect("the run ends");
    assert!(status.success(), "cdnlab run failed: {status}");
    assert_eq!(leftovers(&lab.name), Vec::<String>::new());
}

fn save_screenshot(png_base64: &str) {
    use base64::Engine;
    let Ok(png) = base64::engine::general_purpose::STANDARD.decode(png_base64) else {
        return;
    };
    let mut places = vec![std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web.png")];
    places.extend(std::env::var_os("CDNLAB_WEB_SCREENSHOT").map(Into::into));
    for place in places {
        let _ = std::fs::write(place, &png);
    }
}

tests!(BROWSER => the_page_shows_a_running_lab_live_in_chromium);
