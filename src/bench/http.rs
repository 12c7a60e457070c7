//! `bench http`: our content server (`ucs`) and request router (`urr`) against nginx, on
//! loopback, under the same load from wrk: segment GETs per second for 100 KB and 500 KB
//! objects (synthetic payloads and files from a media directory) and 302s per second.
//!
//! Fairness: every server gets the same CPU budget — one worker (nginx `worker_processes 1`,
//! our roles' tokio runtime with `TOKIO_WORKER_THREADS=1`; the roles otherwise start one worker
//! per core) and, on a machine with at least two CPUs, all of its threads pinned to CPU 0 with
//! taskset while wrk runs pinned to CPU 1, so load generator and server never share a core.
//! nginx is given its usual fast static setup (sendfile, tcp_nopush, open_file_cache, no access
//! log, keep-alive without a request limit). Needs Debian's `nginx` and `wrk`; it is run by
//! hand, never by CI.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::sample::cpu_ticks;
use super::stats::median;
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::{interrupt, sys, Error, Result};
use crate::table::{num, Table};

/// How to get the tools this benchmark drives.
const INSTALL_HINT: &str = "install them with `apt-get install -y nginx-light wrk` (Debian/Ubuntu)";

/// The load: wrk's threads and open connections.
const WRK_THREADS: u32 = 2;
const WRK_CONNECTIONS: u32 = 50;

/// The benchmark's video: one 2 s segment per quality, sized `bitrate × 2 s / 8`.
const VIDEO: &str = "video";
/// `(quality id, bitrate, segment bytes)`.
const OBJECTS: [(&str, &str, u64); 2] = [("100k", "400kbit", 100_000), ("500k", "2mbit", 500_000)];

/// The target: at least nginx's rate in every row.
const TARGET_RATIO: f64 = 1.0;

/// How long a server may take to accept connections after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(10);

