//! The benchmark's report: one row per case, how it was measured, and the verdict.

use super::nginx::FAST_STATIC_SETUP;
use super::objects::{size_label, OBJECTS};
use super::own_netns::CONGESTION_CONTROLS;
use super::pinning::Pinning;
use super::tools::Tools;
use super::wrk::{Load, Spread, WRK_CONNECTIONS, WRK_THREADS};
use crate::bench::{Report, Verdict};
use crate::table::{num, Table};

/// The target: at least nginx's rate in every row.
const TARGET_RATIO: f64 = 1.0;

/// How busy a server's core must be for it, not wrk, to have set the rate.
const SATURATED: f64 = 0.9;

/// How long each wrk run lasts and how many rounds alternate between the servers.
#[derive(Clone, Copy)]
pub(super) struct Effort {
    pub(super) seconds: u32,
    pub(super) rounds: u32,
}

/// One case measured: the medians of its rounds and their spread.
pub(super) struct Row {
    /// The TCP congestion control of the row's namespace.
    pub(super) congestion: &'static str,
    pub(super) label: String,
    /// The cdnlab server's name.
    pub(super) ours_name: &'static str,
    pub(super) nginx: Load,
    pub(super) ours: Load,
    /// Requests per second over the rounds, lowest and highest.
    pub(super) nginx_spread: Option<Spread>,
    pub(super) ours_spread: Option<Spread>,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.ours.requests_per_s / self.nginx.requests_per_s
    }
}

/// A ratio to two decimals, or as many more (up to six) as it takes for a miss not to round
/// up to the target: 0.999 is not shown as a "1.00" that missed.
fn ratio_text(ratio: f64) -> String {
    (2..=6)
        .map(|decimals| format!("{ratio:.decimals$}"))
        .find(|text| {
            ratio >= TARGET_RATIO
                || text
                    .parse::<f64>()
                    .map_or(true, |shown| shown < TARGET_RATIO)
        })
        .unwrap_or_else(|| format!("{ratio:.6}"))
}

/// The report of `rows`; `unavailable` names the congestion controls this kernel lacks.
pub(super) fn report(
    rows: &[Row],
    effort: &Effort,
    pinning: &Pinning,
    tools: &Tools,
    unavailable: &[String],
) -> Report {
    Report {
        name: "http",
        title: "HTTP serving vs nginx".into(),
        setup: setup(effort, pinning, tools, unavailable),
        table: table(rows),
        target: format!("≥ {TARGET_RATIO:.1} × nginx's requests per second in every row."),
        verdict: verdict(rows),
    }
}

fn table(rows: &[Row]) -> Table {
    let mut table = Table::new(&[
        "TCP",
        "object",
        "nginx req/s",
        "cdnlab req/s",
        "ratio",
        "nginx CPU (cores)",
        "cdnlab CPU (cores)",
        "CPU per request, nginx / cdnlab (µs)",
        "server CPU busy, nginx / cdnlab (%)",
        "cdnlab server",
    ]);
    for row in rows {
        let (theirs, ours) = (&row.nginx, &row.ours);
        table.push(vec![
            row.congestion.to_string(),
            row.label.clone(),
            format!(
                "{:.0}{}",
                theirs.requests_per_s,
                Spread::text(row.nginx_spread)
            ),
            format!(
                "{:.0}{}",
                ours.requests_per_s,
                Spread::text(row.ours_spread)
            ),
            ratio_text(row.ratio()),
            num(theirs.server_cores, 2),
            num(ours.server_cores, 2),
            format!(
                "{} / {}",
                num(theirs.cpu_per_request_us, 1),
                num(ours.cpu_per_request_us, 1)
            ),
            format!(
                "{} / {}",
                num(theirs.cpu_busy.map(|b| b * 100.0), 0),
                num(ours.cpu_busy.map(|b| b * 100.0), 0)
            ),
            row.ours_name.to_string(),
        ]);
    }
    table
}

/// Met when every row's ratio reaches the target (a NaN ratio, no requests, misses it).
fn verdict(rows: &[Row]) -> Verdict {
    let below: Vec<String> = rows
        .iter()
        .filter(|row| row.ratio().is_nan() || row.ratio() < TARGET_RATIO)
        .map(|row| {
            format!(
                "{}, {}: {}{}",
                row.congestion,
                row.label,
                ratio_text(row.ratio()),
                miss_reading(row)
            )
        })
        .collect();
    let (low, high) = rows
        .iter()
        .map(Row::ratio)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
            (lo.min(r), hi.max(r))
        });
    if below.is_empty() {
        Verdict::Met(format!("ratios {low:.2}–{high:.2}"))
    } else {
        Verdict::Missed(format!(
            "ratios {}–{high:.2}; below {TARGET_RATIO:.1}: {}",
            ratio_text(low),
            below.join("; ")
        ))
    }
}

