//! Datagrams read with the kernel's receive stamp (SO_TIMESTAMPNS), so the probe can take its
//! own wake-ups out of what it measures.
//!
//! A datagram that has arrived waits in the socket until its reader runs; on a VM whose idle
//! vCPU halts, that wake-up alone can take a few hundred microseconds at the tail. That wait is
//! the reader's, not the path's: `ping` reads the kernel's stamp for the same reason. The echo
//! server reports how long it held each ping (stamp to send) and the client subtracts it and
//! its own wait, as TWAMP's reflector reports its receive and send times (RFC 5357).

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use super::sockopt::set_int;
use crate::container::links::stamps_precede_the_hold;

/// One datagram read: its length, its sender, and how long it waited in the socket between
/// the kernel's receive stamp and the read's return (0 when the kernel gave no stamp). The
/// kernel turns arrival stamps on for the whole machine lazily, when the first socket asks (a
/// lab's shaper asks at its start); a datagram that arrived before then is stamped at the read,
/// so its wait reads as about 0 and the probe counts its own wake-up for it, as it always did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    pub len: usize,
    pub from: Option<SocketAddr>,
    pub queued_ns: u64,
}

/// Asks the kernel to stamp every datagram `socket` receives, where its stamps follow the link
/// emulation's hold. In a container whose userspace shaper holds arrivals on its own ingress,
/// a stamp precedes the hold (`stamps_precede_the_hold`), so the stamps stay off there and the
/// probe's reads are timed by its own clock: its wake-ups count, the links' whole delay does.
pub fn enable(socket: &UdpSocket) -> io::Result<()> {
    if stamps_precede_the_hold() {
        return Ok(());
    }
    set_int(
        socket.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPNS,
        1,
    )
}

/// Reads one datagram into `buf` as `recv_from` would (blocking up to the socket's read
/// timeout), with its sender and how long it waited in the socket.
pub fn receive(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<Received> {
    // SAFETY: plain data, zero is a valid start.
    let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let (len, stamp) = receive_message(socket.as_raw_fd(), buf, &mut from, 0)?;
    Ok(Received {
        len,
        from: socket_addr(&from),
        queued_ns: stamp.map_or(0, |stamp| now_unix_ns().saturating_sub(stamp)),
    })
}

/// A C socket address type that recvmsg(2) may fill with any bytes.
///
/// # Safety
/// Every bit pattern of the type must be valid (plain C data).
pub unsafe trait SocketAddress {}

// SAFETY: both are plain C structs of integers and byte arrays.
unsafe impl SocketAddress for libc::sockaddr_storage {}
unsafe impl SocketAddress for libc::sockaddr_ll {}

/// recvmsg(2) on `fd` with `flags`: the message's length (with MSG_TRUNC, its whole length even
/// when `buf` held less), its sender written into `from` (a sockaddr type of the socket's
/// family) and the kernel's receive stamp in ns since the epoch, if the socket asked for one.
pub fn receive_message<Address: SocketAddress>(
    fd: RawFd,
    buf: &mut [u8],
    from: &mut Address,
    flags: libc::c_int,
) -> io::Result<(usize, Option<u64>)> {
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: plain data, zero is a valid start.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_name = (from as *mut Address).cast();
    message.msg_namelen = std::mem::size_of::<Address>() as libc::socklen_t;
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: every pointer in `message` points at live buffers of the lengths given.
    let len = unsafe { libc::recvmsg(fd, &mut message, flags) };
    if len < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((len as usize, receive_stamp(&message)))
}

/// The SO_TIMESTAMPNS control message of a received message, in ns since the epoch.
fn receive_stamp(message: &libc::msghdr) -> Option<u64> {
    // SAFETY: the CMSG macros walk the control buffer `message` describes, which recvmsg
    // filled; each header they return lies inside it.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET
                && (*header).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let stamp: libc::timespec =
                    std::ptr::read_unaligned(libc::CMSG_DATA(header).cast());
                return Some(stamp.tv_sec as u64 * 1_000_000_000 + stamp.tv_nsec as u64);
            }
            header = libc::CMSG_NXTHDR(message, header);
        }
    }
    None
}

/// CLOCK_REALTIME in ns since the epoch, the clock of the kernel's receive stamps.
pub fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// An IPv4 or IPv6 socket address as recvmsg wrote it; `None` for any other family.
fn socket_addr(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in, which it is large
            // enough for and aligned to.
            let v4 =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr)),
                u16::from_be(v4.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let v6 = unsafe {
                &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(v6.sin6_addr.s6_addr),
                u16::from_be(v6.sin6_port),
                v6.sin6_flowinfo,
                v6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}
