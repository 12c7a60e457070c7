//! `farm-load`: the farm's users. Requests arrive as a Poisson process of rate ρ·m per mean
//! service time, open loop, for content C drawn from a Zipf(α) popularity (C = 0 the most
//! popular); each asks the dispatcher and follows its one redirect, to a farm server or, when
//! the farm lost it, to the data center. SIGUSR1 (a `signal` timeline event) changes the
//! popularity as `change` says. Writes `requests.csv` (one row per request) and `summary.json`
//! (losses overall and before and after the change, the transfers' times).

use super::config::{Change, LoadConfig};
use crate::roles::summary::{self, ClientSummary};
use crate::roles::Start;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Zipf};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, SignalKind};

/// Where a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Farm,
    DataCenter,
    /// A farm server was busy (503): the dispatcher and the server disagreed.
    Refused,
    Failed,
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Farm => "farm",
            Outcome::DataCenter => "datacenter",
            Outcome::Refused => "refused",
            Outcome::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone)]
struct Record {
    sent_s: f64,
    content: u32,
    /// 0 before the popularity change, 1 after.
    phase: u8,
    outcome: Outcome,
    /// The whole request, and the transfer after the redirect.
    latency_s: f64,
    transfer_s: f64,
    /// Why it failed, if it did.
    error: String,
}

/// Content of popularity rank `rank` (1 = most popular) under `change` (None: as at the start).
fn content_at(rank: usize, n: usize, change: Option<Change>) -> u32 {
    let i = rank.clamp(1, n) - 1;
    (match change {
        None => i,
        Some(Change::Reverse) => n - 1 - i,
        Some(Change::Shift(k)) => (i + k) % n,
    }) as u32
}

async fn request(
    client: reqwest::Client,
    dispatcher: String,
    content: u32,
    sent_s: f64,
    phase: u8,
) -> Record {
    let started = Instant::now();
    let mut record = Record {
        sent_s,
        content,
        phase,
        outcome: Outcome::Failed,
        latency_s: 0.0,
        transfer_s: 0.0,
        error: String::new(),
    };
    let url = format!("http://{dispatcher}/c/{content}");
    let result: Result<(), String> = async {
        let redirect = client.get(&url).send().await.map_err(|e| e.to_string())?;
        let location = redirect
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                format!(
                    "the dispatcher answered {} without a redirect",
                    redirect.status()
                )
            })?
            .to_string();
        let to_datacenter = redirect
            .headers()
            .get(super::DECISION)
            .is_some_and(|v| v == "lost");
        let transfer = Instant::now();
        let response = client
            .get(&location)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        crate::roles::fetch::drain_body(response).await?;
        record.transfer_s = transfer.elapsed().as_secs_f64();
        record.outcome = match status.as_u16() {
            200 if to_datacenter => Outcome::DataCenter,
            200 => Outcome::Farm,
            503 => Outcome::Refused,
            other => return Err(format!("{location}: status {other}")),
        };
        Ok(())
    }
    .await;
    if let Err(e) = result {
        record.error = e;
    }
    record.latency_s = started.elapsed().as_secs_f64();
    record
}

/// Sends the load until its duration is over (or a stop), then writes the summary.
pub async fn run(config: LoadConfig, start: Start) -> Result<(), String> {
    let out = start.out_dir()?;
    let node = start.env.node_name();
    let result = tokio::select! {
        result = generate(&config, &out) => result,
        signal = start.shutdown.signal() => Err(format!("stopped by {signal} before the end")),
    };
    let summary = result.and_then(|value| ClientSummary::of(&node, &value));
    summary::finish(&out, &node, summary)
}