/// What a missed row's own numbers say of the miss, in parentheses: whether the rounds tell
/// the servers apart, whether either server's core was busy enough to have set the rate, and
/// the servers' CPU per request, which compares them where their cores did not.
fn miss_reading(row: &Row) -> String {
    let mut said = Vec::new();
    said.push(match (row.nginx_spread, row.ours_spread) {
        // A miss means our median lies below nginx's, so only this side can part them.
        (Some(theirs), Some(ours)) if ours.high >= theirs.low => "the rounds overlap".into(),
        (Some(_), Some(_)) => "every round of ours below every round of nginx's".into(),
        _ => "one round each".to_string(),
    });
    if let (Some(theirs), Some(ours)) = (row.nginx.cpu_busy, row.ours.cpu_busy) {
        let limit = if theirs.max(ours) < SATURATED {
            "neither the limit"
        } else {
            "a core was the limit"
        };
        said.push(format!(
            "server's core busy: nginx {:.0}%, ours {:.0}%, {limit}",
            theirs * 100.0,
            ours * 100.0
        ));
    }
    if let (Some(theirs), Some(ours)) = (row.nginx.cpu_per_request_us, row.ours.cpu_per_request_us)
    {
        if theirs > 0.0 {
            said.push(format!("CPU per request {:.2} × nginx's", ours / theirs));
        }
    }
    format!(" ({})", said.join("; "))
}

fn setup(effort: &Effort, pinning: &Pinning, tools: &Tools, unavailable: &[String]) -> Vec<String> {
    let Effort { seconds, rounds } = effort;
    let mut lines = vec![
        format!(
            "Loopback, HTTP/1.1 keep-alive: `wrk -t{WRK_THREADS} -c{WRK_CONNECTIONS} -d{seconds}s` \
             against each server in turn, {rounds} round(s) alternating between them; \
             medians, with the rounds' range of requests per second in parentheses; one \
             URL per row (the same segment path on both)."
        ),
        format!(
            "Objects: segment 0 of a 2 s video at {}. nginx serves them as static files ({FAST_STATIC_SETUP}); `ucs` serves \
             synthetic payloads generated once and kept in a read-only file of large folios on a tmpfs of its own (from Linux 6.14 as large as fit within the chunk; before, 2 MiB ones for chunks above 1 MiB and a sealed memfd for the rest), or (media_dir rows) the same files, kept so once read; it sends them by sendfile, but bodies above 512 KiB by copy on connections BBR paces.",
            objects_described()
        ),
        "302 row: nginx `return 302 http://127.0.0.1:PORT$request_uri;` against `urr` with \
         `offload = \"none\"` and one upstream uCS; both send the same Location (nginx adds \
         its small HTML body, ours has none)."
            .into(),
        format!("CPU budget: one worker each (nginx worker_processes 1; our roles' tokio runtime with TOKIO_WORKER_THREADS=1, on tokio's current-thread scheduler). {}", pinning.describe()),
        "CPU columns: the server's utime + stime (all its processes and threads) over the run, \
         from /proc/PID/stat; and how busy the server's CPU was (/proc/stat, all but idle \
         and iowait), which also counts the loopback's packet processing in softirq that no \
         process is charged for (and anything else the machine ran there): near 100% means \
         the server's core, not wrk, was the bottleneck. Where it was not, the requests per \
         second are wrk's as much as the server's, and the CPU per request (the server's \
         cores over its requests per second, of each run; the median of the runs) tells the \
         servers' costs apart."
            .into(),
        format!(
            "A missed row's verdict reads its own numbers: whether the rounds overlap, whether \
             either server's core was at least {:.0}% busy (the limit), and our CPU per request \
             over nginx's.",
            SATURATED * 100.0
        ),
        format!(
            "TCP column: every row runs under {}, each in a network namespace of its own \
             (loopback only, `cdnlab-bench-http.NAME`) whose default congestion control the \
             bench sets, so the machine's own default ({}) does not enter; one the machine \
             does not allow namespaces to choose is added to net.ipv4.tcp_allowed_congestion_control \
             for the run and the list restored after. The choice changes these numbers: BBR paces \
             loopback flows, and slows `sendfile` senders most.",
            CONGESTION_CONTROLS.join(" and "),
            machine_congestion_control()
        ),
        format!("{} and wrk from the machine's packages.", tools.nginx_version),
    ];
    if !unavailable.is_empty() {
        lines.push(format!(
            "Not measured, this kernel lacks the congestion control: {}.",
            unavailable.join("; ")
        ));
    }
    lines
}

