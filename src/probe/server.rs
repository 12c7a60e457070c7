//! `probe serve`: a UDP echo server and a TCP goodput server on the same port number.
//!
//! UDP datagrams are echoed back to their sender unchanged, but that a probe ping carries how
//! long the server held it (`packet`, `stamped`). A TCP connection's first line (see
//! `protocol`) asks to sink or to source data; each connection gets its own thread.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::packet::{Echo, MAX_LEN};
use super::protocol::{self, format_sink_reply, parse_command, Command, SinkReply, MAX_LINE};
use super::sockopt::enlarge_udp_buffers;
use super::stamped;
use super::target::DEFAULT_PORT;
use super::tcp::{receive_until_eof, send_for, IO_TIMEOUT};

/// How often the server's loops look at the stop flag and the deadline.
const TICK: Duration = Duration::from_millis(100);

/// Connections served at once; more are closed at once, so a flood cannot exhaust threads.
const MAX_CONNECTIONS: usize = 256;

/// Attempts at finding a port free for both UDP and TCP when any port will do.
const BIND_ATTEMPTS: usize = 50;

/// Where and how long to serve.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeOptions {
    pub bind: IpAddr,
    /// UDP and TCP port (0: any free one).
    pub port: u16,
    /// Stop after this long; `None` serves until the process is stopped.
    pub duration: Option<Duration>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port: DEFAULT_PORT,
            duration: None,
        }
    }
}

/// What a server did, printed when it stops by itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServeStats {
    pub echoed_datagrams: u64,
    /// Datagrams received whose echo could not be sent.
    pub failed_echoes: u64,
    pub connections: u64,
    pub refused_connections: u64,
}

/// Counters shared by the server's threads.
#[derive(Default)]
struct Counters {
    echoed: AtomicU64,
    failed_echoes: AtomicU64,
    connections: AtomicU64,
    refused: AtomicU64,
    active: AtomicUsize,
}

/// One connection being served; counted in `Counters::active` while it lives.
struct Active(Arc<Counters>);

impl Active {
    fn enter(counters: Arc<Counters>) -> Active {
        counters.active.fetch_add(1, Ordering::Relaxed);
        Active(counters)
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A bound, not yet running server.
pub struct Server {
    udp: UdpSocket,
    tcp: TcpListener,
}

impl Server {
    /// Binds UDP and TCP to `ip:port`. With port 0 it picks a port free for both.
    pub fn bind(ip: IpAddr, port: u16) -> io::Result<Server> {
        if port != 0 {
            let udp = UdpSocket::bind((ip, port))?;
            enlarge_udp_buffers(&udp)?;
            return Ok(Server {
                udp,
                tcp: TcpListener::bind((ip, port))?,
            });
        }
        for _ in 0..BIND_ATTEMPTS {
            let udp = UdpSocket::bind((ip, 0))?;
            match TcpListener::bind((ip, udp.local_addr()?.port())) {
                Ok(tcp) => {
                    enlarge_udp_buffers(&udp)?;
                    return Ok(Server { udp, tcp });
                }
                Err(error) if error.kind() == io::ErrorKind::AddrInUse => continue,
                Err(error) => return Err(error),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("found no port on {ip} free for both UDP and TCP"),
        ))
    }

    /// The address both sockets listen on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.local_addr()
    }

    /// Serves until `stop` is set or `duration` (if any) has passed. Connections still running
    /// then finish on their own threads (each is bounded by `protocol::MAX_SECONDS` and
    /// `tcp::IO_TIMEOUT`).
    pub fn run(self, duration: Option<Duration>, stop: Arc<AtomicBool>) -> io::Result<ServeStats> {
        let deadline = duration.map(|d| Instant::now() + d);
        let counters = Arc::new(Counters::default());
        let echo = {
            let (stop, counters) = (stop.clone(), counters.clone());
            thread::Builder::new()
                .name("probe-echo".into())
                .spawn(move || echo_udp(&self.udp, &stop, deadline, &counters))?
        };
        let accepted = accept_tcp(&self.tcp, &stop, deadline, &counters);
        stop.store(true, Ordering::Relaxed);
        let echoed = echo
            .join()
            .map_err(|_| io::Error::other("the UDP echo thread panicked"))?;
        accepted?;
        echoed?;
        Ok(ServeStats {
            echoed_datagrams: counters.echoed.load(Ordering::Relaxed),
            failed_echoes: counters.failed_echoes.load(Ordering::Relaxed),
            connections: counters.connections.load(Ordering::Relaxed),
            refused_connections: counters.refused.load(Ordering::Relaxed),
        })
    }

    /// Runs the server on a background thread until the handle is stopped or dropped.
    pub fn spawn(self) -> io::Result<RunningServer> {
        let addr = self.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            thread::Builder::new()
                .name("probe-serve".into())
                .spawn(move || self.run(None, stop))?
        };
        Ok(RunningServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

/// A server running on a background thread; stops (within 100 ms) when stopped or dropped.
pub struct RunningServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<ServeStats>>>,
}

impl RunningServer {
    /// The address it serves on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server and returns what it did.
    pub fn stop(mut self) -> io::Result<ServeStats> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("the server thread panicked")),
            None => Ok(ServeStats::default()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            // Dropping cannot report; `stop` is there for callers who want the outcome.
            let _ = thread.join();
        }
    }
}

