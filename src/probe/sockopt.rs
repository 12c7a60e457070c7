//! The two socket options std does not expose that the probe needs.

use std::io;
use std::net::{TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

/// Unsent bytes a TCP sender keeps queued in the kernel (TCP_NOTSENT_LOWAT). Without this limit
/// the send buffer autotunes to megabytes, which on a slow emulated link takes many seconds to
/// drain after the sender has stopped; with it only the congestion window's worth is in flight.
const UNSENT_LIMIT: libc::c_int = 128 * 1024;

/// UDP socket buffer asked for (the kernel caps it at net.core.rmem_max / wmem_max). The
/// default (about 200 KiB, some 90 full-size datagrams) overflows when a thread is descheduled
/// for a few milliseconds during a fast stream, and the probe would measure its own drops.
const UDP_BUFFER: libc::c_int = 4 * 1024 * 1024;

/// Sets an integer socket option of `fd`.
pub fn set_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `fd` is a live socket owned by the caller's socket object, and the option value
    // is a c_int whose size is passed alongside its address.
    let result = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Caps the unsent data queued on `stream`.
pub fn limit_unsent(stream: &TcpStream) -> io::Result<()> {
    set_int(
        stream.as_raw_fd(),
        libc::IPPROTO_TCP,
        libc::TCP_NOTSENT_LOWAT,
        UNSENT_LIMIT,
    )
}

/// Enlarges a UDP socket's receive and send buffers (up to the system's maximum).
pub fn enlarge_udp_buffers(socket: &UdpSocket) -> io::Result<()> {
    set_int(
        socket.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_RCVBUF,
        UDP_BUFFER,
    )?;
    set_int(
        socket.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_SNDBUF,
        UDP_BUFFER,
    )
}
