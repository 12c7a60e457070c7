//! `icn-load`: the users of one ICN region (papers/000, Section 5.1). Each application's
//! requests arrive as a Poisson process of intensity `users × rate` (Equation 6: λ_nl is the sum
//! of the users' λ_nu), open loop — a request is sent at its arrival whatever the ones before
//! are doing — for names `/APP/oK` with K drawn from a Zipf popularity, to the region's ICN
//! router. Appends a row to `requests.csv` as each request completes (so `cdnlab web` shows the
//! region's latency while it runs), and writes `latency.svg` (mean latency per application over
//! time) and `summary.json` at the end.

use crate::plot::{lines, Figure, Point};
use crate::roles::config::Keys;
use crate::roles::rows::RowLog;
use crate::roles::summary::{self, ClientSummary};
use crate::roles::Start;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Zipf};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use toml::Table;

#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub region: String,
    /// The region's ICN router (`host` or `host:port`).
    pub router: String,
    pub users: f64,
    pub apps: Vec<String>,
    /// λ_nu: requests per second per user, per application.
    pub rates: Vec<f64>,
    /// Names per application, and the Zipf exponent of their popularity.
    pub objects: u64,
    pub zipf: f64,
    pub duration: Duration,
    pub timeout: Duration,
    pub seed: u64,
}

/// The most requests a second one load generator may be asked to send.
const MAX_REQUESTS_PER_S: f64 = 10_000.0;

pub fn config(table: &Table) -> Result<LoadConfig, String> {
    let keys = Keys::new(table);
    keys.only(
        &[
            "region", "router", "users", "apps", "rates", "objects", "zipf", "duration", "timeout",
            "seed",
        ],
        "role icn-load",
    )?;
    let apps = keys.items("apps")?;
    let rates = keys.numbers("rates")?;
    if rates.len() != apps.len() {
        return keys.fail("rates", "needs one rate per application");
    }
    let users = keys.number("users")?.unwrap_or(0.0);
    if !(users.is_finite() && users >= 0.0) {
        return keys.fail("users", "must be a number ≥ 0");
    }
    // Every request is a task and a record: the load is bounded, not the machine's memory.
    let per_second = users * rates.iter().sum::<f64>();
    if per_second > MAX_REQUESTS_PER_S {
        return keys.fail(
            "users",
            format!(
                "users × the sum of rates is {per_second} requests/s, above {MAX_REQUESTS_PER_S}"
            ),
        );
    }
    let objects = keys.integer("objects")?.unwrap_or(1000);
    if objects == 0 {
        return keys.fail("objects", "must be at least 1");
    }
    let zipf = keys.number("zipf")?.unwrap_or(0.8);
    if !(zipf.is_finite() && zipf >= 0.0) {
        return keys.fail("zipf", "must be ≥ 0");
    }
    Ok(LoadConfig {
        region: match keys.string("region")? {
            Some(r) => r.to_string(),
            None => return keys.fail("region", "is required"),
        },
        router: match keys.string("router")? {
            Some(r) => r.to_string(),
            None => return keys.fail("router", "is required: the region's ICN router"),
        },
        users,
        apps,
        rates,
        objects,
        zipf,
        duration: keys.duration_within(
            "duration",
            Duration::from_secs(60),
            Duration::ZERO..=Duration::from_secs(24 * 3600),
        )?,
        timeout: keys.duration_within(
            "timeout",
            Duration::from_secs(10),
            Duration::from_millis(100)..=Duration::from_secs(600),
        )?,
        seed: keys.integer("seed")?.unwrap_or(1),
    })
}

/// The header of `requests.csv`: a request's send time (seconds after the users started), its
/// application and object, how long it took, its HTTP status (0: no answer), what the router's
/// content store did, and the site that served it. Rows are in the order requests completed.
pub const REQUESTS_HEADER: &str = "sent_s,app,object,latency_s,status,cache,site";

/// One request as the user saw it.
#[derive(Debug, Clone)]
struct Record {
    sent_s: f64,
    app: usize,
    object: u64,
    latency_s: f64,
    status: u16,
    /// `hit`, `miss`, `aggregated` (the router's content store and PIT), or empty.
    cache: String,
    /// The CDN site that served it (empty for a router hit).
    site: String,
}

/// Every application's requests within `duration`, in time order: per application a Poisson
/// process of intensity users × λ_nu (Equation 6) and Zipf-popular objects, each from its own
/// seeded generator, drawn as they are needed (a long or busy run never holds them all).
struct Arrivals {
    streams: Vec<Stream>,
    duration_s: f64,
}

struct Stream {
    rng: StdRng,
    gaps: Exp<f64>,
    zipf: Zipf<f64>,
    /// The next arrival, seconds after the start.
    next_s: f64,
}

