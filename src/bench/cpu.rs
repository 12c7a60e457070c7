//! `bench cpu`: what the userspace shaper costs — its CPU time (from /proc) while one TCP flow
//! crosses an emulated link, in cores per 100 Mbit/s forwarded.

use super::rate::{core_link, flow, limit_for};
use super::table::{num, Table};
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::links::choose_backend;
use crate::lab::{interrupt, Backend, Error, Result};
use std::time::{Duration, Instant};

const LAB: &str = "bench-cpu";

/// Configured rates, Mbit/s; `None` is no rate limit (delay only).
const RATES_MBIT: [Option<u64>; 3] = [Some(100), Some(500), None];

/// Queue limit without a rate: room for the packets held for the delay at several Gbit/s, so
/// the limit is not what caps the flow.
const UNLIMITED_LIMIT: u32 = 10_000;

/// The target: shaper cores per 100 Mbit/s of goodput.
const TARGET_CORES_PER_100: f64 = 0.25;

/// Margins between the flow's measured window and the CPU sampling window, so the sampled
/// interval lies inside the flow's steady state.
const SAMPLE_START_AFTER_WARMUP: Duration = Duration::from_secs(1);
const SAMPLE_END_BEFORE_FINISH: Duration = Duration::from_millis(500);

/// utime + stime of a process (all its threads), in clock ticks, from /proc/PID/stat's text.
pub fn cpu_ticks(stat: &str) -> Option<u64> {
    // The command name (field 2) may hold spaces and parentheses; it ends at the last ')'.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

fn read_ticks(pid: i32) -> Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let text =
        std::fs::read_to_string(&path).map_err(|e| Error(format!("the shaper's {path}: {e}")))?;
    cpu_ticks(&text).ok_or_else(|| Error(format!("{path}: no utime/stime fields in `{text}`")))
}

fn ticks_per_second() -> Result<f64> {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        Ok(hz as f64)
    } else {
        Err(Error("sysconf(_SC_CLK_TCK) failed".into()))
    }
}

/// The shaper's CPU, in cores, over the flow's steady state (the flow started just now).
fn sample_shaper(pid: i32, warmup: Duration, seconds: Duration) -> Result<f64> {
    let hz = ticks_per_second()?;
    std::thread::sleep(warmup + SAMPLE_START_AFTER_WARMUP);
    interrupt::check()?;
    let (start, ticks_start) = (Instant::now(), read_ticks(pid)?);
    std::thread::sleep(
        seconds.saturating_sub(SAMPLE_START_AFTER_WARMUP + SAMPLE_END_BEFORE_FINISH),
    );
    let ticks_end = read_ticks(pid)?;
    let elapsed = start.elapsed().as_secs_f64();
    interrupt::check()?;
    Ok((ticks_end.saturating_sub(ticks_start)) as f64 / hz / elapsed)
}

struct Point {
    rate_mbit: Option<u64>,
    goodput_mbps: f64,
    cores: f64,
}

impl Point {
    fn per_100(&self) -> f64 {
        if self.goodput_mbps > 0.0 {
            self.cores / (self.goodput_mbps / 100.0)
        } else {
            f64::INFINITY
        }
    }
}

pub fn run(options: &BenchOptions) -> Result<Report> {
    let title = "CPU of the userspace shaper".to_string();
    let target = format!("≤ {TARGET_CORES_PER_100} cores per 100 Mbit/s forwarded.");
    if choose_backend(&options.link_backend)? == Backend::Kernel {
        return Ok(Report {
            name: "cpu",
            title,
            setup: vec!["The kernel backend runs no shaper daemon.".into()],
            table: Table::new(&["rate"]),
            target,
            verdict: Verdict::NotApplicable(
                "links are emulated by tc-netem in the kernel; rerun with --link-backend \
                 userspace to measure the shaper"
                    .into(),
            ),
        });
    }
    let (seconds, warmup) = if options.quick {
        (3.0, 1.0)
    } else {
        (10.0, 2.0)
    };
    let mut points = Vec::new();
    for rate_mbit in RATES_MBIT {
        let rate_bps = rate_mbit.map(|r| r * 1_000_000);
        let limit = rate_bps.map_or(UNLIMITED_LIMIT, limit_for);
        progress(format!(
            "cpu: {}, {seconds} s",
            rate_mbit.map_or("no rate limit".to_string(), |r| format!("{r} Mbit/s"))
        ));
        let (result, cores) = flow(
            LAB,
            &core_link(rate_bps, limit),
            seconds,
            warmup,
            options,
            |lab| {
                let shaper = lab.state().shaper.as_ref().ok_or_else(|| {
                    Error("the lab runs no shaper (not the userspace backend?)".into())
                })?;
                sample_shaper(
                    shaper.pid,
                    Duration::from_secs_f64(warmup),
                    Duration::from_secs_f64(seconds),
                )
            },
        )?;
        points.push(Point {
            rate_mbit,
            goodput_mbps: result.goodput.goodput_mbps,
            cores,
        });
    }
    let mut table = Table::new(&[
        "rate",
        "goodput (Mbit/s)",
        "shaper CPU (cores)",
        "cores per 100 Mbit/s",
    ]);
    for p in &points {
        table.push(vec![
            p.rate_mbit
                .map_or("unlimited (delay only)".to_string(), |r| {
                    format!("{r} Mbit/s")
                }),
            num(Some(p.goodput_mbps), 1),
            num(Some(p.cores), 3),
            num(Some(p.per_100()), 3),
        ]);
    }
    let misses: Vec<String> = points
        .iter()
        .filter(|p| p.per_100() > TARGET_CORES_PER_100)
        .map(|p| {
            format!(
                "{}: {:.3} cores per 100 Mbit/s ({:.3} cores at {:.1} Mbit/s)",
                p.rate_mbit
                    .map_or("unlimited".to_string(), |r| format!("{r} Mbit/s")),
                p.per_100(),
                p.cores,
                p.goodput_mbps
            )
        })
        .collect();
    let worst = points.iter().map(Point::per_100).fold(0.0, f64::max);
    Ok(Report {
        name: "cpu",
        title,
        setup: vec![
            "Path client — router — server; the router—server link has 20 ms of delay each way \
             and the rate (queue limit as in `rate`; 10000 packets without a rate). Both \
             directions of that link pass through the shaper: data one way, ACKs the other."
                .into(),
            format!(
                "One `probe goodput` download, {warmup} s warmup then {seconds} s measured; the \
                 shaper's utime + stime (/proc/PID/stat, all threads) is sampled from 1 s after \
                 the warmup until 0.5 s before the end."
            ),
        ],
        table,
        target,
        verdict: if misses.is_empty() {
            Verdict::Met(format!("at most {worst:.3} cores per 100 Mbit/s"))
        } else {
            Verdict::Missed(misses.join("; "))
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_utime_plus_stime() {
        // A real line's shape: utime 1234 and stime 56 are fields 14 and 15; the name holds a
        // space and a parenthesis.
        let stat = "4242 (cdnlab shaper)) S 1 4242 4242 0 -1 4194560 500 0 0 0 1234 56 0 0 20 0 \
                    3 0 987654 12345678 600 18446744073709551615";
        assert_eq!(cpu_ticks(stat), Some(1290));
        assert_eq!(cpu_ticks("4242 (x) S 1 2"), None);
        assert_eq!(cpu_ticks("garbage"), None);
    }
}
