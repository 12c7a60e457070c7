//! The load: wrk against one server for a while, with what the server spent in CPU meanwhile.

use std::process::Stdio;
use std::time::Instant;

use super::cpu_usage::{busy_fraction, cpu_times, ticks_per_second};
use super::pinning::{Pinning, WRK_CPU};
use super::server::Server;
use super::tools::Tools;
use crate::bench::stats::median;
use crate::lab::{Error, Result};

/// wrk's threads and open connections.
pub(super) const WRK_THREADS: u32 = 2;
pub(super) const WRK_CONNECTIONS: u32 = 50;

/// What one wrk run measured.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Load {
    pub(super) requests_per_s: f64,
    /// The server's CPU over the run, in cores.
    pub(super) server_cores: Option<f64>,
    /// The fraction of the server's pinned CPU that was busy (`None` unpinned).
    pub(super) cpu_busy: Option<f64>,
    /// The server's CPU time per request served, in µs (none without requests), of the same
    /// run: a median over runs is then one run's, not one run's CPU over another's rate.
    pub(super) cpu_per_request_us: Option<f64>,
}

/// wrk against `server`'s `port` for `seconds`, with the server's CPU over the run.
pub(super) fn load(
    tools: &Tools,
    pinning: &Pinning,
    server: &Server,
    port: u16,
    path: &str,
    seconds: u32,
) -> Result<Load> {
    let url = format!("http://127.0.0.1:{port}{path}");
    let mut command = pinning.command(WRK_CPU, &tools.wrk);
    command
        .args([
            format!("-t{WRK_THREADS}"),
            format!("-c{WRK_CONNECTIONS}"),
            format!("-d{seconds}s"),
            "--timeout".into(),
            "5s".into(),
            url.clone(),
        ])
        .stdin(Stdio::null());
    let server_cpu = pinning.server_cpu();
    let cpu_before = server_cpu.and_then(cpu_times);
    let ticks_before = server.cpu_ticks();
    let start = Instant::now();
    let output = command
        .output()
        .map_err(|e| Error(format!("running {}: {e}", tools.wrk.display())))?;
    let elapsed = start.elapsed().as_secs_f64();
    let ticks_after = server.cpu_ticks();
    let cpu_after = server_cpu.and_then(cpu_times);
    let report = read_report(&url, &output)?;
    let server_cores = match (ticks_before, ticks_after, ticks_per_second()) {
        (Some(before), Some(after), Some(hz)) if elapsed > 0.0 => {
            Some(after.saturating_sub(before) as f64 / hz / elapsed)
        }
        _ => None,
    };
    Ok(Load {
        requests_per_s: report.requests_per_s,
        server_cores,
        cpu_busy: busy_fraction(cpu_before, cpu_after),
        cpu_per_request_us: cpu_per_request_us(server_cores, report.requests_per_s),
    })
}

/// wrk's summary of a run on `url`; an error if wrk failed or any request did.
fn read_report(url: &str, output: &std::process::Output) -> Result<WrkReport> {
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(Error(format!(
            "wrk {url} failed ({}): {}{}",
            output.status,
            text.trim_end(),
            String::from_utf8_lossy(&output.stderr).trim_end()
        )));
    }
    let report = parse_wrk(&text)
        .ok_or_else(|| Error(format!("wrk {url}: no Requests/sec in its output:\n{text}")))?;
    if report.errors > 0 {
        return Err(Error(format!(
            "wrk {url}: {} failed requests ({} answered with another status than 2xx/3xx):\n{text}",
            report.errors, report.bad_status
        )));
    }
    Ok(report)
}

/// The spread of requests per second over `runs` (`None` for fewer than two).
pub(super) fn spread(runs: &[Load]) -> Option<Spread> {
    if runs.len() < 2 {
        return None;
    }
    let rates = runs.iter().map(|l| l.requests_per_s);
    Some(Spread {
        low: rates.clone().fold(f64::INFINITY, f64::min),
        high: rates.fold(f64::NEG_INFINITY, f64::max),
    })
}

/// The lowest and highest requests per second of a case's runs on one server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Spread {
    pub(super) low: f64,
    pub(super) high: f64,
}

impl Spread {
    /// ` (LOW–HIGH)`, or nothing for a single run.
    pub(super) fn text(spread: Option<Spread>) -> String {
        spread.map_or_else(String::new, |s| format!(" ({:.0}–{:.0})", s.low, s.high))
    }
}

