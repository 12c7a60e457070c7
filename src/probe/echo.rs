//! The socket side of an echo session: paced UDP pings to a `probe serve`, replies read as they
//! come, late ones awaited for a bounded time. `rtt` and `stream` are this loop with different
//! pacing; `EchoLog` does all the bookkeeping.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use netem::units::format_duration_ns;

use super::echo_log::{EchoLog, Reply};
use super::packet::{Echo, HEADER_LEN, MAX_LEN};
use super::sockopt::enlarge_udp_buffers;
use super::stamped;

/// How often `wait_for_echo` retries.
const RETRY_INTERVAL_NS: u64 = 100_000_000;

/// A fresh session id. std's per-process random hash keys serve (each `RandomState` differs):
/// the id only has to tell this session's replies from another's.
fn session_id() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::process::id())
}

/// What to send: `count` pings of `size` bytes, ping `k` due `k × interval_ns` after the start.
#[derive(Debug, Clone, Copy)]
pub struct EchoPlan {
    pub count: u64,
    pub interval_ns: u64,
    pub size: usize,
}

/// A UDP socket of the target's address family, connected to it so that only its datagrams
/// arrive and ICMP errors surface, with the kernel's receive stamps on.
fn connected_socket(target: SocketAddr) -> io::Result<UdpSocket> {
    let local: SocketAddr = if target.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(local)?;
    enlarge_udp_buffers(&socket)?;
    stamped::enable(&socket)?;
    socket.connect(target)?;
    Ok(socket)
}

/// Errors that report an ICMP message about an earlier datagram (nobody listening yet, no
/// route for a moment): the ping they hit is lost, the session goes on.
fn is_icmp_report(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
    )
}

/// Sends one datagram; an ICMP report pending on the socket may make the first try fail, so an
/// ICMP error is retried once and then taken as a lost ping.
fn send(socket: &UdpSocket, datagram: &[u8]) -> io::Result<()> {
    for _ in 0..2 {
        match socket.send(datagram) {
            Ok(_) => return Ok(()),
            Err(error) if is_icmp_report(&error) => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Waits up to `timeout` for one datagram, hands it to `log` with how long it waited in the
/// socket, and returns the RTT if it was a fresh reply. A timeout or ICMP report is not an
/// error: it simply brings nothing.
fn receive(
    socket: &UdpSocket,
    buf: &mut [u8],
    timeout: Duration,
    log: &mut EchoLog,
    now_ns: impl Fn() -> u64,
) -> io::Result<Option<u64>> {
    // A zero timeout means "block forever" to the socket; wait at least a microsecond.
    socket.set_read_timeout(Some(timeout.max(Duration::from_micros(1))))?;
    match stamped::receive(socket, buf) {
        Ok(received) => Ok(
            match Echo::read(&buf[..received.len])
                .map(|echo| log.on_reply(echo, now_ns(), received.queued_ns))
            {
                Some(Reply::Fresh { rtt_ns }) => Some(rtt_ns),
                _ => None,
            },
        ),
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) || is_icmp_report(&error) =>
        {
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// Names the target in an I/O error.
fn about(target: SocketAddr, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("echo to {target}: {error}"))
}

/// Runs one session against `target` and returns its log. Pings follow the plan's schedule (a
/// ping delayed by the scheduler is sent as soon as possible, keeping the average rate);
/// replies are read between sends; after the last send the loop waits for outstanding replies
/// until `EchoLog::drain_wait_ns` has passed or none is outstanding.
pub fn run_session(target: SocketAddr, plan: &EchoPlan) -> io::Result<EchoLog> {
    let socket = connected_socket(target).map_err(|e| about(target, e))?;
    let start = Instant::now();
    let now_ns = || start.elapsed().as_nanos() as u64;
    let mut log = EchoLog::new(session_id());
    let mut datagram = vec![0u8; plan.size];
    let mut buf = vec![0u8; MAX_LEN + 1];
    let mut last_send_ns = 0;
    loop {
        let now = now_ns();
        let wait_until = if log.sent() < plan.count {
            let due = log.sent().saturating_mul(plan.interval_ns);
            if now >= due {
                log.on_send(now).write(&mut datagram);
                send(&socket, &datagram).map_err(|e| about(target, e))?;
                last_send_ns = now;
                continue;
            }
            due
        } else {
            let end = last_send_ns.saturating_add(log.drain_wait_ns());
            if log.all_answered() || now >= end {
                return Ok(log);
            }
            end
        };
        let timeout = Duration::from_nanos(wait_until - now);
        receive(&socket, &mut buf, timeout, &mut log, now_ns).map_err(|e| about(target, e))?;
    }
}

/// Pings `target` every 100 ms until one reply comes back and returns its RTT; fails with
/// `TimedOut` after `timeout` without any. Used to wait for a server that is still starting.
pub fn wait_for_echo(target: SocketAddr, timeout: Duration) -> io::Result<Duration> {
    let socket = connected_socket(target).map_err(|e| about(target, e))?;
    let start = Instant::now();
    let now_ns = || start.elapsed().as_nanos() as u64;
    let deadline_ns = timeout.as_nanos() as u64;
    let mut log = EchoLog::new(session_id());
    let mut datagram = vec![0u8; HEADER_LEN];
    let mut buf = vec![0u8; MAX_LEN + 1];
    let mut next_send_ns = 0;
    loop {
        let now = now_ns();
        if now >= deadline_ns {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no echo from {target} within {}",
                    format_duration_ns(timeout.as_nanos() as u64)
                ),
            ));
        }
        if now >= next_send_ns {
            log.on_send(now).write(&mut datagram);
            send(&socket, &datagram).map_err(|e| about(target, e))?;
            next_send_ns = now + RETRY_INTERVAL_NS;
            continue;
        }
        let timeout = Duration::from_nanos(next_send_ns.min(deadline_ns) - now);
        if let Some(rtt_ns) =
            receive(&socket, &mut buf, timeout, &mut log, now_ns).map_err(|e| about(target, e))?
        {
            return Ok(Duration::from_nanos(rtt_ns));
        }
    }
}
