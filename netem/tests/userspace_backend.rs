//! The userspace link backend with real traffic: two namespaces joined by a veth pair, each
//! side's ingress sent to NFQUEUE (`iptables-legacy -t raw ... -j NFQUEUE`), and the
//! `cdnlab-shaper` binary giving the verdicts.
//!
//! Needs root, `ip` and iptables-legacy; without them the tests are reported as skipped (and
//! fail under CI). The `measure_*` test runs only when asked for: it prints the fidelity and cost
//! numbers (`cargo test --release -p netem --test userspace_backend -- --ignored --nocapture`).

// The root crate's test harness: what each test needs of the machine, skips that say so.
#[path = "../../tests/common/harness.rs"]
mod harness;

use harness::{tests, LAB};
use netem::daemon::{request, QueueStatus, Request, Response};
use netem::nfqueue::in_netns;
use netem::Impairments;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

const ADDR_A: &str = "198.18.250.1";
const ADDR_B: &str = "198.18.250.2";
const MS: u64 = 1_000_000;

fn run(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "`{}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A network namespace, deleted when dropped (also when the test fails).
struct Netns {
    name: String,
}

impl Netns {
    fn new(name: String) -> Netns {
        let _ = Command::new("ip")
            .args(["netns", "del", &name])
            .stderr(Stdio::null())
            .status();
        run(&["ip", "netns", "add", &name]);
        Netns { name }
    }

    fn path(&self) -> PathBuf {
        Path::new("/run/netns").join(&self.name)
    }

    fn run(&self, args: &[&str]) {
        let mut full = vec!["ip", "netns", "exec", &self.name];
        full.extend_from_slice(args);
        run(&full);
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// The daemon binary serving the two queues `a` (A's ingress, traffic B→A) and `b` (B's
/// ingress, traffic A→B). Stopped with SIGTERM when dropped.
struct Shaper {
    child: Child,
    socket: PathBuf,
    dir: PathBuf,
}

impl Shaper {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn set(&self, id: &str, impairments: Impairments) {
        let id = id.to_string();
        let response = request(&self.socket, &Request::Set { id, impairments }).unwrap();
        assert_eq!(response, Response::ok());
    }

    fn show(&self) -> Vec<QueueStatus> {
        let response = request(&self.socket, &Request::Show)
            .unwrap()
            .into_result()
            .unwrap();
        response.queues.unwrap()
    }

    /// The status of queue `id`.
    fn queue(&self, id: &str) -> QueueStatus {
        let status = self.show().into_iter().find(|q| q.id == id);
        status.unwrap_or_else(|| panic!("the daemon shows no queue `{id}`"))
    }

    /// Stops the daemon with SIGTERM and returns its exit status.
    fn terminate(&mut self) -> std::process::ExitStatus {
        // SAFETY: kill on the pid of a child we have not yet reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        self.child.wait().unwrap()
    }
}

impl Drop for Shaper {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.terminate();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Two namespaces joined by a veth pair, each ingress queued to the shaper. Field order is drop
/// order: the daemon goes before the namespaces.
struct Link {
    shaper: Shaper,
    a: Netns,
    b: Netns,
}

impl Link {
    fn new(tag: &str, a_to_b: Impairments, b_to_a: Impairments) -> Link {
        Link::with_config(tag, a_to_b, b_to_a, serde_json::json!({}))
    }

    /// A link whose daemon config has `extra`'s fields too.
    fn with_config(
        tag: &str,
        a_to_b: Impairments,
        b_to_a: Impairments,
        extra: serde_json::Value,
    ) -> Link {
        let pid = std::process::id();
        let a = Netns::new(format!("nqt-{tag}-{pid}-a"));
        let b = Netns::new(format!("nqt-{tag}-{pid}-b"));
        run(&[
            "ip", "-n", &a.name, "link", "add", "veth0", "type", "veth", "peer", "name", "veth0",
            "netns", &b.name,
        ]);
        for (ns, addr) in [(&a, ADDR_A), (&b, ADDR_B)] {
            ns.run(&["ip", "addr", "add", &format!("{addr}/30"), "dev", "veth0"]);
            ns.run(&["ip", "link", "set", "veth0", "up"]);
            ns.run(&["ip", "link", "set", "lo", "up"]);
            ns.run(&[
                "iptables-legacy",
                "-t",
                "raw",
                "-A",
                "PREROUTING",
                "-i",
                "veth0",
                "-j",
                "NFQUEUE",
                "--queue-num",
                "0",
            ]);
        }
        let dir = std::env::temp_dir().join(format!("nqt-{tag}-{pid}"));
        std::fs::create_dir_all(&dir).unwrap();
        let socket = dir.join("shaper.sock");
        let queue = |id: &str, ns: &Netns, impairments: &Impairments| {
            serde_json::json!({ "id": id, "netns": ns.path(), "queue_num": 0,
                                "impairments": impairments, "seed": 7 })
        };
        let mut config = serde_json::json!({
            "control_socket": socket,
            "queues": [queue("b", &b, &a_to_b), queue("a", &a, &b_to_a)],
        });
        for (key, value) in extra.as_object().into_iter().flatten() {
            config[key] = value.clone();
        }
        let config_path = dir.join("config.json");
        std::fs::write(&config_path, config.to_string()).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_cdnlab-shaper"))
            .arg("--config")
            .arg(&config_path)
            .spawn()
            .unwrap();
        let mut shaper = Shaper { child, socket, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while request(&shaper.socket, &Request::Ping).is_err() {
            if let Some(status) = shaper.child.try_wait().unwrap() {
                panic!("the shaper exited at start: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the shaper's control socket never answered"
            );
            thread::sleep(Duration::from_millis(20));
        }
        Link { shaper, a, b }
    }
}

fn delay(ms: u64) -> Impairments {
    Impairments {
        delay_ns: ms * MS,
        ..Impairments::default()
    }
}

/// A UDP echo server in a namespace, until dropped.
struct Echo {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Echo {
    fn start(ns: &Netns, port: u16) -> Echo {
        let socket = in_netns(&ns.path(), || UdpSocket::bind(("0.0.0.0", port))).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while !flag.load(Ordering::Relaxed) {
                if let Ok((n, from)) = socket.recv_from(&mut buf) {
                    let _ = socket.send_to(&buf[..n], from);
                }
            }
        });
        Echo {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A UDP client in namespace A talking to the echo server in B.
fn udp_client(link: &Link, port: u16, timeout: Duration) -> UdpSocket {
    let socket = in_netns(&link.a.path(), || UdpSocket::bind("0.0.0.0:0")).unwrap();
    socket.connect((ADDR_B, port)).unwrap();
    socket.set_read_timeout(Some(timeout)).unwrap();
    socket
}

/// A UDP socket in namespace B on `port`.
fn udp_receiver(link: &Link, port: u16, timeout: Duration) -> UdpSocket {
    let socket = in_netns(&link.b.path(), || UdpSocket::bind(("0.0.0.0", port))).unwrap();
    socket.set_read_timeout(Some(timeout)).unwrap();
    socket
}

/// Datagrams A→B, each carrying when it was sent and a tag, and a thread in B taking their
/// one-way times as they come.
struct StampedStream {
    base: Instant,
    sender: UdpSocket,
    reader: JoinHandle<Vec<(u8, u64)>>,
}

impl StampedStream {
    /// A stream to `port` in B whose reader stops after `count` datagrams, or 2 s without one.
    fn start(link: &Link, port: u16, count: usize) -> StampedStream {
        let base = Instant::now();
        let receiver = udp_receiver(link, port, Duration::from_secs(2));
        let reader = thread::spawn(move || {
            let mut one_way = Vec::new();
            let mut buf = [0u8; 16];
            while one_way.len() < count {
                let Ok(n) = receiver.recv(&mut buf) else {
                    break;
                };
                let received = base.elapsed().as_nanos() as u64;
                assert_eq!(n, 9);
                let sent = u64::from_be_bytes(buf[..8].try_into().unwrap());
                one_way.push((buf[8], received - sent));
            }
            one_way
        });
        let sender = in_netns(&link.a.path(), || UdpSocket::bind("0.0.0.0:0")).unwrap();
        sender.connect((ADDR_B, port)).unwrap();
        StampedStream {
            base,
            sender,
            reader,
        }
    }

    fn send(&self, tag: u8) {
        let mut datagram = [tag; 9];
        datagram[..8].copy_from_slice(&(self.base.elapsed().as_nanos() as u64).to_be_bytes());
        self.sender.send(&datagram).unwrap();
    }

    /// The (tag, one-way ns) of every datagram received, in the order received.
    fn finish(self) -> Vec<(u8, u64)> {
        self.reader.join().unwrap()
    }
}

/// Round-trip times of `count` probes (spaced by `gap`); lost probes are left out.
fn probe_rtts(socket: &UdpSocket, count: u32, gap: Duration) -> Vec<Duration> {
    let mut rtts = Vec::new();
    let mut buf = [0u8; 64];
    for seq in 0..count {
        let sent = Instant::now();
        socket.send(&seq.to_be_bytes()).unwrap();
        // Skip late answers to earlier probes.
        while let Ok(n) = socket.recv(&mut buf) {
            if n == 4 && buf[..4] == seq.to_be_bytes() {
                rtts.push(sent.elapsed());
                break;
            }
        }
        thread::sleep(gap);
    }
    rtts
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn median_ms(rtts: &[Duration]) -> f64 {
    let mut ms: Vec<f64> = rtts.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    percentile(&ms, 0.5)
}

/// A TCP connection from A to an echo-once-per-message server in B.
fn tcp_pair(link: &Link, port: u16) -> (TcpStream, JoinHandle<()>) {
    let listener = in_netns(&link.b.path(), || TcpListener::bind(("0.0.0.0", port))).unwrap();
    let server = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        loop {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if conn.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let addr: SocketAddr = format!("{ADDR_B}:{port}").parse().unwrap();
    let client = in_netns(&link.a.path(), || {
        let socket = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        socket.set_read_timeout(Some(Duration::from_secs(5)))?;
        Ok(socket)
    })
    .unwrap();
    (client, server)
}

/// Sends `len` bytes on the connection and reads them back; returns how long it took.
fn tcp_echo(conn: &mut TcpStream, len: usize) -> Duration {
    let start = Instant::now();
    let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
    conn.write_all(&data).unwrap();
    let mut back = vec![0u8; len];
    conn.read_exact(&mut back).unwrap();
    assert_eq!(back, data);
    start.elapsed()
}

/// Medians of 40 and 20 UDP probes must be within 2 ms of the configured RTT. `cdnlab bench
/// delay` (BENCHMARKS.md) measured median errors of 0.06-0.21 ms over 1000 probes in each of 11
/// runs at load averages up to 3.9 on 2 CPUs, where the p99 error reached 112 ms: machine load
/// moves the tail, not the middle. A median of 20 is more than 2 ms off only if 10 or more of
/// the 20 probes are; even if each probe independently had a 10% chance of that (more than the
/// benchmark's p99 ever showed), that is a binomial tail of 7e-6 — expected pass rate above
/// 99.9%, bursts of load that span the 2 s of probes being what remains. Measured in 3 runs
/// at load averages 4-7: medians 40.16-40.18 and 100.16-100.19 ms. The loss steps are
/// deterministic (100% and 0%), and TCP's 100 ms is a lower bound: no load makes it faster.
fn delays_change_at_run_time_and_loss_blocks() {
    let link = Link::new("rt", delay(20), delay(20));
    let _echo = Echo::start(&link.b, 7007);
    let client = udp_client(&link, 7007, Duration::from_millis(500));

    let rtts = probe_rtts(&client, 40, Duration::from_millis(5));
    assert_eq!(
        rtts.len(),
        40,
        "no probe may be lost without loss configured"
    );
    let median = median_ms(&rtts);
    eprintln!("median RTT {median:.3} ms at 20 ms each way");
    assert!(
        (median - 40.0).abs() < 2.0,
        "median RTT {median:.3} ms with 20 ms each way"
    );

    // An established TCP connection survives a change of delay.
    let (mut conn, server) = tcp_pair(&link, 7008);
    tcp_echo(&mut conn, 1000);
    link.shaper.set("a", delay(50));
    link.shaper.set("b", delay(50));
    let median = median_ms(&probe_rtts(&client, 20, Duration::from_millis(5)));
    eprintln!("median RTT {median:.3} ms at 50 ms each way");
    assert!(
        (median - 100.0).abs() < 2.0,
        "median RTT {median:.3} ms after set to 50 ms"
    );
    let took = tcp_echo(&mut conn, 100_000);
    assert!(
        took >= Duration::from_millis(100),
        "TCP echo took {took:?}, under one RTT"
    );

    // 100% loss one way: nothing comes back; restoring it restores traffic.
    link.shaper.set(
        "b",
        Impairments {
            loss: 1.0,
            ..delay(50)
        },
    );
    let lost = probe_rtts(&client, 5, Duration::from_millis(5));
    assert!(
        lost.is_empty(),
        "{} probes crossed a link with 100% loss",
        lost.len()
    );
    let b = link.shaper.queue("b");
    assert!(b.stats.dropped_loss >= 5, "{b:?}");
    assert_eq!(b.impairments.loss, 1.0);
    link.shaper.set("b", delay(50));
    let rtts = probe_rtts(&client, 5, Duration::from_millis(5));
    assert_eq!(rtts.len(), 5, "traffic resumes once the loss is removed");
    tcp_echo(&mut conn, 1000);
    drop(conn);
    server.join().unwrap();
}

/// A stream of datagrams A→B, one every 5 ms, across 20 ms: with departures scheduled, the
/// daemon reads arrivals at its timer's wake-ups instead of waking for each, and no datagram
/// crosses in less than the delay (less the 50 µs release window) or, at the median, more than
/// 2 ms over it (the reasoning of `delays_change_at_run_time_and_loss_blocks`). That the reads
/// waited shows in the daemon's record of how long after their arrival it read packets: with
/// departures every 5 ms, most arrivals wait 1 ms or more for the next (on an idle machine
/// without deferral, none: about 50 µs). A deferred packet read after it was due is counted;
/// a few may be, when a wake-up comes over 1 ms late on a loaded machine, but not most.
fn arrivals_wait_for_the_timer_and_no_packet_is_early() {
    let link = Link::new("defer", delay(20), delay(20));
    const COUNT: usize = 200;
    let stream = StampedStream::start(&link, 7010, COUNT);
    for _ in 0..COUNT {
        stream.send(0);
        thread::sleep(Duration::from_millis(5));
    }
    let mut one_way: Vec<u64> = stream.finish().into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        one_way.len(),
        COUNT,
        "datagrams lost without loss configured"
    );
    one_way.sort_unstable();
    let (earliest, median) = (one_way[0], one_way[COUNT / 2]);
    eprintln!("one-way: earliest {earliest} ns, median {median} ns at 20 ms");
    assert!(
        earliest >= 20 * MS - 50_000,
        "a datagram crossed in {earliest} ns"
    );
    assert!(median < 22 * MS, "median one-way {median} ns at 20 ms");
    let status = daemon_status(&link);
    let waited = status.arrivals.age.at_least(MS).unwrap();
    assert!(
        waited >= COUNT as u64 / 4,
        "{waited} arrivals were read 1 ms or more after they came: {:?}",
        status.arrivals.age
    );
    assert!(
        status.deferred_late <= COUNT as u64 / 10,
        "{} deferred packets were read after they were due",
        status.deferred_late
    );
}

/// Datagrams A→B, one every 5 ms: 20 across a 300 ms delay, which leaves B's arrivals to wait
/// for the timer of the first departure, then 20 after the delay is lowered to 2 ms. The `Set`
/// must bring B's socket back into the daemon's wait: read only at the old timer's wake-up,
/// the datagrams after it would cross in ~100–200 ms (measured with the re-watch taken out:
/// median 152 ms). They must cross in no less than 2 ms (less the 50 µs release window) and,
/// at the median, in under 20 ms, which no load short of that failure reaches; the first ones
/// are not held back, since without a rate a shorter delay lets later packets go first, as in
/// netem. The premise, that datagrams were still held at the `Set` and arrivals had
/// waited unread before it, is checked.
fn a_lowered_delay_is_not_held_until_the_old_timer() {
    let link = Link::new("lower", delay(300), delay(300));
    const EACH: usize = 20;
    let stream = StampedStream::start(&link, 7011, 2 * EACH);
    let send = |phase: u8| {
        for _ in 0..EACH {
            stream.send(phase);
            thread::sleep(Duration::from_millis(5));
        }
    };
    send(0);
    let held = daemon_status(&link).held;
    link.shaper.set("b", delay(2));
    assert!(held > 0, "nothing was held when the delay was lowered");
    send(1);
    let (before, after): (Vec<_>, Vec<_>) = stream.finish().into_iter().partition(|&(p, _)| p == 0);
    let one_way = |phase: Vec<(u8, u64)>| phase.into_iter().map(|(_, t)| t).collect::<Vec<_>>();
    let (mut before, mut after) = (one_way(before), one_way(after));
    assert_eq!(
        (before.len(), after.len()),
        (EACH, EACH),
        "datagrams lost without loss configured"
    );
    before.sort_unstable();
    after.sort_unstable();
    eprintln!(
        "one-way after lowering to 2 ms: earliest {} ns, median {} ns, latest {} ns; \
         before it, earliest {} ns at 300 ms",
        after[0],
        after[EACH / 2],
        after[EACH - 1],
        before[0]
    );
    assert!(
        before[0] >= 300 * MS - 50_000,
        "a datagram crossed 300 ms in {} ns",
        before[0]
    );
    assert!(
        after[0] >= 2 * MS - 50_000,
        "a datagram crossed 2 ms in {} ns",
        after[0]
    );
    assert!(
        after[EACH / 2] < 20 * MS,
        "median one-way {} ns after lowering the delay to 2 ms",
        after[EACH / 2]
    );
    // The premise: before the change, B's arrivals waited unread (until the `Set` read them).
    let age = daemon_status(&link).arrivals.age;
    let waited = age.at_least(MS).unwrap();
    assert!(
        waited >= EACH as u64 / 2,
        "only {waited} arrivals were read 1 ms or more after they came: {age:?}"
    );
}

/// A rate never reorders a queue (netem's neither): 3 000 numbered datagrams A→B across a
/// 50 Mbit/s link, each 23 µs on the wire, sent 5–40 µs apart (seeded), so that arrivals keep
/// coming within the release window of the departures held before them; once with the rate
/// alone (B's arrivals read as they come), once with 5 ms of delay too (read at the timer's
/// wake-ups). Whatever arrives must arrive in the order sent, all of it, and all through the
/// shaper. The sender stays on one CPU (a packet left in another CPU's backlog could be
/// overtaken before the queue), and the receiver's buffer holds the whole run, so a reader
/// held off its CPU loses nothing.
fn a_rate_keeps_a_queue_in_order() {
    const COUNT: u32 = 3_000;
    for (run, delay_ms) in [0u64, 5].into_iter().enumerate() {
        let rate = Impairments {
            rate_bps: Some(50_000_000),
            ..delay(delay_ms)
        };
        let link = Link::new(&format!("order{run}"), rate, Impairments::default());
        let port = 7012 + run as u16;
        let receiver = udp_receiver(&link, port, Duration::from_secs(2));
        set_receive_buffer(&receiver, 8 << 20);
        let reader = thread::spawn(move || {
            let mut received = Vec::new();
            let mut buf = [0u8; 128];
            while received.len() < COUNT as usize {
                let Ok(n) = receiver.recv(&mut buf) else {
                    break;
                };
                assert_eq!(n, 100);
                received.push(u32::from_be_bytes(buf[..4].try_into().unwrap()));
            }
            received
        });
        let sender = in_netns(&link.a.path(), || UdpSocket::bind("0.0.0.0:0")).unwrap();
        sender.connect((ADDR_B, port)).unwrap();
        stay_on_this_cpu();
        let mut rng = StdRng::seed_from_u64(3);
        let mut datagram = [0u8; 100];
        for seq in 0..COUNT {
            datagram[..4].copy_from_slice(&seq.to_be_bytes());
            sender.send(&datagram).unwrap();
            let gap = Duration::from_micros(rng.random_range(5..=40));
            let sent = Instant::now();
            while sent.elapsed() < gap {
                std::hint::spin_loop();
            }
        }
        let received = reader.join().unwrap();
        let first = received.windows(2).find(|w| w[1] < w[0]);
        let out_of_order = received.windows(2).filter(|w| w[1] < w[0]).count();
        assert_eq!(
            out_of_order, 0,
            "{delay_ms} ms and 50 Mbit/s: {out_of_order} datagrams came before one sent \
             earlier; the first: {first:?}"
        );
        let b = link.shaper.queue("b");
        assert_eq!(
            (received.len(), b.stats.packets),
            (COUNT as usize, u64::from(COUNT)),
            "{delay_ms} ms and 50 Mbit/s: datagrams received, and packets the shaper passed, of \
             {COUNT} sent: {b:?}"
        );
    }
}

/// Sets `socket`'s receive buffer to `bytes`, past the system's maximum (the tests run as root).
fn set_receive_buffer(socket: &UdpSocket, bytes: i32) {
    use std::os::fd::AsRawFd;
    // SAFETY: setsockopt on a socket we own, with an int we own.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&bytes as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_RCVBUFFORCE: {}", std::io::Error::last_os_error());
}

/// Keeps the calling thread on the CPU it runs on now.
fn stay_on_this_cpu() {
    // SAFETY: sched_getcpu takes nothing; the cpu_set_t is ours, zeroed, then one CPU set.
    unsafe {
        let cpu = libc::sched_getcpu();
        assert!(
            cpu >= 0,
            "sched_getcpu: {}",
            std::io::Error::last_os_error()
        );
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        let rc = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(
            rc,
            0,
            "sched_setaffinity: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn control_errors_and_clean_shutdown() {
    let mut link = Link::new("ctl", delay(1), delay(1));
    let response = request(
        &link.shaper.socket,
        &Request::Set {
            id: "nope".into(),
            impairments: delay(5),
        },
    )
    .unwrap();
    assert!(!response.ok);
    let error = response.error.unwrap();
    assert!(
        error.contains("unknown queue id `nope`") && error.contains("b, a"),
        "{error}"
    );

    // Raw lines: bad JSON gets an error response and the connection keeps serving.
    // The last request ends at end of file, without a newline.
    let replies = raw_exchange(&link, b"{\"op\":\n{\"op\":\"ping\"}");
    let lines: Vec<&str> = replies.lines().collect();
    assert_eq!(lines.len(), 2, "{replies}");
    assert!(
        lines[0].starts_with("{\"ok\":false,\"error\":\"bad request"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1], "{\"ok\":true}");

    // The default config runs a keeper, and the status says what it has done.
    assert!(
        daemon_status(&link).keeper.is_some(),
        "no keeper in the status"
    );

    let status = link.shaper.terminate();
    assert!(status.success(), "SIGTERM exit: {status}");
    assert!(
        !link.shaper.socket.exists(),
        "the control socket file is removed"
    );
}

fn a_daemon_without_a_keeper_reports_none() {
    let link = Link::with_config(
        "nokeep",
        delay(1),
        delay(1),
        serde_json::json!({ "keep_awake_ns": 0 }),
    );
    let raw = raw_exchange(&link, b"{\"op\":\"show\"}\n");
    assert!(!raw.contains("keeper"), "{raw}");
    assert_eq!(daemon_status(&link).keeper, None);
}

/// The daemon's replies to `requests`, sent as they are on one connection, as it wrote them.
fn raw_exchange(link: &Link, requests: &[u8]) -> String {
    let mut conn = std::os::unix::net::UnixStream::connect(&link.shaper.socket).unwrap();
    conn.write_all(requests).unwrap();
    conn.shutdown(std::net::Shutdown::Write).unwrap();
    let mut replies = String::new();
    conn.read_to_string(&mut replies).unwrap();
    replies
}

/// The daemon's CPU time so far (user + system), from /proc/PID/stat.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start at field 3 (state).
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// One TCP flow from A to B for `secs`: its goodput (Mbit/s) over the last two thirds of the
/// transfer, after slow start, and the daemon's CPU (cores) over the same window.
fn tcp_goodput(link: &Link, port: u16, secs: f64) -> (f64, f64) {
    let listener = in_netns(&link.b.path(), || TcpListener::bind(("0.0.0.0", port))).unwrap();
    let pid = link.shaper.pid();
    let receiver = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        let start = Instant::now();
        let mark_at = Duration::from_secs_f64(secs / 3.0);
        let mut mark = None;
        loop {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n as u64,
            }
            if mark.is_none() && start.elapsed() >= mark_at {
                mark = Some((Instant::now(), total, cpu_seconds(pid)));
            }
        }
        let (t0, bytes0, cpu0) = mark.unwrap();
        let elapsed = t0.elapsed().as_secs_f64();
        let mbit = (total - bytes0) as f64 * 8.0 / elapsed / 1e6;
        (mbit, (cpu_seconds(pid) - cpu0) / elapsed)
    });
    let addr: SocketAddr = format!("{ADDR_B}:{port}").parse().unwrap();
    let mut conn = in_netns(&link.a.path(), || TcpStream::connect(addr)).unwrap();
    let data = vec![0x5au8; 1 << 16];
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        conn.write_all(&data).unwrap();
    }
    drop(conn);
    receiver.join().unwrap()
}

fn daemon_status(link: &Link) -> netem::daemon::DaemonStatus {
    request(&link.shaper.socket, &Request::Show)
        .unwrap()
        .daemon
        .unwrap()
}

fn measure_userspace_backend() {
    let link = Link::new("m", delay(0), delay(0));
    let _echo = Echo::start(&link.b, 7009);
    let client = udp_client(&link, 7009, Duration::from_secs(1));
    let base = probe_rtts(&client, 200, Duration::from_millis(2));
    println!(
        "baseline RTT through both queues at 0 ms: median {:.1} us",
        median_ms(&base) * 1e3
    );
    println!("one-way delay error (RTT - configured, other way 0 ms):");
    for ms in [1, 5, 20, 50] {
        link.shaper.set("b", delay(ms));
        let rtts = probe_rtts(&client, 200, Duration::from_millis(3));
        let mut errors: Vec<f64> = rtts
            .iter()
            .map(|r| (r.as_secs_f64() * 1e3 - ms as f64) * 1e3)
            .collect();
        errors.sort_by(f64::total_cmp);
        println!(
            "  {ms:>2} ms: median {:+.1} us, p99 {:+.1} us, max {:+.1} us ({} probes)",
            percentile(&errors, 0.5),
            percentile(&errors, 0.99),
            errors[errors.len() - 1],
            errors.len()
        );
    }
    let status = request(&link.shaper.socket, &Request::Show)
        .unwrap()
        .daemon
        .unwrap();
    println!("  wake-up lateness {:?}", status.wakeup_lateness);
    println!("  verdict lateness {:?}", status.verdict_lateness);

    println!("one TCP flow A->B, 20 ms each way, rate on A->B:");
    link.shaper.set("a", delay(20));
    for (i, mbit) in [5u64, 100, 500].into_iter().enumerate() {
        // Twice the bandwidth-delay product, in full-size frames.
        let bdp_packets = (mbit * 1_000_000 / 8 * 40 / 1000 / 1514) as u32;
        let limit = (2 * bdp_packets).max(1000);
        let rate = Impairments {
            rate_bps: Some(mbit * 1_000_000),
            limit,
            ..delay(20)
        };
        link.shaper.set("b", rate);
        let secs = if mbit <= 5 { 15.0 } else { 9.0 };
        let before = daemon_status(&link);
        let (goodput, cores) = tcp_goodput(&link, 7100 + i as u16, secs);
        let after = daemon_status(&link);
        let wakeups = after.wakeup_lateness.count - before.wakeup_lateness.count;
        let verdicts = after.verdict_lateness.count - before.verdict_lateness.count;
        println!(
            "  {mbit:>3} mbit: {:.0} timer wake-ups/s, {:.0} verdicts/s",
            wakeups as f64 / secs,
            verdicts as f64 / secs
        );
        println!(
            "  {mbit:>3} mbit (limit {limit}): goodput {goodput:.1} Mbit/s = {:.1}% of the rate \
             ({:.1}% of the most TCP can carry); daemon {:.3} cores = {:.3} cores per 100 Mbit/s",
            goodput / mbit as f64 * 100.0,
            goodput / (mbit as f64 * 1448.0 / 1514.0) * 100.0,
            cores,
            cores / goodput * 100.0
        );
    }
    let status = request(&link.shaper.socket, &Request::Show).unwrap();
    for q in status.queues.unwrap() {
        println!("  queue {}: {:?}", q.id, q.stats);
    }
    let daemon = status.daemon.unwrap();
    println!(
        "  overruns {} verdict errors {} malformed {}",
        daemon.overruns, daemon.verdict_errors, daemon.malformed
    );
    println!("  verdict lateness {:?}", daemon.verdict_lateness);
}

tests!(
    LAB =>
        delays_change_at_run_time_and_loss_blocks,
        arrivals_wait_for_the_timer_and_no_packet_is_early,
        a_lowered_delay_is_not_held_until_the_old_timer,
        a_rate_keeps_a_queue_in_order,
        control_errors_and_clean_shutdown,
        a_daemon_without_a_keeper_reports_none;
    LAB.on_request() =>
        measure_userspace_backend;
);