pub fn run(options: &BenchOptions) -> Result<Report> {
    let tools = Tools::find()?;
    let (seconds, rounds) = if options.quick { (3, 1) } else { (10, 3) };
    let work = WorkDir::create("http")?;
    let media = work.path.join("media");
    for (quality, _, bytes) in OBJECTS {
        write_object(&media.join(VIDEO).join(quality), bytes)?;
    }
    let pinning = Pinning::choose(&tools);
    let [nginx_static, nginx_redirect, ucs_port, ucs_files_port, urr_port] = free_ports()?;
    let ucs_url = format!("http://127.0.0.1:{ucs_port}");

    progress("http: starting nginx, ucs (synthetic), ucs (media_dir), urr");
    let conf = work.path.join("nginx.conf");
    write(
        &conf,
        &nginx_config(&work.path, &media, nginx_static, nginx_redirect, &ucs_url),
    )?;
    let mut nginx = Server::start(
        "nginx",
        &pinning,
        &tools.nginx,
        &[
            "-p".as_ref(),
            work.path.as_os_str(),
            "-c".as_ref(),
            conf.as_os_str(),
            "-e".as_ref(),
            work.path.join("nginx-error.log").as_os_str(),
        ],
        &work.path,
        nginx_static,
    )?;
    let roles = sys::bin_dir()?;
    let ucs = start_role(
        &roles,
        &work.path,
        &pinning,
        "ucs",
        ucs_port,
        &ucs_config(ucs_port, None),
    )?;
    let ucs_files = start_role(
        &roles,
        &work.path,
        &pinning,
        "ucs",
        ucs_files_port,
        &ucs_config(ucs_files_port, Some(&media)),
    )?;
    let urr = start_role(
        &roles,
        &work.path,
        &pinning,
        "urr",
        urr_port,
        &urr_config(urr_port, &ucs_url),
    )?;
    nginx.wait_ready(nginx_redirect)?;

    let mut cases = Vec::new();
    for (source, ours) in [("synthetic", &ucs), ("media_dir file", &ucs_files)] {
        for (quality, _, bytes) in OBJECTS {
            cases.push(Case {
                label: format!("{} KB segment, {source}", bytes / 1000),
                path: segment_path(quality),
                expect: Expect::Body(bytes),
                nginx: (&nginx, nginx_static),
                ours: (ours, ours.port),
            });
        }
    }
    let redirected = segment_path(OBJECTS[0].0);
    cases.push(Case {
        label: "302 to the upstream uCS".into(),
        expect: Expect::Redirect(format!("{ucs_url}{redirected}")),
        path: redirected,
        nginx: (&nginx, nginx_redirect),
        ours: (&urr, urr.port),
    });

    let mut table = Table::new(&[
        "object",
        "nginx req/s",
        "cdnlab req/s",
        "ratio",
        "nginx CPU (cores)",
        "cdnlab CPU (cores)",
        "server CPU busy, nginx / cdnlab (%)",
        "cdnlab server",
    ]);
    let mut below = Vec::new();
    let mut ratios = Vec::new();
    for case in &cases {
        interrupt::check()?;
        check_answer(case.nginx.1, &case.path, &case.expect, "nginx")?;
        check_answer(case.ours.1, &case.path, &case.expect, case.ours.0.name)?;
        // Rounds alternate between the servers, so a burst of other work on the machine
        // hits both alike; the medians go in the table.
        let (mut theirs, mut ours) = (Vec::new(), Vec::new());
        for round in 1..=rounds {
            for (server, port, runs) in [
                (case.nginx.0, case.nginx.1, &mut theirs),
                (case.ours.0, case.ours.1, &mut ours),
            ] {
                interrupt::check()?;
                progress(format!(
                    "http: {}: {}, {seconds} s, round {round} of {rounds}",
                    case.label, server.name
                ));
                runs.push(load(&tools, &pinning, server, port, &case.path, seconds)?);
            }
        }
        let (theirs_spread, ours_spread) = (spread(&theirs), spread(&ours));
        let (theirs, ours) = (Load::median(&theirs), Load::median(&ours));
        let ratio = ours.requests_per_s / theirs.requests_per_s;
        if ratio.is_nan() || ratio < TARGET_RATIO {
            below.push(format!("{}: {ratio:.2}", case.label));
        }
        ratios.push(ratio);
        table.push(vec![
            case.label.clone(),
            format!("{:.0}{theirs_spread}", theirs.requests_per_s),
            format!("{:.0}{ours_spread}", ours.requests_per_s),
            format!("{ratio:.2}"),
            num(theirs.server_cores, 2),
            num(ours.server_cores, 2),
            format!(
                "{} / {}",
                num(theirs.cpu_busy.map(|b| b * 100.0), 0),
                num(ours.cpu_busy.map(|b| b * 100.0), 0)
            ),
            case.ours.0.name.to_string(),
        ]);
    }
    let (low, high) = ratios
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
    Ok(Report {
        name: "http",
        title: "HTTP serving vs nginx".into(),
        setup: vec![
            format!(
                "Loopback, HTTP/1.1 keep-alive: `wrk -t{WRK_THREADS} -c{WRK_CONNECTIONS} -d{seconds}s` \
                 against each server in turn, {rounds} round(s) alternating between them; \
                 medians, with the rounds' range of requests per second in parentheses; one \
                 URL per row (the same segment path on both)."
            ),
            format!(
                "Objects: segment 0 of a 2 s video at 400 kbit/s (100 000 bytes) and 2 Mbit/s \
                 (500 000 bytes). nginx serves them as static files ({}); `ucs` serves \
                 synthetic payloads generated once and kept in memory, or (media_dir rows) the same files, also kept in memory once read.",
                "sendfile, tcp_nopush, open_file_cache, access_log off, keepalive_requests 1000000"
            ),
            "302 row: nginx `return 302 http://127.0.0.1:PORT$request_uri;` against `urr` with \
             `offload = \"none\"` and one upstream uCS; both send the same Location (nginx adds \
             its small HTML body, ours has none)."
                .into(),
            format!("CPU budget: one worker each (nginx worker_processes 1; our roles' tokio runtime with TOKIO_WORKER_THREADS=1). {}", pinning.describe()),
            "CPU columns: the server's utime + stime (all its processes and threads) over the run, \
             from /proc/PID/stat; and how busy the server's CPU was (/proc/stat, all but idle \
             and iowait), which also counts the loopback's packet processing in softirq that no \
             process is charged for (and anything else the machine ran there): near 100% means \
             the server's core, not wrk, was the bottleneck."
                .into(),
            format!("{} and wrk from the machine's packages.", tools.nginx_version),
        ],
        table,
        target: format!("≥ {TARGET_RATIO:.1} × nginx's requests per second in every row."),
        verdict: if below.is_empty() {
            Verdict::Met(format!("ratios {low:.2}–{high:.2}"))
        } else {
            Verdict::Missed(format!(
                "ratios {low:.2}–{high:.2}; below {TARGET_RATIO:.1}: {}",
                below.join("; ")
            ))
        },
    })
}

