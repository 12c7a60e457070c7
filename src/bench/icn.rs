//! `bench icn`: what an `icn-router` sustains on loopback — Content Store hits (1 KB and 100 KB
//! objects), PIT aggregation (bursts of concurrent requests for one new name: requests per
//! second, and upstream requests per client request, which aggregation should hold at one per
//! burst) and all misses (every name new), with the origin answering after 10 ms or at once.
//!
//! The router is the real `icn-router` binary, as a lab runs it; the origin and the clients run
//! in this process (hyper, one keep-alive connection per client, one request at a time), on the
//! other CPU than the router when there are two and taskset.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::Barrier;

use super::http::{
    find_program, free_ports, start_role, ticks_per_second, Pinning, Server, WorkDir, WRK_CPU,
};
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::{interrupt, sys, Error, Result};
use crate::probe::Summary;
use crate::roles::http::semantics::error;
use crate::roles::http::{spawn_http, Running};
use crate::roles::http::{Body, ServeOptions};
use crate::table::{num, Table};

/// Concurrent clients, each with its own keep-alive connection.
const CLIENTS: usize = 64;
/// Names of each size requested over and over in the hit rows.
const HIT_NAMES: usize = 256;
/// The origin's delay where one is wanted: a few hops and a CDN site's service time.
const ORIGIN_DELAY_MS: u64 = 10;
/// Room for both hit sets (256 × 101 KB) with plenty to spare.
const CS_CAPACITY: usize = 64_000_000;
const SMALL: usize = 1_000;
/// How long after a row's end its clients may take to finish their last requests.
const FINISH_GRACE: Duration = Duration::from_secs(30);
const LARGE: usize = 100_000;

pub fn run(options: &BenchOptions) -> Result<Report> {
    let seconds = if options.quick { 2 } else { 10 };
    let program = router_program()?;
    let work = WorkDir::create("icn")?;
    let pinning = Pinning::with(find_program("taskset"));
    let [router_port, origin_port] = free_ports()?;
    progress(format!("icn: starting {}", program.display()));
    let config = format!(
        "port = {router_port}\ncs_capacity = {CS_CAPACITY}\n\
         fib = [{{ prefix = \"/\", nexthop = \"http://127.0.0.1:{origin_port}\" }}]\n"
    );
    let bin_dir = program
        .parent()
        .ok_or_else(|| Error(format!("{} has no directory", program.display())))?;
    let router: Server = start_role(
        bin_dir,
        &work.path,
        &pinning,
        "icn-router",
        router_port,
        &config,
    )?;
    let load_cpu = match pinning {
        Pinning::Split { .. } => Some(WRK_CPU),
        Pinning::None(_) => None,
    };
    let duration = Duration::from_secs(seconds);
    // A thread of its own, so pinning it (and the runtime it starts) leaves the caller's alone.
    let rows = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("icn-bench-load".into())
            .spawn_scoped(scope, || {
                measure_all(&router, router_port, origin_port, load_cpu, duration)
            })
            .map_err(|e| Error(format!("starting the load thread: {e}")))?
            .join()
            .map_err(|_| Error("the load thread panicked".into()))?
    })?;
    drop(router);
    report(&rows, seconds, &pinning, &program)
}

/// The `icn-router` binary beside the running executable; a test binary runs from
/// `target/PROFILE/deps`, one below it.
fn router_program() -> Result<PathBuf> {
    let dir = sys::bin_dir()?;
    let candidates = [dir.join("icn-router"), dir.join("../icn-router")];
    candidates
        .iter()
        .find(|path| path.is_file())
        .map(|path| path.canonicalize().unwrap_or_else(|_| path.clone()))
        .ok_or_else(|| {
            Error(format!(
                "{} is missing: build the workspace (`cargo build --release`) so the role \
                 binaries sit beside cdnlab",
                candidates[0].display()
            ))
        })
}

/// One row's case.
#[derive(Debug, Clone, Copy)]
enum Case {
    /// Names warmed into the CS, then requested round-robin.
    Hits { size: usize },
    /// Rounds in which every client asks for the same new name at once.
    Bursts { size: usize },
    /// Every request a new name.
    Misses { size: usize, delay_ms: u64 },
}

impl Case {
    fn label(&self) -> String {
        match self {
            Case::Hits { .. } => "CS hits".into(),
            Case::Bursts { .. } => {
                format!("PIT aggregation, bursts of {CLIENTS}, origin {ORIGIN_DELAY_MS} ms")
            }
            Case::Misses { delay_ms, .. } => format!("all misses, origin {delay_ms} ms"),
        }
    }

    fn size(&self) -> usize {
        match *self {
            Case::Hits { size } | Case::Bursts { size } | Case::Misses { size, .. } => size,
        }
    }
}