impl Arrivals {
    fn new(config: &LoadConfig) -> Result<Arrivals, String> {
        let zipf =
            Zipf::new(config.objects as f64, config.zipf).map_err(|e| format!("zipf: {e}"))?;
        let mut streams = Vec::new();
        for (app, per_user) in config.rates.iter().enumerate() {
            let rate = config.users * per_user;
            if !rate.is_finite() {
                return Err(format!(
                    "users × rate of {} is not a finite rate",
                    config.apps[app]
                ));
            }
            let mut rng = StdRng::seed_from_u64(config.seed ^ ((app as u64 + 1) << 40));
            let (gaps, next_s) = if rate > 0.0 {
                let gaps = Exp::new(rate).map_err(|e| format!("rate {rate}: {e}"))?;
                let first = gaps.sample(&mut rng);
                (gaps, first)
            } else {
                (Exp::new(1.0).map_err(|e| e.to_string())?, f64::INFINITY)
            };
            streams.push(Stream {
                rng,
                gaps,
                zipf,
                next_s,
            });
        }
        Ok(Arrivals {
            streams,
            duration_s: config.duration.as_secs_f64(),
        })
    }

    /// The next request: (seconds after the start, application, object).
    fn next(&mut self) -> Option<(f64, usize, u64)> {
        let (app, stream) = self
            .streams
            .iter_mut()
            .enumerate()
            .min_by(|a, b| a.1.next_s.total_cmp(&b.1.next_s))?;
        let at = stream.next_s;
        if at >= self.duration_s {
            return None;
        }
        let object = stream.zipf.sample(&mut stream.rng) as u64;
        stream.next_s += stream.gaps.sample(&mut stream.rng);
        Some((at, app, object))
    }
}

async fn request(
    client: reqwest::Client,
    url: String,
    sent_s: f64,
    app: usize,
    object: u64,
) -> Record {
    let started = Instant::now();
    let header = |r: &reqwest::Response, name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (status, cache, site) = match client.get(&url).send().await {
        Ok(response) => {
            // From the network, bound for a CSV cell: anything else is logged as unknown.
            let cache = Some(header(&response, "x-icn-cache"))
                .filter(|c| ["hit", "miss", "aggregated"].contains(&c.as_str()))
                .unwrap_or_default();
            let site = Some(header(&response, "x-icn-site"))
                .filter(|s| crate::topology::check_node_name(s, "site").is_ok())
                .unwrap_or_default();
            let status = response.status().as_u16();
            match crate::roles::fetch::drain_body(response).await {
                Ok(_) => (status, cache, site),
                Err(_) => (0, cache, site),
            }
        }
        Err(_) => (0, String::new(), String::new()),
    };
    Record {
        sent_s,
        app,
        object,
        latency_s: started.elapsed().as_secs_f64(),
        status,
        cache,
        site,
    }
}

/// Generates the region's load until its duration is over (or a signal), then writes the
/// summary.
pub async fn run(config: LoadConfig, start: Start) -> Result<(), String> {
    let out = start.out_dir()?;
    let node = start.env.node_name();
    let result = tokio::select! {
        result = generate(&config, &node, &out) => result,
        signal = start.shutdown.signal() => Err(format!("stopped by {signal} before the end")),
    };
    let summary = result.and_then(|value| ClientSummary::of(&node, &value));
    summary::finish(&out, &node, summary)
}

async fn generate(config: &LoadConfig, node: &str, out: &Path) -> Result<Value, String> {
    let client = crate::roles::fetch::client()
        .timeout(config.timeout)
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let mut arrivals = Arrivals::new(config)?;
    let mut log = RowLog::create(out, "requests.csv", REQUESTS_HEADER)?;
    let mut records = Vec::new();
    let mut keep = |done: Result<Record, tokio::task::JoinError>| -> Result<(), String> {
        let record = done.map_err(|e| format!("a request's task: {e}"))?;
        log.append(&row(config, &record))?;
        records.push(record);
        Ok(())
    };
    let origin = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    // Open loop: each request is sent at its arrival, whatever the earlier ones are doing; the
    // ones that completed meanwhile are logged.
    while let Some((sent_s, app, object)) = arrivals.next() {
        let at = origin + Duration::from_secs_f64(sent_s);
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(at.into()) => break,
                Some(done) = tasks.join_next() => keep(done)?,
            }
        }
        let url = format!("http://{}/{}/o{object}", config.router, config.apps[app]);
        tasks.spawn(request(client.clone(), url, sent_s, app, object));
    }
    while let Some(done) = tasks.join_next().await {
        keep(done)?;
    }
    plot_latency(out, config, &records)?;
    Ok(summarize(config, node, &records))
}

