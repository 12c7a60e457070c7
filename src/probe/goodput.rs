//! `probe goodput`: one TCP flow to or from a `probe serve`, its goodput measured where the data
//! is received, over the interval after a warmup so TCP slow start is left out.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::protocol::{self, format_command, parse_sink_reply, Command, Window};
use super::rtt::invalid;
use super::tcp::{receive_until_eof, send_for, IO_TIMEOUT};

/// How long after the sender stops the receiver may still be draining queues (a full emulated
/// queue on a slow link) before the transfer is given up.
const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// Which way the data flows, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Server to client (`SOURCE`); the client measures.
    Download,
    /// Client to server (`SINK`); the server measures and reports back.
    Upload,
}

impl FromStr for Direction {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "download" => Ok(Direction::Download),
            "upload" => Ok(Direction::Upload),
            other => Err(format!(
                "unknown direction `{other}` (use download or upload)"
            )),
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Download => "download",
            Direction::Upload => "upload",
        })
    }
}

/// How to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct GoodputOptions {
    pub direction: Direction,
    /// The measured interval (after the warmup).
    pub duration: Duration,
    /// Time after the first byte that is left out of the measurement.
    pub warmup: Duration,
}

impl Default for GoodputOptions {
    fn default() -> Self {
        GoodputOptions {
            direction: Direction::Download,
            duration: Duration::from_secs(5),
            warmup: Duration::from_secs(1),
        }
    }
}

/// What `probe goodput` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoodputReport {
    pub target: String,
    pub direction: Direction,
    /// window_bytes × 8 / seconds, in 10⁶ bit/s.
    pub goodput_mbps: f64,
    /// Every byte the receiver got, warmup included.
    pub bytes: u64,
    /// Bytes received in the measured window.
    pub window_bytes: u64,
    /// Length of the measured window on the receiver's clock: from the warmup's end until the
    /// last byte, so about the requested seconds plus the time queues took to drain.
    pub seconds: f64,
    pub warmup_s: f64,
    /// Which end counted: `client` for downloads, `server` for uploads.
    pub measured_at: String,
    /// Bytes the client wrote (uploads only); equals `bytes` when the server saw them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<u64>,
}

/// Opens the flow's connection and sends its command line.
fn open(target: SocketAddr, command: &Command) -> io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&target, IO_TIMEOUT)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    (&stream).write_all(format_command(command).as_bytes())?;
    Ok(stream)
}

/// Downloads for warmup + duration and measures on arrival.
fn download(target: SocketAddr, opts: &GoodputOptions) -> io::Result<(u64, Window, Option<u64>)> {
    let total = opts.warmup + opts.duration;
    let stream = open(
        target,
        &Command::Source {
            duration_ns: total.as_nanos() as u64,
        },
    )?;
    let meter = receive_until_eof(&stream, opts.warmup, total + DRAIN_LIMIT)?;
    let window = meter
        .window()
        .ok_or_else(|| no_window(meter.total_bytes()))?;
    Ok((meter.total_bytes(), window, None))
}

/// Uploads for warmup + duration and reads the server's measurement.
fn upload(target: SocketAddr, opts: &GoodputOptions) -> io::Result<(u64, Window, Option<u64>)> {
    let stream = open(
        target,
        &Command::Sink {
            warmup_ns: Some(opts.warmup.as_nanos() as u64),
        },
    )?;
    let sent = send_for(&stream, opts.warmup + opts.duration)?;
    stream.shutdown(Shutdown::Write)?;
    // The server answers once the queues have drained and it has seen EOF.
    stream.set_read_timeout(Some(DRAIN_LIMIT))?;
    let mut line = Vec::new();
    BufReader::new(&stream)
        .take(protocol::MAX_LINE as u64)
        .read_until(b'\n', &mut line)?;
    let text = String::from_utf8_lossy(&line);
    let reply = parse_sink_reply(&text)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("server: {e}")))?;
    let window = reply.window.ok_or_else(|| no_window(reply.total_bytes))?;
    Ok((reply.total_bytes, window, Some(sent)))
}

/// The error of a transfer that ended before its warmup did.
fn no_window(bytes: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the transfer ended ({bytes} bytes) before the warmup did; nothing to measure"),
    )
}

/// Runs one TCP flow against `target` (a `probe serve`) and reports its goodput. Takes
/// warmup + duration plus the time queues take to drain; fails when the connection makes no
/// progress for `tcp::IO_TIMEOUT` (10 s).
pub fn measure_goodput(target: SocketAddr, opts: &GoodputOptions) -> io::Result<GoodputReport> {
    let limit = Duration::from_secs_f64(protocol::MAX_SECONDS);
    let total = opts.warmup.checked_add(opts.duration);
    if opts.duration.is_zero() || total.is_none_or(|total| total > limit) {
        return Err(invalid(format!(
            "warmup {:?} + duration {:?} must be above 0 and at most {limit:?}",
            opts.warmup, opts.duration
        )));
    }
    let (bytes, window, sent_bytes) = match opts.direction {
        Direction::Download => download(target, opts),
        Direction::Upload => upload(target, opts),
    }
    .map_err(|e| io::Error::new(e.kind(), format!("goodput with {target}: {e}")))?;
    Ok(GoodputReport {
        target: target.to_string(),
        direction: opts.direction,
        goodput_mbps: window.mbps(),
        bytes,
        window_bytes: window.bytes,
        seconds: window.ns as f64 / 1e9,
        warmup_s: opts.warmup.as_secs_f64(),
        measured_at: match opts.direction {
            Direction::Download => "client",
            Direction::Upload => "server",
        }
        .to_string(),
        sent_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_parse_and_print() {
        for direction in [Direction::Download, Direction::Upload] {
            assert_eq!(direction.to_string().parse(), Ok(direction));
        }
        assert!("sideways"
            .parse::<Direction>()
            .unwrap_err()
            .contains("`sideways`"));
    }
}
