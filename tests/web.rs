//! The live view in a real browser: Debian's headless Chromium, driven through its WebDriver
//! (chromedriver), follows `cdnlab run --web` of the interconnected-CDN scenario with a timeline
//! event, and of the ICN scenario, and the test reads what the page shows.

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
                .no_proxy()
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

/// The shipped topology `file` without its `name` (a test's lab has its own).
fn shipped(file: &str) -> String {
    let text = std::fs::read_to_string(repo_root().join("topologies").join(file))
        .expect("the shipped topology");
    text.lines()
        .filter(|line| !line.starts_with("name ="))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// The interconnected-CDN topology (three clients, 13 links) with a timeline event that
/// raises one client's access delay while the clients play.
fn topology() -> String {
    format!(
        "{}\n[[timeline]]\nat = \"{EVENT_AT_S}s\"\nlink = [\"c-direct-cs\", \"acc\"]\ndelay = \"30ms\"\n",
        shipped("interconnected-cdn.toml")
    )
}

/// `cdnlab run` of `lab` into `out` with `sets`, its live view on `web_port`.
fn run_with_view(lab: &Lab, out: &std::path::Path, sets: &[&str], web_port: u16) -> Killed {
    let mut command = Command::new(cdnlab());
    command.args([
        "run",
        lab.topology().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    for set in sets {
        command.args(["--set", set]);
    }
    Killed(
        command
            .args(["--web", &format!("127.0.0.1:{web_port}")])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cdnlab run starts"),
    )
}

/// Headless Chromium under chromedriver with one session, on the live view at `web_port` once
/// it is up; the session is closed when dropped.
struct Browser {
    driver: Driver,
    id: String,
    _chromedriver: Killed,
}

impl Browser {
    fn open(web_port: u16) -> Browser {
        let driver_port = free_port();
        let chromedriver = Killed(
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
        let browser = Browser {
            driver,
            id,
            _chromedriver: chromedriver,
        };
        // The view starts once the lab is up.
        wait_for(Duration::from_secs(90), "the live view", || {
            TcpListener::bind(("127.0.0.1", web_port)).err()
        });
        let page = format!("http://127.0.0.1:{web_port}/");
        browser.post("url", json!({"url": page}));
        browser
    }

    fn post(&self, what: &str, body: Value) -> Value {
        self.driver
            .post(&format!("/session/{}/{what}", self.id), body)
    }

    /// What the page shows (`window.cdnlab.snapshot()` in web/app.js).
    fn snapshot(&self) -> Value {
        self.post(
            "execute/sync",
            json!({"script": "return window.cdnlab.snapshot();", "args": []}),
        )
    }

    /// Follows the page until it says the run ended and has drawn that (a message handled but
    /// not yet drawn leaves the page's lists one behind its view), calling `each` with every
    /// look; the last.
    fn until_the_end(&self, limit: Duration, mut each: impl FnMut(&Value)) -> Value {
        wait_for(limit, "the run's end on the page", || {
            let s = self.snapshot();
            each(&s);
            (!s["ended"].is_null() && s["renderPending"] == false).then_some(s)
        })
    }

    fn screenshot(&self) -> Option<String> {
        let path = format!("/session/{}/screenshot", self.id);
        match self.driver.call(reqwest::Method::GET, &path, None) {
            Ok(Value::String(png)) => Some(png),
            _ => None,
        }
    }

    /// The console's SEVERE entries, and no error caught on the page.
    fn assert_no_errors(&self, last: &Value) {
        let logs = self.post("se/log", json!({"type": "browser"}));
        let errors: Vec<&Value> = logs
            .as_array()
            .map(|entries| entries.iter().filter(|e| e["level"] == "SEVERE").collect())
            .unwrap_or_default();
        assert!(errors.is_empty(), "console errors: {errors:?}");
        assert_eq!(last["errors"], json!([]), "errors on the page");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let path = format!("/session/{}", self.id);
        let _ = self.driver.call(reqwest::Method::DELETE, &path, None);
    }
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
    let mut run = run_with_view(&lab, &out, &["chunks=10"], web_port);
    let browser = Browser::open(web_port);
    // Until the run ends (the page says so), keeping the last look; a screenshot while the
    // clients play, once the event is on the page and each client has six segments.
    let mut shot = false;
    let last = browser.until_the_end(Duration::from_secs(120), |s| {
        let playing = ["c-upstream-rr", "c-direct-rr", "c-direct-cs"]
            .iter()
            .all(|c| s["clients"][c]["segments"].as_u64() >= Some(6));
        if !shot && playing && s["eventsShown"].as_u64() >= Some(2) {
            shot = true;
            if let Some(png) = browser.screenshot() {
                save_screenshot(&png, "web.png", "CDNLAB_WEB_SCREENSHOT");
            }
        }
    });
    browser.assert_no_errors(&last);
    drop(browser);
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

/// The ICN scenario (four regions, four sites, the controller) for 25 s, with site1's link cut
/// to 1 Mbit/s at 12 s. The page shows each region's latency second by second while the users
/// send (each second within a few seconds of its end), and the controller's prices and
/// mappings as it makes them; what it shows adds up to the run's own files: every request of
/// every region's `requests.csv` counted once, the same mean latency, every SM period's prices
/// and every PARM period's mapping of `controller.json`.
fn the_page_shows_an_icn_lab_s_regions_and_controller_live() {
    let lab = Lab::new("t-web-icn", &shipped("icn-telco-cdn.toml"));
    let out = lab.dir.join("run");
    let web_port = free_port();
    let sets = ["duration=25s", "congest_at=12s"];
    let mut run = run_with_view(&lab, &out, &sets, web_port);
    let browser = Browser::open(web_port);
    let mut shot = false;
    let last = browser.until_the_end(Duration::from_secs(150), |s| {
        let periods = s["controller"]["periods"].as_array().map_or(0, Vec::len);
        if !shot && periods >= 2 {
            shot = true;
            if let Some(png) = browser.screenshot() {
                save_screenshot(&png, "web-icn.png", "CDNLAB_WEB_ICN_SCREENSHOT");
            }
        }
    });
    browser.assert_no_errors(&last);
    drop(browser);
    let status = run.0.wait().expect("the run ends");
    assert!(status.success(), "cdnlab run failed: {status}");
    assert_eq!(leftovers(&lab.name), Vec::<String>::new());
    assert_eq!(last["mode"], "live");
    assert_eq!(last["regionsShown"], 4);

    for l in 1..=4 {
        let client = format!("load{l}");
        let csv = std::fs::read_to_string(out.join(format!("nodes/{client}/requests.csv")))
            .expect("requests.csv");
        let rows: Vec<Vec<&str>> = csv
            .lines()
            .skip(1)
            .map(|r| r.split(',').collect())
            .collect();
        let answered: Vec<f64> = rows
            .iter()
            .filter(|r| r[4] == "200")
            .map(|r| r[3].parse::<f64>().unwrap() * 1000.0)
            .collect();
        let seconds = last["latency"][&client]
            .as_array()
            .expect("a latency series");
        assert!(seconds.len() >= 20, "{client}: {} seconds", seconds.len());
        let number = |v: &Value, key: &str| v[key].as_f64().unwrap_or(0.0);
        let shown: f64 = seconds.iter().map(|s| number(s, "requests")).sum();
        assert_eq!(shown as usize, rows.len(), "{client}: requests on the page");
        // The mean over the run, from the page's seconds and from the file.
        let (mut sum, mut n) = (0.0, 0.0);
        for s in seconds.iter().filter(|s| !s["mean_ms"].is_null()) {
            let answered_here = number(s, "requests") - number(s, "failed");
            sum += number(s, "mean_ms") * answered_here;
            n += answered_here;
        }
        let file_mean = answered.iter().sum::<f64>() / answered.len() as f64;
        assert_eq!(n as usize, answered.len(), "{client}: answered requests");
        assert!(
            (sum / n - file_mean).abs() < 1e-6 * file_mean,
            "{client}: mean latency {} ms on the page, {file_mean} ms in requests.csv",
            sum / n
        );
        // Live: a second reaches the page a little over a second after it ends.
        let mut delays: Vec<f64> = seconds
            .iter()
            .map(|s| number(s, "received_ms") - number(s, "time_unix_s") * 1000.0)
            .collect();
        delays.sort_by(f64::total_cmp);
        let median = delays[delays.len() / 2];
        eprintln!("{client}: seconds shown {median:.0} ms after their end (median)");
        assert!(
            (900.0..2500.0).contains(&median),
            "{client}: seconds reached the page {median} ms after their end (median): {delays:?}"
        );
    }

    let controller: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("nodes/controller/controller.json")).unwrap(),
    )
    .unwrap();
    let shown = &last["controller"];
    assert_eq!(shown["sites"], controller["sites"]);
    // The page's records of `key` beside controller.json's, as many and at least `least`.
    let beside = |key: &str, least: usize| {
        let on_page = shown[key].as_array().expect("on the page");
        let recorded = controller[key].as_array().expect("in controller.json");
        assert!(on_page.len() >= least, "{key}: {on_page:?}");
        assert_eq!(on_page.len(), recorded.len(), "{key}");
        on_page.iter().zip(recorded)
    };
    for (tick, record) in beside("ticks", 4) {
        assert_eq!(tick["prices"], record["prices"]);
        let after_ms =
            tick["received_ms"].as_f64().unwrap() - tick["time_unix_s"].as_f64().unwrap() * 1000.0;
        assert!(
            (0.0..1000.0).contains(&after_ms),
            "an SM period reached the page {after_ms} ms after the controller logged it"
        );
    }
    for (period, record) in beside("periods", 2) {
        assert_eq!(period["version"], record["version"]);
        assert_eq!(period["site_share"], record["site_share"]);
    }
    // The mapping table: a row per region, a share per site.
    let table = shown["mappingShown"].as_array().expect("the mapping table");
    let regions: Vec<&str> = table.iter().map(|row| row[0].as_str().unwrap()).collect();
    assert_eq!(regions, ["r1", "r2", "r3", "r4"]);
    assert!(
        table.iter().all(|row| row.as_array().unwrap().len() == 5),
        "{table:?}"
    );
}

/// Keeps a screenshot as `name` in the test's temporary directory, and where `$env` says.
fn save_screenshot(png_base64: &str, name: &str, env: &str) {
    use base64::Engine;
    let Ok(png) = base64::engine::general_purpose::STANDARD.decode(png_base64) else {
        return;
    };
    let mut places = vec![std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)];
    places.extend(std::env::var_os(env).map(Into::into));
    for place in places {
        let _ = std::fs::write(place, &png);
    }
}

tests!(BROWSER => the_page_shows_a_running_lab_live_in_chromium, the_page_shows_an_icn_lab_s_regions_and_controller_live);