const CASES: [Case; 5] = [
    Case::Hits { size: SMALL },
    Case::Hits { size: LARGE },
    Case::Bursts { size: SMALL },
    Case::Misses {
        size: SMALL,
        delay_ms: ORIGIN_DELAY_MS,
    },
    Case::Misses {
        size: SMALL,
        delay_ms: 0,
    },
];

/// What one row measured.
#[derive(Debug, Default)]
struct Tally {
    requests: u64,
    latencies_ms: Vec<f64>,
    /// Answers by `x-icn-cache`: hit, miss, aggregated.
    caches: [u64; 3],
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.requests += other.requests;
        self.latencies_ms.extend(other.latencies_ms);
        for (mine, theirs) in self.caches.iter_mut().zip(other.caches) {
            *mine += theirs;
        }
    }
}

struct Row {
    case: Case,
    tally: Tally,
    elapsed: Duration,
    upstream: u64,
    /// Bursts sent (the aggregation row).
    bursts: u64,
    /// The router process's CPU over the row, in cores.
    router_cores: Option<f64>,
}

/// Runs every case on a runtime of this (pinned) thread, with the origin.
fn measure_all(
    router_process: &Server,
    router_port: u16,
    origin_port: u16,
    load_cpu: Option<&'static str>,
    duration: Duration,
) -> Result<Vec<Row>> {
    if let Some(cpu) = load_cpu {
        pin_this_thread(cpu)?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error(format!("starting the load runtime: {e}")))?;
    runtime.block_on(async {
        let counted = Arc::new(AtomicU64::new(0));
        let origin = start_origin(origin_port, counted.clone()).await?;
        let router = SocketAddr::from(([127, 0, 0, 1], router_port));
        let mut rows = Vec::new();
        for case in CASES {
            interrupt::check()?;
            progress(format!(
                "icn: {} ({} bytes), {} s",
                case.label(),
                case.size(),
                duration.as_secs()
            ));
            let ticks = router_process.cpu_ticks();
            let mut row = measure(router, case, duration, &counted)
                .await
                .map_err(|e| Error(format!("{}: {e}", case.label())))?;
            // Includes the hit rows' warm-up, a small part of a row's requests.
            row.router_cores = match (ticks, router_process.cpu_ticks(), ticks_per_second()) {
                (Some(before), Some(after), Some(hz)) => {
                    Some(after.saturating_sub(before) as f64 / hz / row.elapsed.as_secs_f64())
                }
                _ => None,
            };
            rows.push(row);
        }
        origin.stop().await.map_err(Error)?;
        Ok(rows)
    })
}