/// One row: the same path asked of nginx and of one of our servers.
struct Case<'a> {
    label: String,
    path: String,
    expect: Expect,
    nginx: (&'a Server, u16),
    ours: (&'a Server, u16),
}

/// What a correct answer to a case's path is, checked once before the load.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// 200 with a body of this many bytes.
    Body(u64),
    /// 302 to this URL.
    Redirect(String),
}

fn segment_path(quality: &str) -> String {
    crate::cdn::paths::segment_path(VIDEO, quality, 0, crate::cdn::Container::Ts)
}

/// The programs this benchmark runs, found before anything starts.
struct Tools {
    nginx: PathBuf,
    nginx_version: String,
    wrk: PathBuf,
    taskset: Option<PathBuf>,
}

impl Tools {
    fn find() -> Result<Tools> {
        let nginx = find_program("nginx");
        let wrk = find_program("wrk");
        let (Some(nginx), Some(wrk)) = (nginx.clone(), wrk.clone()) else {
            let missing: Vec<&str> = [("nginx", nginx.is_none()), ("wrk", wrk.is_none())]
                .iter()
                .filter(|(_, missing)| *missing)
                .map(|(name, _)| *name)
                .collect();
            return Err(Error(format!(
                "bench http compares with nginx under load from wrk, and {} not found: {INSTALL_HINT}",
                match missing.as_slice() {
                    [one] => format!("{one} was"),
                    _ => format!("{} were", missing.join(" and ")),
                }
            )));
        };
        // `nginx -v` prints `nginx version: nginx/1.22.1` on stderr.
        let nginx_version = Command::new(&nginx)
            .arg("-v")
            .output()
            .ok()
            .and_then(|out| {
                String::from_utf8_lossy(&out.stderr)
                    .trim()
                    .strip_prefix("nginx version: ")
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "nginx".to_string());
        Ok(Tools {
            nginx,
            nginx_version,
            wrk,
            taskset: find_program("taskset"),
        })
    }
}

/// `program` on PATH, or in /usr/sbin (where Debian puts nginx, off a user's PATH).
pub(super) fn find_program(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// Which CPUs the server and wrk run on.
pub(super) enum Pinning {
    Split {
        taskset: PathBuf,
    },
    /// One CPU, or no taskset: everything shares what there is.
    None(&'static str),
}

/// The CPUs of `Pinning::Split`, as taskset lists: servers on one, the load (wrk) on the other.
const SERVER_CPU: &str = "0";
pub(super) const WRK_CPU: &str = "1";

impl Pinning {
    fn choose(tools: &Tools) -> Pinning {
        Pinning::with(tools.taskset.clone())
    }

    /// Servers on one CPU and the load on another when there are two CPUs and `taskset`.
    pub(super) fn with(taskset: Option<PathBuf>) -> Pinning {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        match (taskset, cpus) {
            (Some(taskset), 2..) => Pinning::Split { taskset },
            (None, _) => Pinning::None("taskset (util-linux) is missing"),
            (Some(_), _) => Pinning::None("the machine has one CPU"),
        }
    }

    fn describe(&self) -> String {
        match self {
            Pinning::Split { .. } => format!(
                "Servers pinned to CPU {SERVER_CPU} and wrk to CPU {WRK_CPU} with taskset: wrk \
                 never competes with the server for a core, but on a 2-CPU machine its two \
                 threads share one."
            ),
            Pinning::None(why) => format!(
                "Not pinned ({why}): wrk competes with the server for the same CPUs, which \
                 lowers both columns alike."
            ),
        }
    }

    /// The CPU servers are pinned to.
    fn server_cpu(&self) -> Option<&'static str> {
        match self {
            Pinning::Split { .. } => Some(SERVER_CPU),
            Pinning::None(_) => None,
        }
    }

    /// `program args…`, run on `cpu` when pinning.
    fn command(&self, cpu: &str, program: &Path) -> Command {
        match self {
            Pinning::Split { taskset } => {
                let mut command = Command::new(taskset);
                command.args(["-c", cpu]).arg(program);
                command
            }
            Pinning::None(_) => Command::new(program),
        }
    }
}

/// The benchmark's files (configs, media, logs), removed when dropped.
pub(super) struct WorkDir {
    pub(super) path: PathBuf,
}

impl WorkDir {
    /// `cdnlab-bench-BENCH-PID` in the temporary directory.
    pub(super) fn create(bench: &str) -> Result<WorkDir> {
        let path =
            std::env::temp_dir().join(format!("cdnlab-bench-{bench}-{}", std::process::id()));
        // A leftover of a crashed run with the same pid holds nothing we need.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .map_err(|e| Error(format!("creating {}: {e}", path.display())))?;
        // nginx's worker drops root to `nobody`: it must be able to read the media below.
        set_mode(&path, 0o755)?;
        Ok(WorkDir { path })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error(format!("chmod {}: {e}", path.display())))
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error(format!("writing {}: {e}", path.display())))
}

/// `DIR/seg-00000.ts` of `bytes` bytes (a repeating pattern: neither server compresses).
fn write_object(dir: &Path, bytes: u64) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error(format!("creating {}: {e}", dir.display())))?;
    for ancestor in dir.ancestors().take(3) {
        set_mode(ancestor, 0o755)?;
    }
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    let path = dir.join("seg-00000.ts");
    std::fs::write(&path, data).map_err(|e| Error(format!("writing {}: {e}", path.display())))?;
    set_mode(&path, 0o644)
}

