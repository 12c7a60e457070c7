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

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

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
    Some(Request {
        done_unix_s: start_unix_s + sent_s + latency_s,
        app: cells.get(1)?.to_string(),
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
}

impl RegionLatency {
    pub fn add(&mut self, request: Request) {
        let mut second = request.done_unix_s.floor() as i64;
        if let Some(open) = self.open_from {
            second = second.max(open);
        }
        let bin = self.seconds.entry(second).or_default();
        if request.ok {
            let ms = request.latency_s * 1000.0;
            bin.latencies_ms.push(ms);
            let app = bin.apps.entry(request.app).or_default();
            app.0 += ms;
            app.1 += 1;
        } else {
            bin.failed += 1;
        }
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

/// The message of a line of controller `node`'s `controller.jsonl`, or `None` for a line that
/// is not one of its records.
pub fn controller(node: &str, line: &str) -> Option<Value> {
    let mut value: Value = serde_json::from_str(line).ok()?;
    let kind = match value.get("kind")?.as_str()? {
        "controller" => "controller",
        "tick" => "controller_tick",
        "period" => "controller_period",
        _ => return None,
    };
    if kind != "controller" {
        value.get("time_unix_s")?.as_f64()?;
    }
    let object = value.as_object_mut()?;
    object.insert("kind".into(), kind.into());
    object.insert("node".into(), node.into());
    Some(value)
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
        for bad in [
            "",
            "x,app1,1,0.1,200,,",
            "1,app1,1,NaN,200,,",
            "1,app1,1,0.1",
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

    #[test]
    fn controller_lines_become_messages_and_anything_else_is_left_out() {
        let header = controller("ctl", r#"{"kind":"controller","sites":["s1"]}"#).unwrap();
        assert_eq!(header["kind"], "controller");
        assert_eq!(header["node"], "ctl");
        let tick = controller("ctl", r#"{"kind":"tick","time_unix_s":5.0,"prices":[1.0]}"#);
        assert_eq!(tick.unwrap()["kind"], "controller_tick");
        let period = controller("ctl", r#"{"kind":"period","time_unix_s":9.0,"version":1}"#);
        assert_eq!(period.unwrap()["kind"], "controller_period");
        for bad in [
            r#"{"kind":"tick"}"#,
            r#"{"kind":"end","time_unix_s":1}"#,
            "[1]",
            "not json",
        ] {
            assert_eq!(controller("ctl", bad), None, "{bad}");
        }
    }
}