/// Pins the calling thread (and the threads it starts later) to `cpu`.
fn pin_this_thread(cpu: &str) -> Result<()> {
    let cpu: usize = cpu
        .parse()
        .map_err(|_| Error(format!("CPU {cpu:?} is not a number")))?;
    // SAFETY: the set is a plain bit mask, zeroed then set within its size, and passed with
    // that size; pid 0 is the calling thread.
    let result = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if result != 0 {
        return Err(Error(format!(
            "pinning the load to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// The origin: `/{D}ms/{S}b/…` answers S bytes after D ms, counting every request.
async fn start_origin(port: u16, counted: Arc<AtomicU64>) -> Result<Running> {
    let payload = Bytes::from(vec![b'd'; LARGE]);
    let handler = move |request: Request<hyper::body::Incoming>| {
        let (payload, counted) = (payload.clone(), counted.clone());
        async move {
            counted.fetch_add(1, Ordering::Relaxed);
            let mut parts = request.uri().path().split('/').skip(1);
            let delay: Option<u64> = parts
                .next()
                .and_then(|d| d.strip_suffix("ms")?.parse().ok());
            let size: Option<usize> = parts.next().and_then(|s| s.strip_suffix('b')?.parse().ok());
            match (delay, size) {
                (Some(delay), Some(size)) if size <= payload.len() => {
                    if delay > 0 {
                        tokio::time::sleep(Duration::from_millis(delay)).await;
                    }
                    Response::new(Body::bytes(payload.slice(..size)))
                }
                _ => error(StatusCode::NOT_FOUND, "expected /{D}ms/{S}b/NAME"),
            }
        }
    };
    let options = ServeOptions {
        role: "icn-bench-origin",
        access_log: false,
    };
    spawn_http(
        SocketAddr::from(([127, 0, 0, 1], port)),
        handler,
        options,
        None,
    )
    .await
    .map_err(Error)
}

async fn measure(
    router: SocketAddr,
    case: Case,
    duration: Duration,
    counted: &AtomicU64,
) -> std::result::Result<Row, String> {
    let size = case.size();
    let hit_names: Arc<Vec<String>> = Arc::new(
        (0..HIT_NAMES)
            .map(|i| format!("/0ms/{size}b/hit-{i}"))
            .collect(),
    );
    if let Case::Hits { .. } = case {
        let mut client = connect(router).await?;
        for name in hit_names.iter() {
            get(&mut client, name, size).await?;
        }
    }
    let upstream_before = counted.load(Ordering::Relaxed);
    let barrier = Arc::new(Barrier::new(CLIENTS));
    let stop = Arc::new(AtomicBool::new(false));
    let bursts = Arc::new(AtomicU64::new(0));
    let failure = Arc::new(Mutex::new(None::<String>));
    let start = Instant::now();
    let deadline = start + duration;
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let mut client = connect(router).await?;
        let (hit_names, barrier, stop, bursts, failure) = (
            hit_names.clone(),
            barrier.clone(),
            stop.clone(),
            bursts.clone(),
            failure.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            for k in 0.. {
                let name = match case {
                    Case::Hits { .. } => {
                        if Instant::now() >= deadline {
                            break;
                        }
                        hit_names[(c * 7 + k) % hit_names.len()].clone()
                    }
                    Case::Bursts { .. } => {
                        // All start a round together; the leader decides whether there is one.
                        if barrier.wait().await.is_leader() {
                            stop.store(Instant::now() >= deadline, Ordering::Relaxed);
                            bursts.fetch_add(1, Ordering::Relaxed);
                        }
                        barrier.wait().await;
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let round = bursts.load(Ordering::Relaxed);
                        format!("/{ORIGIN_DELAY_MS}ms/{size}b/burst-{round}")
                    }
                    Case::Misses { delay_ms, .. } => {
                        if Instant::now() >= deadline {
                            break;
                        }
                        format!("/{delay_ms}ms/{size}b/miss{delay_ms}-{c}-{k}")
                    }
                };
                let sent = Instant::now();
                let cache = get(&mut client, &name, size).await.inspect_err(|e| {
                    let mut first = failure.lock().unwrap_or_else(|p| p.into_inner());
                    first.get_or_insert_with(|| e.clone());
                })?;
                tally.latencies_ms.push(sent.elapsed().as_secs_f64() * 1e3);
                tally.requests += 1;
                tally.caches[cache] += 1;
            }
            Ok::<Tally, String>(tally)
        }));
    }
    // A failed client leaves the others of a burst waiting at the barrier: its error is
    // reported once the rest have had time to finish.
    let all = async {
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await);
        }
        results
    };
    let Ok(results) = tokio::time::timeout(duration + FINISH_GRACE, all).await else {
        let first = failure.lock().unwrap_or_else(|p| p.into_inner()).take();
        return Err(first.unwrap_or_else(|| {
            format!(
                "the clients did not finish within {} s of the end",
                FINISH_GRACE.as_secs()
            )
        }));
    };
    let mut tally = Tally::default();
    for result in results {
        tally.merge(result.map_err(|e| format!("a client task failed: {e}"))??);
    }
    let elapsed = start.elapsed();
    Ok(Row {
        case,
        tally,
        elapsed,
        upstream: counted.load(Ordering::Relaxed) - upstream_before,
        // The last round only decided to stop.
        bursts: bursts.load(Ordering::Relaxed).saturating_sub(1),
        router_cores: None,
    })
}

async fn connect(router: SocketAddr) -> std::result::Result<SendRequest<Empty<Bytes>>, String> {
    let stream = TcpStream::connect(router)
        .await
        .map_err(|e| format!("connecting to the router at {router}: {e}"))?;
    stream
        .set_nodelay(true)
        .map_err(|e| format!("TCP_NODELAY: {e}"))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP/1.1 handshake with the router: {e}"))?;
    // Ends when the sender is dropped.
    tokio::spawn(connection);
    Ok(sender)
}

/// GET `name`, checked to be a 200 of `size` bytes; the index of its `x-icn-cache` in
/// `Tally::caches`.
async fn get(
    client: &mut SendRequest<Empty<Bytes>>,
    name: &str,
    size: usize,
) -> std::result::Result<usize, String> {
    let failed = |e: &dyn std::fmt::Display| format!("GET {name}: {e}");
    client.ready().await.map_err(|e| failed(&e))?;
    let request = Request::get(name)
        .header(hyper::header::HOST, "127.0.0.1")
        .body(Empty::new())
        .map_err(|e| failed(&e))?;
    let response = client.send_request(request).await.map_err(|e| failed(&e))?;
    let status = response.status();
    let cache = match response.headers().get("x-icn-cache").map(|v| v.as_bytes()) {
        Some(b"hit") => 0,
        Some(b"miss") => 1,
        Some(b"aggregated") => 2,
        other => return Err(failed(&format_args!("x-icn-cache {other:?}"))),
    };
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| failed(&e))?
        .to_bytes();
    if status != StatusCode::OK || body.len() != size {
        return Err(failed(&format_args!(
            "expected 200 with {size} bytes, got {status} with {}: {}",
            body.len(),
            String::from_utf8_lossy(&body[..body.len().min(200)])
        )));
    }
    Ok(cache)
}