/// `N` loopback ports free right now (bound together so they differ, then released).
pub(super) fn free_ports<const N: usize>() -> Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| Error(format!("finding free loopback ports: {e}")))?;
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener
            .local_addr()
            .map_err(|e| Error(format!("finding free loopback ports: {e}")))?
            .port();
    }
    Ok(ports)
}

/// nginx as a static file server on `static_port` and a redirector on `redirect_port`.
fn nginx_config(
    work: &Path,
    media: &Path,
    static_port: u16,
    redirect_port: u16,
    upstream: &str,
) -> String {
    format!(
        "# Generated by `cdnlab bench http`.
worker_processes 1;
daemon off;
master_process on;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 75s;
    keepalive_requests 1000000;
    open_file_cache max=64;
    types {{ video/mp2t ts; }}
    default_type application/octet-stream;
    server {{
        listen 127.0.0.1:{static_port};
        root {media};
    }}
    server {{
        listen 127.0.0.1:{redirect_port};
        return 302 {upstream}$request_uri;
    }}
}}
",
        work = work.display(),
        media = media.display(),
    )
}

/// The benchmark video as a role's `videos` value.
fn videos_toml() -> String {
    let qualities: Vec<String> = OBJECTS
        .iter()
        .map(|(id, bitrate, _)| format!("{{ id = \"{id}\", bitrate = \"{bitrate}\" }}"))
        .collect();
    format!(
        "[{{ name = \"{VIDEO}\", segments = 1, segment_duration = \"2s\", qualities = [{}] }}]",
        qualities.join(", ")
    )
}

fn ucs_config(port: u16, media_dir: Option<&Path>) -> String {
    let mut text = format!(
        "port = {port}\nurl = \"http://127.0.0.1:{port}\"\nvideos = {}\n",
        videos_toml()
    );
    if let Some(dir) = media_dir {
        text += &format!("media_dir = \"{}\"\n", dir.display());
    }
    text
}

fn urr_config(port: u16, upstream: &str) -> String {
    format!(
        "port = {port}\nurl = \"http://127.0.0.1:{port}\"\nvideos = {}\nupstream = [\"{upstream}\"]\noffload = \"none\"\n",
        videos_toml()
    )
}

/// A role binary from beside cdnlab with its config file, one tokio worker.
pub(super) fn start_role(
    bin_dir: &Path,
    work: &Path,
    pinning: &Pinning,
    role: &'static str,
    port: u16,
    config: &str,
) -> Result<Server> {
    let program = bin_dir.join(role);
    if !program.is_file() {
        return Err(Error(format!(
            "{} is missing: build the workspace so the role binaries sit beside cdnlab",
            program.display()
        )));
    }
    let config_path = work.join(format!("{role}-{port}.toml"));
    write(&config_path, config)?;
    Server::start(
        role,
        pinning,
        &program,
        &["--config".as_ref(), config_path.as_os_str()],
        work,
        port,
    )
}

