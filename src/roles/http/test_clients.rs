//! Raw HTTP/1 clients for the servers' tests: ones that misbehave as no library client would.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Whether the server closes (or resets) `stream` within `limit`; what it sends is skipped.
pub async fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    bytes_until_closed(stream, limit).await.is_some()
}

/// How many bytes `stream` brought before the server closed (or reset) it, if it did within
/// `limit`.
pub async fn bytes_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<usize> {
    let mut taken = 0;
    let mut buffer = vec![0u8; 1 << 16];
    let read = tokio::time::timeout(limit, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => taken += n,
            }
        }
    });
    read.await.ok().map(|()| taken)
}

/// Sends a request head to `addr` one byte every 50 ms, as a slow-loris client does, never
/// finishing it; how long the server kept the connection, or `None` if it kept it through
/// 200 bytes (10 s).
pub async fn trickle_until_closed(addr: SocketAddr) -> Option<Duration> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    let started = Instant::now();
    let head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    for byte in head.iter().chain(std::iter::repeat(&b'a')).take(200) {
        if stream.write_all(&[*byte]).await.is_err()
            || closed_within(&mut stream, Duration::from_millis(50)).await
        {
            return Some(started.elapsed());
        }
    }
    None
}

/// Sets TCP socket `socket`'s congestion control (root may choose any the kernel has, others
/// those on net.ipv4.tcp_allowed_congestion_control).
pub fn set_congestion_control(
    socket: &impl std::os::fd::AsRawFd,
    name: &str,
) -> std::io::Result<()> {
    // SAFETY: a valid buffer and length on an open descriptor.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