impl Load {
    /// Each column's median over runs (`NaN` requests when there were none).
    pub(super) fn median(runs: &[Load]) -> Load {
        let column = |f: fn(&Load) -> Option<f64>| {
            let values: Vec<f64> = runs.iter().filter_map(f).collect();
            median(&values)
        };
        Load {
            requests_per_s: column(|l| Some(l.requests_per_s)).unwrap_or(f64::NAN),
            server_cores: column(|l| l.server_cores),
            cpu_busy: column(|l| l.cpu_busy),
            cpu_per_request_us: column(|l| l.cpu_per_request_us),
        }
    }
}

/// CPU time per request in µs from a run's `cores` and `requests_per_s` (none without
/// requests).
fn cpu_per_request_us(cores: Option<f64>, requests_per_s: f64) -> Option<f64> {
    cores
        .filter(|_| requests_per_s > 0.0)
        .map(|cores| cores / requests_per_s * 1e6)
}

/// The numbers read from wrk's summary.
#[derive(Debug, Clone, PartialEq)]
struct WrkReport {
    requests_per_s: f64,
    /// Socket errors (connect, read, write, timeout) plus answers outside 2xx/3xx.
    errors: u64,
    bad_status: u64,
}

fn parse_wrk(text: &str) -> Option<WrkReport> {
    let mut requests_per_s = None;
    let mut errors = 0;
    let mut bad_status = 0;
    for line in text.lines().map(str::trim) {
        if let Some(value) = line.strip_prefix("Requests/sec:") {
            requests_per_s = value.trim().parse().ok();
        } else if let Some(value) = line.strip_prefix("Non-2xx or 3xx responses:") {
            bad_status = value.trim().parse().ok()?;
            errors += bad_status;
        } else if let Some(counts) = line.strip_prefix("Socket errors:") {
            // `connect 0, read 2, write 0, timeout 0`
            for item in counts.split(',') {
                errors += item.split_whitespace().nth(1)?.parse::<u64>().ok()?;
            }
        }
    }
    Some(WrkReport {
        requests_per_s: requests_per_s?,
        errors,
        bad_status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRK_OUTPUT: &str = "Running 10s test @ http://127.0.0.1:8080/video/100k/seg-00000.ts
  2 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.10ms    1.20ms  30.00ms   90.00%
    Req/Sec     8.10k   500.00     9.00k    70.00%
  161234 requests in 10.00s, 15.05GB read
  Socket errors: connect 0, read 2, write 1, timeout 0
  Non-2xx or 3xx responses: 3
Requests/sec:  16123.40
Transfer/sec:      1.50GB
";

    #[test]
    fn wrk_summary_is_read_with_its_errors() {
        assert_eq!(
            parse_wrk(WRK_OUTPUT),
            Some(WrkReport {
                requests_per_s: 16123.40,
                errors: 6,
                bad_status: 3,
            })
        );
        let clean = "  10 requests in 1.00s, 1MB read\nRequests/sec:     10.00\n";
        assert_eq!(
            parse_wrk(clean),
            Some(WrkReport {
                requests_per_s: 10.0,
                errors: 0,
                bad_status: 0,
            })
        );
        assert_eq!(parse_wrk("wrk: connection refused\n"), None);
    }

    #[test]
    fn medians_per_column() {
        let run = |r, cores, busy, per| Load {
            requests_per_s: r,
            server_cores: cores,
            cpu_busy: busy,
            cpu_per_request_us: per,
        };
        let runs = [
            run(10.0, Some(0.5), None, Some(50_000.0)),
            run(30.0, Some(0.9), None, Some(30_000.0)),
            run(20.0, None, None, None),
        ];
        assert_eq!(
            Load::median(&runs),
            run(20.0, Some(0.7), None, Some(40_000.0)),
            "each column's own median, CPU per request of the runs themselves"
        );
        assert!(Load::median(&[]).requests_per_s.is_nan());
        assert_eq!(Spread::text(spread(&runs)), " (10–30)");
        assert_eq!(Spread::text(spread(&runs[..1])), "");
    }

    #[test]
    fn cpu_per_request_is_cores_over_the_rate() {
        assert_eq!(cpu_per_request_us(Some(0.5), 20_000.0), Some(25.0));
        assert_eq!(cpu_per_request_us(None, 20_000.0), None);
        assert_eq!(cpu_per_request_us(Some(0.5), 0.0), None);
        assert_eq!(cpu_per_request_us(Some(0.5), f64::NAN), None);
    }
}