fn summarize(config: &LoadConfig, node: &str, records: &[Record]) -> Value {
    let ok: Vec<&Record> = records.iter().filter(|r| r.status == 200).collect();
    let mean = |rs: &[&Record]| {
        if rs.is_empty() {
            Value::Null
        } else {
            json!(rs.iter().map(|r| r.latency_s).sum::<f64>() / rs.len() as f64)
        }
    };
    let percentile = |rs: &[&Record], p: f64| {
        let mut v: Vec<f64> = rs.iter().map(|r| r.latency_s).collect();
        v.sort_by(f64::total_cmp);
        crate::stats::percentile(&v, p).map_or(Value::Null, |x| json!(x))
    };
    let per_app: serde_json::Map<String, Value> = config
        .apps
        .iter()
        .enumerate()
        .map(|(n, app)| {
            let rs: Vec<&Record> = ok.iter().copied().filter(|r| r.app == n).collect();
            (
                app.clone(),
                json!({
                    "requests": records.iter().filter(|r| r.app == n).count(),
                    "mean_latency_s": mean(&rs),
                    "p95_latency_s": percentile(&rs, 95.0),
                }),
            )
        })
        .collect();
    let mut by_site = std::collections::BTreeMap::<String, usize>::new();
    for r in ok.iter().filter(|r| !r.site.is_empty()) {
        *by_site.entry(r.site.clone()).or_default() += 1;
    }
    let hits = ok.iter().filter(|r| r.cache == "hit").count();
    let failed = records.len() - ok.len();
    json!({
        "node": node,
        "region": config.region,
        "requests": records.len(),
        "failed_requests": failed,
        "mean_latency_s": mean(&ok),
        "p95_latency_s": percentile(&ok, 95.0),
        "cache_hit_ratio": if ok.is_empty() { 0.0 } else { hits as f64 / ok.len() as f64 },
        "apps": per_app,
        "served_by_site": by_site,
        "failed": ok.is_empty() && !records.is_empty(),
        "error": if ok.is_empty() && !records.is_empty() { json!("no request succeeded") } else { Value::Null },
    })
}

/// `record`'s row of `requests.csv` (under [`REQUESTS_HEADER`]).
fn row(config: &LoadConfig, r: &Record) -> String {
    format!(
        "{:.6},{},{},{:.6},{},{},{}",
        r.sent_s, config.apps[r.app], r.object, r.latency_s, r.status, r.cache, r.site
    )
}

/// Mean latency of each application's successful requests per 2-second bin of send time.
fn plot_latency(out: &Path, config: &LoadConfig, records: &[Record]) -> Result<(), String> {
    const BIN_S: f64 = 2.0;
    let series: Vec<(String, Vec<Point>)> = config
        .apps
        .iter()
        .enumerate()
        .map(|(n, app)| {
            let mut bins = std::collections::BTreeMap::<u64, (f64, usize)>::new();
            for r in records.iter().filter(|r| r.app == n && r.status == 200) {
                let bin = bins.entry((r.sent_s / BIN_S) as u64).or_default();
                bin.0 += r.latency_s * 1000.0;
                bin.1 += 1;
            }
            let points = bins
                .into_iter()
                .map(|(b, (sum, count))| Point::new((b as f64 + 0.5) * BIN_S, sum / count as f64))
                .collect();
            (app.clone(), points)
        })
        .collect();
    let caption = format!("Latency in region {} (mean per {BIN_S} s)", config.region);
    lines(
        &out.join("latency.svg"),
        &Figure {
            caption: &caption,
            x_title: "time (s)",
            y_title: "ms",
            series: &series,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(rates: &str, users: &str) -> LoadConfig {
        let text = format!(
            "region = 'r1'\nrouter = 'router1'\nusers = '{users}'\napps = 'a,b'\nrates = '{rates}'\nduration = '100s'\nobjects = 50"
        );
        config(&text.parse().expect("TOML")).expect("valid")
    }

    /// Time-ordered, within the duration, each application near its rate users × λ_nu
    /// (Equation 6), objects within the catalogue, and the same seed gives the same requests.
    #[test]
    fn arrivals_are_poisson_per_application_in_time_order() {
        let config = load("0.2,0.05", "10");
        let all: Vec<(f64, usize, u64)> = {
            let mut arrivals = Arrivals::new(&config).expect("arrivals");
            std::iter::from_fn(|| arrivals.next()).collect()
        };
        assert!(all.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(all
            .iter()
            .all(|(t, _, k)| *t < 100.0 && (1..=50).contains(k)));
        let count = |app| all.iter().filter(|a| a.1 == app).count() as f64;
        // 200 and 50 expected; Poisson's sd is √200 ≈ 14 and √50 ≈ 7.
        assert!((count(0) - 200.0).abs() < 50.0, "{}", count(0));
        assert!((count(1) - 50.0).abs() < 25.0, "{}", count(1));
        let mut again = Arrivals::new(&config).expect("arrivals");
        assert_eq!(std::iter::from_fn(|| again.next()).collect::<Vec<_>>(), all);
    }

    #[test]
    fn a_zero_rate_sends_nothing_and_an_infinite_one_is_refused() {
        let mut none = Arrivals::new(&load("0,0", "10")).expect("arrivals");
        assert_eq!(none.next(), None);
        // The config refuses a load past its bound, naming it...
        let text = "region = 'r1'\nrouter = 'router1'\nusers = '1000'\napps = 'a'\nrates = '11'";
        let refused = config(&text.parse().expect("TOML")).unwrap_err();
        assert!(refused.contains("requests/s, above 10000"), "{refused}");
        // ...and the arrivals refuse a rate that is not finite, however they are configured.
        let mut infinite = load("0,0", "10");
        (infinite.users, infinite.rates) = (1e300, vec![1e300, 0.0]);
        let e = Arrivals::new(&infinite).err().expect("refused");
        assert!(e.contains("not a finite rate"), "{e}");
    }
}
