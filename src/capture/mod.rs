//! Packet captures of emulated links: each direction's frames read where its receiver gets
//! them (a packet socket on the receiver's interface, in the receiver's namespace), so the
//! timestamps show the link's delay, jitter and rate as the receiver lived them, with either
//! link backend; frames the link dropped never arrive and are not in the file.

mod packet_socket;
mod pcap;

pub use packet_socket::PacketSocket;
pub use pcap::{PcapWriter, SNAPLEN};

use std::io::{self, Write};
use std::time::{Duration, Instant};

/// One direction to capture: what it is called and the socket on its receiver's interface.
pub struct Tap {
    /// `A→B`.
    pub label: String,
    pub socket: PacketSocket,
}

/// When to stop, besides being told to.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// Stop after this many frames in all.
    pub count: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
}

/// Why a capture ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Count,
    Duration,
    /// `keep_going` said no: interrupted, or the lab went away.
    Stopped,
}

/// What a capture wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureSummary {
    /// Frames written per tap, in the taps' order.
    pub frames: Vec<u64>,
    /// Frames the kernel dropped because a socket's buffer was full (not the link's drops).
    pub socket_drops: u64,
    pub ended: Ended,
}

/// How long one wait for frames lasts before the limits are checked again, and how often
/// `keep_going` (which looks at the file system) is asked: not once per busy wake-up.
const POLL_MS: libc::c_int = 200;
/// The most frames read from one socket before the others get their turn.
const BURST: usize = 512;

/// Reads the taps' frames into `out` as pcap until a limit is reached or `keep_going` says no.
/// The frames read in one wake-up are written in the order the receivers got them.
pub fn capture(
    taps: &[Tap],
    out: impl Write,
    limits: Limits,
    keep_going: impl Fn() -> bool,
) -> io::Result<CaptureSummary> {
    let mut writer = PcapWriter::new(out)?;
    let mut frames = vec![0u64; taps.len()];
    let mut written = 0u64;
    let start = Instant::now();
    let mut asked_at: Option<Instant> = None;
    let mut buf = vec![0u8; SNAPLEN];
    // The frames of one wake-up: bytes one after another, and (stamp, tap, start, captured,
    // original length) for each.
    let mut arena: Vec<u8> = Vec::new();
    let mut batch: Vec<(u64, usize, usize, usize, usize)> = Vec::new();
    let mut poll_fds: Vec<libc::pollfd> = taps
        .iter()
        .map(|t| libc::pollfd {
            fd: t.socket.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ended = loop {
        if limits.count.is_some_and(|n| written >= n) {
            break Ended::Count;
        }
        let elapsed = start.elapsed();
        if limits.duration.is_some_and(|d| elapsed >= d) {
            break Ended::Duration;
        }
        if asked_at.is_none_or(|t| t.elapsed() >= Duration::from_millis(POLL_MS as u64)) {
            if !keep_going() {
                break Ended::Stopped;
            }
            asked_at = Some(Instant::now());
        }
        let wait_ms = limits.duration.map_or(POLL_MS, |d| {
            // Clamped before the cast: a long --duration must not wrap to poll's "forever".
            (d - elapsed).as_millis().clamp(1, POLL_MS as u128) as libc::c_int
        });
        // SAFETY: `poll_fds` is a live array of `len` pollfds.
        let rc = unsafe {
            libc::poll(
                poll_fds.as_mut_ptr(),
                poll_fds.len() as libc::nfds_t,
                wait_ms,
            )
        };
        if rc <= 0 {
            continue; // a timeout, or a signal (keep_going decides)
        }
        arena.clear();
        batch.clear();
        for (index, tap) in taps.iter().enumerate() {
            for _ in 0..BURST {
                let Some(frame) = tap.socket.try_receive(&mut buf)? else {
                    break;
                };
                batch.push((
                    frame.unix_ns,
                    index,
                    arena.len(),
                    frame.captured,
                    frame.original_len,
                ));
                arena.extend_from_slice(&buf[..frame.captured]);
            }
        }
        batch.sort_by_key(|&(stamp, ..)| stamp);
        for &(stamp, index, at, captured, original_len) in &batch {
            if limits.count.is_some_and(|n| written >= n) {
                break;
            }
            writer.write_packet(stamp, &arena[at..at + captured], original_len)?;
            frames[index] += 1;
            written += 1;
        }
        writer.flush()?;
    };
    writer.flush()?;
    Ok(CaptureSummary {
        frames,
        socket_drops: taps.iter().map(|t| t.socket.drops()).sum(),
        ended,
    })
}
