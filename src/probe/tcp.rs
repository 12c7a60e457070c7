//! The two ends of a goodput flow, shared by the client (`goodput`) and the server: send as fast
//! as possible for a while, or read until EOF through a `WindowMeter`.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::meter::WindowMeter;
use super::sockopt::limit_unsent;

/// Bytes per write and read: large enough that system calls cost little at 10 Gbit/s, small
/// enough that one blocked write on a slow link overshoots the send time by little.
pub const CHUNK: usize = 64 * 1024;

/// How long a connection may make no progress before it is given up.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Turns a read or write timeout into an error that says what happened.
fn stalled(error: io::Error) -> io::Error {
    if matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    ) {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the connection made no progress for {} s",
                IO_TIMEOUT.as_secs()
            ),
        )
    } else {
        error
    }
}

/// Writes filler as fast as the connection takes it until `duration` has passed and returns the
/// bytes written. A write blocked for `IO_TIMEOUT` is an error.
pub fn send_for(mut stream: &TcpStream, duration: Duration) -> io::Result<u64> {
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    limit_unsent(stream)?;
    let filler = vec![0x5Au8; CHUNK];
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < duration {
        match stream.write(&filler) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => sent += written as u64,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(stalled(error)),
        }
    }
    Ok(sent)
}

/// Reads until EOF (or `limit` has passed since the first read), feeding a meter whose window
/// opens `warmup` after the first byte. The caller sets the socket's read timeout (normally
/// `IO_TIMEOUT`); a read that times out is an error.
pub fn receive_until_eof(
    mut reader: impl Read,
    warmup: Duration,
    limit: Duration,
) -> io::Result<WindowMeter> {
    let mut meter = WindowMeter::new(warmup.as_nanos() as u64);
    let mut buf = vec![0u8; CHUNK];
    let start = Instant::now();
    while start.elapsed() < limit {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(read) => meter.on_bytes(start.elapsed().as_nanos() as u64, read as u64),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(stalled(error)),
        }
    }
    Ok(meter)
}