async fn generate(config: &LoadConfig, out: &Path) -> Result<Value, String> {
    let client = crate::roles::fetch::client()
        .timeout(config.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let n = config.model.contents;
    let rate = config.model.rho * config.servers as f64 / config.model.service.as_secs_f64();
    let gaps = Exp::new(rate).map_err(|e| format!("request rate {rate}/s: {e}"))?;
    let zipf = Zipf::new(n as f64, config.model.alpha).map_err(|e| format!("alpha: {e}"))?;
    let mut rng = StdRng::seed_from_u64(config.seed);
    let mut usr1 = signal(SignalKind::user_defined1()).map_err(|e| format!("SIGUSR1: {e}"))?;
    let origin = Instant::now();
    let end_s = config.duration.as_secs_f64();
    let mut change: Option<Change> = None;
    let mut changed_at_s: Option<f64> = None;
    let mut tasks = tokio::task::JoinSet::new();
    let mut next_s = gaps.sample(&mut rng);
    // Open loop: each request is sent at its arrival, whatever the earlier ones are doing.
    while next_s < end_s {
        let at = (origin + Duration::from_secs_f64(next_s)).into();
        tokio::select! {
            () = tokio::time::sleep_until(at) => {}
            _ = usr1.recv() => {
                if changed_at_s.is_none() && config.change.is_some() {
                    change = config.change;
                    changed_at_s = Some(origin.elapsed().as_secs_f64());
                    tracing::info!("farm-load: popularity changed ({change:?})");
                }
                continue;
            }
        }
        let rank = zipf.sample(&mut rng) as usize;
        let content = content_at(rank, n, change);
        let phase = u8::from(changed_at_s.is_some());
        tasks.spawn(request(
            client.clone(),
            config.dispatcher.clone(),
            content,
            next_s,
            phase,
        ));
        next_s += gaps.sample(&mut rng);
    }
    let mut records = tasks.join_all().await;
    records.sort_by(|a, b| a.sent_s.total_cmp(&b.sent_s));
    write_requests(out, &records)?;
    Ok(summarize(config, &records, changed_at_s))
}

/// Counts of `records`: requests, where they ended, and the share lost.
fn counts<'a>(records: impl Iterator<Item = &'a Record>) -> Value {
    let (mut farm, mut lost, mut refused, mut failed) = (0u64, 0u64, 0u64, 0u64);
    let mut transfer = Vec::new();
    for r in records {
        match r.outcome {
            Outcome::Farm => {
                farm += 1;
                transfer.push(r.transfer_s);
            }
            Outcome::DataCenter => lost += 1,
            Outcome::Refused => refused += 1,
            Outcome::Failed => failed += 1,
        }
    }
    let answered = farm + lost;
    json!({
        "requests": farm + lost + refused + failed,
        "served_by_farm": farm,
        "lost": lost,
        "refused": refused,
        "failed_requests": failed,
        "inefficiency": if answered == 0 { Value::Null } else { json!(lost as f64 / answered as f64) },
        "mean_transfer_s": if transfer.is_empty() { Value::Null } else { json!(transfer.iter().sum::<f64>() / transfer.len() as f64) },
    })
}

fn summarize(config: &LoadConfig, records: &[Record], changed_at_s: Option<f64>) -> Value {
    let mut summary = counts(records.iter());
    let served = summary["served_by_farm"].as_u64().unwrap_or(0);
    let fields = summary.as_object_mut().expect("counts is an object");
    fields.insert(
        "before_change".into(),
        counts(records.iter().filter(|r| r.phase == 0)),
    );
    fields.insert(
        "after_change".into(),
        counts(records.iter().filter(|r| r.phase == 1)),
    );
    fields.insert("changed_at_s".into(), json!(changed_at_s));
    fields.insert(
        "service_s".into(),
        json!(config.model.service.as_secs_f64()),
    );
    let failed = served == 0 && !records.is_empty();
    fields.insert("failed".into(), json!(failed));
    if failed {
        let why = records
            .iter()
            .find(|r| !r.error.is_empty())
            .map_or("", |r| &r.error);
        fields.insert(
            "error".into(),
            json!(format!("no request was served by the farm: {why}")),
        );
    }
    summary
}

fn write_requests(out: &Path, records: &[Record]) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut text = String::from("sent_s,content,phase,outcome,latency_s,transfer_s\n");
    for r in records {
        text += &format!(
            "{:.6},{},{},{},{:.6},{:.6}\n",
            r.sent_s,
            r.content,
            r.phase,
            r.outcome.name(),
            r.latency_s,
            r.transfer_s
        );
    }
    let path = out.join("requests.csv");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_maps_ranks_to_other_contents() {
        let n = 5;
        let order = |change| {
            (1..=n)
                .map(|r| content_at(r, n, change))
                .collect::<Vec<_>>()
        };
        assert_eq!(order(None), [0, 1, 2, 3, 4]);
        assert_eq!(order(Some(Change::Reverse)), [4, 3, 2, 1, 0]);
        assert_eq!(order(Some(Change::Shift(2))), [2, 3, 4, 0, 1]);
    }
}
