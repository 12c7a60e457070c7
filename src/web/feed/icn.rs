//! The ICN scenario's messages (papers/000): each region's request latency per second, from the
//! rows `icn-load` appends to `requests.csv` as requests complete, and the controller's
//! measurements, prices and mappings, from the lines it appends to `controller.jsonl`:
//!
//! - `latency`: one region's requests that completed within one second: how many, how many
//!   failed, the mean and 95th percentile of the others' latency, the mean per application.
//! - `controller`: the controller's sites, regions, applications and mode (its log's first line).
//! - `controller_tick`: an SM period: each site's usage, capacity, congestion θ_m and price.
//! - `controller_period`: a PARM period: the mapping installed (its version, the share of all
//!   demand and of each region's demand sent to each site) or why none was.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Bounds on what a lab node's files can make the feed keep or send: the seconds of a region
/// not published yet, the applications per second, the entries of a controller's lists, the
/// length of a name or an error. Past them a row or line is left out.
const MAX_OPEN_SECONDS: usize = 600;
const MAX_APPS: usize = 64;
const MAX_ENTRIES: usize = 1024;
const MAX_NAME: usize = 64;
const MAX_ERROR: usize = 1024;
/// The latest completion time a row may give (year 5138): beyond it the second would not fit.
const MAX_UNIX_S: f64 = 1e11;

/// A request as a row of `requests.csv` tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// When it completed: the users' start plus its send time plus its latency.
    pub done_unix_s: f64,
    pub app: String,
    pub latency_s: f64,
    /// Answered with 200.
    pub ok: bool,
}

/// The request of a row of `requests.csv` (under `icn_roles::load::REQUESTS_HEADER`), for users
/// who started at `start_unix_s`; `None` for a row that does not parse.
pub fn request(start_unix_s: f64, row: &str) -> Option<Request> {
    let cells: Vec<&str> = row.split(',').collect();
    let number = |i: usize| {
        cells
            .get(i)?
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let (sent_s, latency_s) = (number(0)?, number(3)?);
    let status: u16 = cells.get(4)?.parse().ok()?;
    let done_unix_s = start_unix_s + sent_s + latency_s;
    let app = cells
        .get(1)
        .filter(|a| !a.is_empty() && a.len() <= MAX_NAME)?;
    (0.0..=MAX_UNIX_S).contains(&done_unix_s).then(|| Request {
        done_unix_s,
        app: app.to_string(),
        latency_s,
        ok: status == 200,
    })
}

#[derive(Debug, Default)]
struct Second {
    /// The latencies of the requests answered, ms.
    latencies_ms: Vec<f64>,
    failed: u64,
    /// Per application: the sum of the answered requests' latencies (ms) and their number.
    apps: BTreeMap<String, (f64, u64)>,
}

/// One region's requests gathered by the second they completed in, each second published once.
#[derive(Debug, Default)]
pub struct RegionLatency {
    seconds: BTreeMap<i64, Second>,
    /// The first second not published yet: a request logged after its second was published
    /// counts in this one.
    open_from: Option<i64>,
    /// The latest completion time of a request counted so far.
    latest_unix_s: f64,
}

impl RegionLatency {
    /// Counts `request` in the second it completed in (or the first open one); leaves it out
    /// if that would open more than [`MAX_OPEN_SECONDS`].
    pub fn add(&mut self, request: Request) {
        self.latest_unix_s = self.latest_unix_s.max(request.done_unix_s);
        let mut second = request.done_unix_s.floor() as i64;
        if let Some(open) = self.open_from {
            second = second.max(open);
        }
        if !self.seconds.contains_key(&second) && self.seconds.len() >= MAX_OPEN_SECONDS {
            return;
        }
        let bin = self.seconds.entry(second).or_default();
        if request.ok {
            let ms = request.latency_s * 1000.0;
            bin.latencies_ms.push(ms);
            if bin.apps.len() < MAX_APPS || bin.apps.contains_key(&request.app) {
                let app = bin.apps.entry(request.app).or_default();
                app.0 += ms;
                app.1 += 1;
            }
        } else {
            bin.failed += 1;
        }
    }

    /// The latest completion time of a request counted so far (0 before any).
    pub fn latest_unix_s(&self) -> f64 {
        self.latest_unix_s
    }

    /// The `latency` messages of `client`'s seconds that ended by `until_unix_s`, oldest first.
    pub fn publish(&mut self, client: &str, until_unix_s: f64) -> Vec<Value> {
        let mut messages = Vec::new();
        while let Some(entry) = self.seconds.first_entry() {
            if (*entry.key() + 1) as f64 > until_unix_s {
                break;
            }
            let (second, mut bin) = entry.remove_entry();
            self.open_from = Some(second + 1);
            bin.latencies_ms.sort_by(f64::total_cmp);
            let answered = bin.latencies_ms.len();
            let mean_ms =
                (answered > 0).then(|| bin.latencies_ms.iter().sum::<f64>() / answered as f64);
            let apps: Map<String, Value> = bin
                .apps
                .iter()
                .map(|(app, (sum, n))| (app.clone(), json!(sum / *n as f64)))
                .collect();
            messages.push(json!({
                "kind": "latency",
                "client": client,
                "time_unix_s": (second + 1) as f64,
                "requests": answered as u64 + bin.failed,
                "failed": bin.failed,
                "mean_ms": mean_ms,
                "p95_ms": crate::stats::percentile(&bin.latencies_ms, 95.0),
                "apps": apps,
            }));
        }
        messages
    }
}

/// The first line of `controller.jsonl`.
#[derive(Deserialize, Serialize)]
struct Header {
    sites: Vec<String>,
    regions: Vec<String>,
    apps: Vec<String>,
    mode: String,
}

/// An SM period's line, as much of it as the page draws.
#[derive(Deserialize, Serialize)]
struct TickLine {
    time_unix_s: f64,
    t_s: f64,
    usage_mbps: Vec<f64>,
    capacity_mbps: Vec<f64>,
    theta: Vec<f64>,
    prices: Vec<f64>,
}

/// A PARM period's line.
#[derive(Deserialize, Serialize)]
struct PeriodLine {
    time_unix_s: f64,
    t_s: f64,
    version: Option<u64>,
    error: Option<String>,
    site_share: Vec<f64>,
    region_share: Vec<Vec<f64>>,
}

fn names_fit(names: &[String]) -> bool {
    names.len() <= MAX_ENTRIES && names.iter().all(|n| n.len() <= MAX_NAME)
}

fn lists_fit<'a>(lists: impl IntoIterator<Item = &'a Vec<f64>>) -> bool {
    lists.into_iter().all(|l| l.len() <= MAX_ENTRIES)
}