fn report(
    rows: &[Row],
    seconds: u64,
    pinning: &Pinning,
    program: &std::path::Path,
) -> Result<Report> {
    let mut table = Table::new(&[
        "case",
        "object",
        "requests/s",
        "p50 (ms)",
        "p99 (ms)",
        "upstream requests per request",
        "hit / miss / aggregated (%)",
        "router CPU (cores)",
    ]);
    let mut problems = Vec::new();
    for row in rows {
        let tally = &row.tally;
        let summary = Summary::of(&tally.latencies_ms);
        let per_request = row.upstream as f64 / tally.requests as f64;
        let share = |i: usize| {
            num(
                Some(tally.caches[i] as f64 * 100.0 / tally.requests as f64),
                1,
            )
        };
        table.push(vec![
            row.case.label(),
            format!("{} KB", row.case.size() / 1000),
            num(Some(tally.requests as f64 / row.elapsed.as_secs_f64()), 0),
            num(summary.map(|s| s.p50), 2),
            num(summary.map(|s| s.p99), 2),
            format!("{per_request:.4}"),
            format!("{} / {} / {}", share(0), share(1), share(2)),
            num(row.router_cores, 2),
        ]);
        match row.case {
            Case::Hits { .. } if row.upstream > 0 => problems.push(format!(
                "{} upstream requests while every name was cached",
                row.upstream
            )),
            Case::Bursts { .. } if row.upstream != row.bursts => problems.push(format!(
                "{} upstream requests for {} bursts",
                row.upstream, row.bursts
            )),
            _ => {}
        }
    }
    let bursts = rows
        .iter()
        .find(|r| matches!(r.case, Case::Bursts { .. }))
        .map_or(0, |r| r.bursts);
    Ok(Report {
        name: "icn",
        title: "ICN router: Content Store and PIT throughput".into(),
        setup: vec![
            format!(
                "Loopback, HTTP/1.1 keep-alive: {CLIENTS} clients in the bench's process \
                 (hyper, one connection each, one request at a time) for {seconds} s per row \
                 against `{}` (cs_capacity {CS_CAPACITY} bytes, one FIB route `/` to the \
                 origin).",
                program.display()
            ),
            "Origin: in the bench's process; `/{D}ms/{S}b/NAME` answers S bytes after D ms.".into(),
            format!(
                "CS hits: {HIT_NAMES} names of each size fetched once, then requested \
                 round-robin. PIT aggregation: in each round all {CLIENTS} clients ask for one \
                 new name at once ({bursts} rounds). All misses: every request a new name (the \
                 CS evicts as it fills)."
            ),
            "Router CPU: its utime + stime over the row from /proc/PID/stat; near 1 core \
             pinned means the router was the bottleneck, well below it that the clients (or the \
             origin's delay) were."
                .into(),
            match pinning {
                Pinning::Split { .. } => format!(
                    "The router (2 tokio workers) pinned to one CPU with taskset; clients and \
                     origin (one thread) to CPU {WRK_CPU}."
                ),
                Pinning::None(why) => {
                    format!("Not pinned ({why}): router, clients and origin share the CPUs.")
                }
            },
        ],
        table,
        target: "CS hits cost no upstream request; each burst of concurrent requests for one \
                 name costs exactly one."
            .into(),
        verdict: if problems.is_empty() {
            Verdict::Met(format!(
                "no upstream request for hits; {bursts} bursts of {CLIENTS}, {bursts} upstream \
                 requests"
            ))
        } else {
            Verdict::Missed(problems.join("; "))
        },
    })
}

#[cfg(test)]
mod tests {
    /// The measurement itself, run by hand after `cargo build --release`:
    /// `cargo test --release --lib bench::icn -- --ignored --nocapture`.
    #[test]
    #[ignore = "a benchmark: tens of seconds of load, needs the icn-router binary"]
    fn measure() {
        let options = super::BenchOptions {
            quick: std::env::var_os("CDNLAB_BENCH_QUICK").is_some(),
            link_backend: crate::lab::BackendChoice::Auto,
        };
        let report = super::run(&options).expect("the benchmark runs");
        println!("{}", report.render());
    }
}