/// A server process in its own process group, stopped (the whole group) when dropped.
pub(super) struct Server {
    name: &'static str,
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Server {
    /// Starts `program args` on the server CPU and waits until `port` accepts connections.
    fn start(
        name: &'static str,
        pinning: &Pinning,
        program: &Path,
        args: &[&std::ffi::OsStr],
        work: &Path,
        port: u16,
    ) -> Result<Server> {
        let log = work.join(format!("{name}-{port}.log"));
        let file = std::fs::File::create(&log)
            .map_err(|e| Error(format!("creating {}: {e}", log.display())))?;
        let stderr = file
            .try_clone()
            .map_err(|e| Error(format!("{}: {e}", log.display())))?;
        let mut command = pinning.command(SERVER_CPU, program);
        command
            .args(args)
            .env("TOKIO_WORKER_THREADS", "1")
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(stderr)
            // Its own group: Ctrl-C reaches only cdnlab, which stops it, and stopping the
            // group stops nginx's worker with its master.
            .process_group(0);
        let child = command
            .spawn()
            .map_err(|e| Error(format!("starting {}: {e}", program.display())))?;
        let mut server = Server {
            name,
            child,
            port,
            log,
        };
        server.wait_ready(port)?;
        Ok(server)
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits until `port` accepts; fails with the server's log if it exits or takes too long.
    fn wait_ready(&mut self, port: u16) -> Result<()> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            let exited = !matches!(self.child.try_wait(), Ok(None));
            if exited || Instant::now() >= deadline {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                return Err(Error(format!(
                    "{} did not accept connections on {addr} within {} s; its log:\n{}",
                    self.name,
                    START_TIMEOUT.as_secs(),
                    log.trim_end()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// CPU ticks of every process in the server's group (nginx's master and worker).
    pub(super) fn cpu_ticks(&self) -> Option<u64> {
        let pgid = self.pid();
        let mut total = 0;
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if process_group(&stat) == Some(pgid) {
                total += cpu_ticks(&stat)?;
            }
        }
        Some(total)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        sys::signal_group(self.pid(), libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        sys::signal_group(self.pid(), libc::SIGKILL);
        let _ = self.child.wait();
    }
}

/// The process group (field 5) from /proc/PID/stat's text.
fn process_group(stat: &str) -> Option<i32> {
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// One GET with `Connection: close`, checked against what the case expects.
fn check_answer(port: u16, path: &str, expect: &Expect, server: &str) -> Result<()> {
    let fail = |what: String| Error(format!("{server} on port {port}, GET {path}: {what}"));
    let (status, location, body) = get(port, path).map_err(|e| fail(e.to_string()))?;
    match expect {
        Expect::Body(bytes) if status == 200 && body as u64 == *bytes => Ok(()),
        Expect::Body(bytes) => Err(fail(format!(
            "expected 200 with {bytes} bytes, got {status} with {body}"
        ))),
        Expect::Redirect(url) if status == 302 && location.as_deref() == Some(url.as_str()) => {
            Ok(())
        }
        Expect::Redirect(url) => Err(fail(format!(
            "expected 302 to {url}, got {status} to {location:?}"
        ))),
    }
}

/// Status, Location and body length of `GET path` on a loopback port.
fn get(port: u16, path: &str) -> std::io::Result<(u16, Option<String>, usize)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    parse_answer(&answer).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not an HTTP/1.1 response with a header block",
        )
    })
}

/// Status, Location and body length of a whole HTTP/1.1 response read to the connection's end.
fn parse_answer(answer: &[u8]) -> Option<(u16, Option<String>, usize)> {
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&answer[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let location = lines.find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_string())
    });
    Some((status, location, answer.len() - end - 4))
}

/// What one wrk run measured.
#[derive(Debug, Clone, PartialEq)]
struct Load {
    requests_per_s: f64,
    /// The server's CPU over the run, in cores.
    server_cores: Option<f64>,
    /// The fraction of the server's pinned CPU that was busy (`None` unpinned).
    cpu_busy: Option<f64>,
}

/// wrk against `server`'s `port` for `seconds`, with the server's CPU over the run.
fn load(
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
    let hz = ticks_per_second();
    let server_cores = match (ticks_before, ticks_after, hz) {
        (Some(before), Some(after), Some(hz)) if elapsed > 0.0 => {
            Some(after.saturating_sub(before) as f64 / hz / elapsed)
        }
        _ => None,
    };
    let cpu_busy = match (cpu_before, cpu_after) {
        (Some(before), Some(after)) if after.total > before.total => Some(
            after.busy.saturating_sub(before.busy) as f64 / (after.total - before.total) as f64,
        ),
        _ => None,
    };
    Ok(Load {
        requests_per_s: report.requests_per_s,
        server_cores,
        cpu_busy,
    })
}

/// ` (MIN–MAX)` of the runs' requests per second, or nothing for a single run.
fn spread(runs: &[Load]) -> String {
    if runs.len() < 2 {
        return String::new();
    }
    let rates = runs.iter().map(|l| l.requests_per_s);
    let low = rates.clone().fold(f64::INFINITY, f64::min);
    let high = rates.fold(f64::NEG_INFINITY, f64::max);
    format!(" ({low:.0}–{high:.0})")
}

impl Load {
    /// Each column's median over runs (`NaN` requests when there were none).
    fn median(runs: &[Load]) -> Load {
        let column = |f: fn(&Load) -> Option<f64>| {
            let values: Vec<f64> = runs.iter().filter_map(f).collect();
            median(&values)
        };
        Load {
            requests_per_s: column(|l| Some(l.requests_per_s)).unwrap_or(f64::NAN),
            server_cores: column(|l| l.server_cores),
            cpu_busy: column(|l| l.cpu_busy),
        }
    }
}

/// One CPU's time counters from /proc/stat, in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CpuTimes {
    busy: u64,
    total: u64,
}