/// The message of a line of controller `node`'s `controller.jsonl`, or `None` for a line that
/// is not one of its records whole and within the bounds above: the page gets only the fields
/// it draws, of the types it expects.
pub fn controller(node: &str, line: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(line).ok()?;
    let (kind, record) = match value.get("kind")?.as_str()? {
        "controller" => {
            let header: Header = serde_json::from_value(value).ok()?;
            let fits = [&header.sites, &header.regions, &header.apps]
                .into_iter()
                .all(|names| names_fit(names))
                && header.mode.len() <= MAX_NAME;
            ("controller", fits.then(|| json!(header))?)
        }
        "tick" => {
            let tick: TickLine = serde_json::from_value(value).ok()?;
            let fits = lists_fit([
                &tick.usage_mbps,
                &tick.capacity_mbps,
                &tick.theta,
                &tick.prices,
            ]);
            ("controller_tick", fits.then(|| json!(tick))?)
        }
        "period" => {
            let period: PeriodLine = serde_json::from_value(value).ok()?;
            let fits = lists_fit(std::iter::once(&period.site_share).chain(&period.region_share))
                && period.region_share.len() <= MAX_ENTRIES
                && period.error.as_ref().is_none_or(|e| e.len() <= MAX_ERROR);
            ("controller_period", fits.then(|| json!(period))?)
        }
        _ => return None,
    };
    let mut record = record;
    let object = record.as_object_mut()?;
    object.insert("kind".into(), kind.into());
    object.insert("node".into(), node.into());
    Some(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_completes_at_its_send_time_plus_its_latency() {
        let r = request(100.0, "2.500000,app1,17,0.040000,200,miss,site2").unwrap();
        assert_eq!(r.app, "app1");
        assert!((r.done_unix_s - 102.54).abs() < 1e-9, "{r:?}");
        assert!(r.ok);
        assert!(!request(100.0, "1,app2,3,0.5,0,,").unwrap().ok);
        let long_app = format!("1,{},1,0.1,200,,", "a".repeat(MAX_NAME + 1));
        for bad in [
            "",
            "x,app1,1,0.1,200,,",
            "1,app1,1,NaN,200,,",
            "1,app1,1,0.1",
            "1,,1,0.1,200,,",
            "1e19,app1,1,0.1,200,,",
            &long_app,
        ] {
            assert_eq!(request(100.0, bad), None, "{bad}");
        }
    }

    /// Each second is published once it is over, with its count, failures, mean, p95 and the
    /// mean per application; a request logged after its second was published counts in the
    /// next one, so no second is published twice.
    #[test]
    fn seconds_are_published_once_each_when_they_are_over() {
        let mut region = RegionLatency::default();
        let add = |region: &mut RegionLatency, done: f64, app: &str, ms: f64, ok: bool| {
            region.add(Request {
                done_unix_s: done,
                app: app.into(),
                latency_s: ms / 1000.0,
                ok,
            })
        };
        add(&mut region, 10.2, "a", 20.0, true);
        add(&mut region, 10.9, "b", 40.0, true);
        add(&mut region, 10.95, "a", 0.0, false);
        add(&mut region, 11.1, "a", 30.0, true);
        assert!(region.publish("load1", 10.99).is_empty());
        let first = region.publish("load1", 11.5);
        assert_eq!(first.len(), 1);
        let m = &first[0];
        assert_eq!(m["time_unix_s"], 11.0);
        assert_eq!(
            (m["requests"].as_u64(), m["failed"].as_u64()),
            (Some(3), Some(1))
        );
        assert_eq!(m["mean_ms"], 30.0);
        assert_eq!(m["apps"], json!({"a": 20.0, "b": 40.0}));
        assert!((m["p95_ms"].as_f64().unwrap() - 39.0).abs() < 1e-9, "{m}");
        // Late: completed in second 10, logged after it was published.
        add(&mut region, 10.5, "b", 50.0, true);
        let rest = region.publish("load1", f64::INFINITY);
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0]["time_unix_s"], 12.0);
        assert_eq!(rest[0]["requests"], 2);
        assert_eq!(rest[0]["mean_ms"], 40.0);
        // All failed: no mean.
        add(&mut region, 20.0, "a", 0.0, false);
        assert_eq!(region.publish("load1", 30.0)[0]["mean_ms"], Value::Null);
    }

    /// Rows dated far apart cannot open more than [`MAX_OPEN_SECONDS`] seconds, nor names more
    /// than [`MAX_APPS`] applications in one: the rest are left out of what is kept.
    #[test]
    fn what_a_region_keeps_is_bounded() {
        let mut region = RegionLatency::default();
        for n in 0..MAX_OPEN_SECONDS + 10 {
            for app in 0..MAX_APPS + 5 {
                region.add(Request {
                    done_unix_s: 1000.0 + n as f64 * 3600.0,
                    app: format!("app{app}"),
                    latency_s: 0.01,
                    ok: true,
                });
            }
        }
        let published = region.publish("load1", f64::INFINITY);
        assert_eq!(published.len(), MAX_OPEN_SECONDS);
        for m in &published {
            assert_eq!(m["requests"], (MAX_APPS + 5) as u64);
            assert_eq!(m["apps"].as_object().unwrap().len(), MAX_APPS);
        }
    }

    #[test]
    fn controller_lines_become_messages_and_anything_else_is_left_out() {
        let header = controller(
            "ctl",
            r#"{"kind":"controller","sites":["s1"],"regions":["r1"],"apps":["a"],"mode":"parm"}"#,
        )
        .unwrap();
        assert_eq!(header["kind"], "controller");
        assert_eq!(header["node"], "ctl");
        assert_eq!(header["regions"], json!(["r1"]));
        let tick = r#"{"kind":"tick","time_unix_s":5.0,"t_s":5.0,"usage_mbps":[1.0],"capacity_mbps":[2.0],"theta":[0.5],"prices":[1.0],"variance":0.0}"#;
        let tick = controller("ctl", tick).unwrap();
        assert_eq!(tick["kind"], "controller_tick");
        assert_eq!(tick["prices"], json!([1.0]));
        assert_eq!(
            tick.get("variance"),
            None,
            "only what the page draws: {tick}"
        );
        let period = r#"{"kind":"period","time_unix_s":9.0,"t_s":9.0,"version":1,"error":null,"site_share":[1.0],"region_share":[[1.0]]}"#;
        assert_eq!(
            controller("ctl", period).unwrap()["kind"],
            "controller_period"
        );
        let long = format!(r#"["{}"]"#, "s".repeat(MAX_NAME + 1));
        let many = format!("[{}]", vec!["0.5"; MAX_ENTRIES + 1].join(","));
        for bad in [
            r#"{"kind":"tick"}"#,
            r#"{"kind":"controller","sites":["s1"]}"#,
            r#"{"kind":"period","time_unix_s":9.0,"t_s":9.0,"version":1,"site_share":[1.0],"region_share":[1.0]}"#,
            &format!(
                r#"{{"kind":"controller","sites":{long},"regions":[],"apps":[],"mode":"parm"}}"#
            ),
            &format!(
                r#"{{"kind":"tick","time_unix_s":5.0,"t_s":5.0,"usage_mbps":[],"capacity_mbps":[],"theta":[],"prices":{many}}}"#
            ),
            r#"{"kind":"end","time_unix_s":1}"#,
            "[1]",
            "not json",
        ] {
            assert_eq!(controller("ctl", bad), None, "{bad}");
        }
    }
}