/// Binds and serves as `opts` says (the `probe serve` command).
pub fn serve(opts: &ServeOptions) -> io::Result<ServeStats> {
    let server = Server::bind(opts.bind, opts.port).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("binding {}:{}: {e}", opts.bind, opts.port),
        )
    })?;
    server.run(opts.duration, Arc::new(AtomicBool::new(false)))
}

/// Whether a loop should end.
fn stopping(stop: &AtomicBool, deadline: Option<Instant>) -> bool {
    stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d)
}

/// Echoes every datagram back to its sender until stopped. A probe ping leaves with how long
/// it waited here, from the kernel's receive stamp until this loop read it (the reply follows
/// at once): the echo's own wake-up, which the client takes out of the round trip.
fn echo_udp(
    socket: &UdpSocket,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    counters: &Counters,
) -> io::Result<()> {
    socket.set_read_timeout(Some(TICK))?;
    stamped::enable(socket)?;
    let mut buf = vec![0u8; MAX_LEN + 1];
    while !stopping(stop, deadline) {
        match stamped::receive(socket, &mut buf) {
            Ok(stamped::Received {
                len,
                from: Some(peer),
                queued_ns,
            }) => {
                let datagram = &mut buf[..len];
                Echo::write_held(datagram, queued_ns);
                // A failed echo is a lost reply, which the client counts as loss.
                let counter = match socket.send_to(datagram, peer) {
                    Ok(_) => &counters.echoed,
                    Err(_) => &counters.failed_echoes,
                };
                counter.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => {}
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionRefused
                ) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Waits up to `timeout` for `listener` to have a connection pending.
fn wait_for_connection(listener: &TcpListener, timeout: Duration) -> io::Result<bool> {
    let mut poll = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `poll` points at one valid pollfd for the duration of the call.
    let ready = unsafe { libc::poll(&mut poll, 1, timeout.as_millis() as libc::c_int) };
    if ready >= 0 {
        return Ok(ready > 0);
    }
    let error = io::Error::last_os_error();
    if error.kind() == io::ErrorKind::Interrupted {
        Ok(false)
    } else {
        Err(error)
    }
}

/// Accepts connections until stopped, each served on its own thread.
fn accept_tcp(
    listener: &TcpListener,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    counters: &Arc<Counters>,
) -> io::Result<()> {
    while !stopping(stop, deadline) {
        if !wait_for_connection(listener, TICK)? {
            continue;
        }
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            // The peer gave up between poll and accept: nothing to serve.
            Err(error) if error.kind() == io::ErrorKind::ConnectionAborted => continue,
            // Out of descriptors or memory: transient, but poll would report the same pending
            // connection at once, so pause instead of spinning.
            Err(_) => {
                thread::sleep(TICK);
                continue;
            }
        };
        if counters.active.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
            counters.refused.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        counters.connections.fetch_add(1, Ordering::Relaxed);
        let active = Active::enter(counters.clone());
        // If the thread cannot be spawned, the closure and `active` are dropped: the
        // connection is closed and no longer counted.
        let _ = thread::Builder::new()
            .name("probe-conn".into())
            .spawn(move || {
                // A connection's failure (a client gone, a bad command) concerns only it.
                let _ = handle_connection(&stream);
                drop(active);
            });
    }
    Ok(())
}

/// Serves one connection: reads its command line and sinks or sources.
fn handle_connection(stream: &TcpStream) -> io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    (&mut reader)
        .take(MAX_LINE as u64)
        .read_until(b'\n', &mut line)?;
    let command = match parse_command(&String::from_utf8_lossy(&line)) {
        Ok(command) => command,
        Err(error) => {
            let mut stream = stream;
            return stream.write_all(format!("ERR {error}\n").as_bytes());
        }
    };
    match command {
        Command::Sink { warmup_ns } => {
            let limit = Duration::from_secs_f64(protocol::MAX_SECONDS);
            let warmup = Duration::from_nanos(warmup_ns.unwrap_or(0));
            let meter = receive_until_eof(&mut reader, warmup, limit)?;
            let reply = SinkReply {
                total_bytes: meter.total_bytes(),
                window: warmup_ns.and(meter.window()),
            };
            let mut stream = stream;
            stream.write_all(format_sink_reply(&reply).as_bytes())
        }
        Command::Source { duration_ns } => {
            send_for(stream, Duration::from_nanos(duration_ns))?;
            Ok(())
        }
    }
}