/// The congestion control new TCP connections get in the machine's own namespace.
fn machine_congestion_control() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .map_or_else(|_| "unknown".into(), |name| name.trim().to_string())
}

/// `400kbit (100 KB), 2mbit (500 KB) and 8mbit (2 MB)`: each object's bitrate and size.
fn objects_described() -> String {
    let each: Vec<String> = OBJECTS
        .iter()
        .map(|(_, bitrate, bytes)| format!("{bitrate} ({})", size_label(*bytes)))
        .collect();
    match each.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_miss_is_never_shown_as_the_target() {
        use super::ratio_text;
        assert_eq!(ratio_text(0.9991), "0.999");
        assert_eq!(ratio_text(0.99996), "0.99996");
        assert_eq!(ratio_text(0.994), "0.99");
        assert_eq!(ratio_text(1.0), "1.00");
        assert_eq!(ratio_text(1.004), "1.00");
        assert_eq!(ratio_text(f64::NAN), "NaN");
    }

    fn row(nginx: (f64, f64, f64, f64), ours: (f64, f64, f64, f64)) -> super::Row {
        use super::{Load, Spread};
        // (median requests/s, lowest, highest, server's core busy); CPU per request grows
        // with how busy the core was (20 µs at 70%), so a swapped ratio shows.
        let load = |(rate, _, _, busy): (f64, f64, f64, f64)| Load {
            requests_per_s: rate,
            server_cores: Some(rate * busy * 20e-6 / 0.7),
            cpu_busy: Some(busy),
            cpu_per_request_us: Some(busy * 20.0 / 0.7),
        };
        let spread = |(_, low, high, _): (f64, f64, f64, f64)| Some(Spread { low, high });
        super::Row {
            congestion: "cubic",
            label: "100 KB segment, synthetic".into(),
            ours_name: "ucs",
            nginx: load(nginx),
            ours: load(ours),
            nginx_spread: spread(nginx),
            ours_spread: spread(ours),
        }
    }

    #[test]
    fn a_missed_row_says_what_its_numbers_make_of_the_miss() {
        use super::{verdict, Verdict};
        // Neither core saturated and the rounds overlap: a miss the rounds cannot tell.
        let wrk_bound = row(
            (31848.0, 28322.0, 31956.0, 0.70),
            (30785.0, 30520.0, 32062.0, 0.77),
        );
        // Our core saturated and every round of ours below every round of nginx's.
        let slower = row((1000.0, 990.0, 1010.0, 0.70), (900.0, 890.0, 910.0, 0.98));
        // One round each: no spread to compare.
        let mut single = row((1000.0, 0.0, 0.0, 0.70), (990.0, 0.0, 0.0, 0.70));
        (single.nginx_spread, single.ours_spread) = (None, None);
        let Verdict::Missed(said) = verdict(&[wrk_bound, slower, single]) else {
            panic!("three rows below the target met it");
        };
        assert_eq!(
            said,
            "ratios 0.90–0.99; below 1.0: \
             cubic, 100 KB segment, synthetic: 0.97 (the rounds overlap; server's core busy: \
             nginx 70%, ours 77%, neither the limit; CPU per request 1.10 × nginx's); \
             cubic, 100 KB segment, synthetic: 0.90 (every round of ours below every round of \
             nginx's; server's core busy: nginx 70%, ours 98%, a core was the limit; CPU per \
             request 1.40 × nginx's); \
             cubic, 100 KB segment, synthetic: 0.99 (one round each; server's core busy: \
             nginx 70%, ours 70%, neither the limit; CPU per request 1.00 × nginx's)"
        );
    }

    #[test]
    fn the_objects_are_named_with_bitrate_and_size() {
        assert_eq!(
            super::objects_described(),
            "400kbit (100 KB), 2mbit (500 KB) and 8mbit (2 MB)"
        );
    }
}