/// CPU `cpu`'s counters now.
fn cpu_times(cpu: &str) -> Option<CpuTimes> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_times(&stat, cpu)
}

/// The `cpuN` line of /proc/stat: user nice system idle iowait irq softirq steal (guest time is
/// already inside user); busy is all but idle and iowait.
fn parse_cpu_times(stat: &str, cpu: &str) -> Option<CpuTimes> {
    let line = stat
        .lines()
        .find(|line| line.split_whitespace().next() == Some(&format!("cpu{cpu}")))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    if fields.len() < 8 {
        return None;
    }
    let total: u64 = fields.iter().sum();
    Some(CpuTimes {
        busy: total - fields[3] - fields[4],
        total,
    })
}

pub(super) fn ticks_per_second() -> Option<f64> {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then_some(hz as f64)
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
    fn http_answers_give_status_location_and_body_length() {
        let redirect =
            b"HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:1/video/100k/seg-00000.ts\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(
            parse_answer(redirect),
            Some((
                302,
                Some("http://127.0.0.1:1/video/100k/seg-00000.ts".into()),
                0
            ))
        );
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(parse_answer(ok), Some((200, None, 5)));
        assert_eq!(parse_answer(b"HTTP/1.1 200 OK\r\n"), None);
    }

    #[test]
    fn medians_per_column() {
        let run = |r, cores, busy| Load {
            requests_per_s: r,
            server_cores: cores,
            cpu_busy: busy,
        };
        let runs = [
            run(10.0, Some(0.5), None),
            run(30.0, Some(0.9), None),
            run(20.0, None, None),
        ];
        assert_eq!(Load::median(&runs), run(20.0, Some(0.7), None));
        assert!(Load::median(&[]).requests_per_s.is_nan());
        assert_eq!(spread(&runs), " (10–30)");
        assert_eq!(spread(&runs[..1]), "");
    }

    #[test]
    fn cpu_lines_give_busy_and_total_ticks() {
        let stat = "cpu  10 0 10 100 0 0 0 0 0 0\n\
                    cpu0 5 1 2 40 3 1 4 0 0 0\n\
                    cpu1 5 0 8 60 0 0 0 0 0 0\n\
                    intr 12345\n";
        assert_eq!(
            parse_cpu_times(stat, "0"),
            Some(CpuTimes {
                busy: 13,
                total: 56
            })
        );
        assert_eq!(
            parse_cpu_times(stat, "1").map(|t| (t.busy, t.total)),
            Some((13, 73))
        );
        assert_eq!(parse_cpu_times(stat, "2"), None);
    }

    #[test]
    fn process_group_is_field_five() {
        let stat = "1234 (nginx: worker (x)) S 1200 1200 1200 0 -1 4194560 10 0 0 0 7 3 0 0";
        assert_eq!(process_group(stat), Some(1200));
        assert_eq!(cpu_ticks(stat), Some(10));
    }

    #[test]
    fn segment_sizes_follow_bitrate_times_duration() {
        let table = ucs_config(80, None)
            .parse()
            .expect("the generated config is TOML");
        let config = crate::cdn_roles::config::UcsConfig::parse(&table, "ucs")
            .expect("the generated config is valid");
        let video = &config.videos[0];
        for (i, (id, _, bytes)) in OBJECTS.iter().enumerate() {
            assert_eq!(video.qualities()[i].id, *id);
            assert_eq!(video.segment_size(i), Some(*bytes), "{id}");
        }
        assert_eq!(segment_path("100k"), "/video/100k/seg-00000.ts");
    }
}
