//! A packet socket (AF_PACKET) on one interface that reads the frames the interface receives,
//! each with the kernel's receive timestamp: the moment the receiver got the frame, which is
//! after the link's emulation on both backends.

use crate::probe::sockopt::set_int;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// One frame read: when it was received (ns since the epoch) and its length on the wire (the
/// buffer holds at most the buffer's length of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    pub unix_ns: u64,
    pub captured: usize,
    pub original_len: usize,
}

/// A packet socket bound to one interface of the namespace it was opened in. The socket keeps
/// that namespace, so it may be read from any thread afterwards.
pub struct PacketSocket {
    fd: OwnedFd,
}

fn last_error(what: &str) -> io::Error {
    let error = io::Error::last_os_error();
    io::Error::new(error.kind(), format!("{what}: {error}"))
}

impl PacketSocket {
    /// Opens a socket on `ifname` of the calling thread's network namespace that reads every
    /// frame the interface receives, stamped with CLOCK_REALTIME in ns.
    pub fn open(ifname: &str) -> io::Result<PacketSocket> {
        let name = CString::new(ifname).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "an interface name with NUL")
        })?;
        // SAFETY: a NUL-terminated string.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            return Err(last_error(&format!("interface {ifname}")));
        }
        let protocol = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::c_int::from(protocol),
            )
        };
        if raw < 0 {
            return Err(last_error("packet socket"));
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        set_int(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        // A burst at 1 Gbit/s must not overflow the socket while the loop writes the file.
        set_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, 8 << 20)?;
        // SAFETY: sockaddr_ll is plain data; zero is a valid start.
        let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        address.sll_family = libc::AF_PACKET as u16;
        address.sll_protocol = protocol;
        address.sll_ifindex = index as i32;
        // SAFETY: the address is a sockaddr_ll of the size given.
        let rc = unsafe {
            libc::bind(
                raw,
                (&address as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(last_error(&format!("binding to {ifname}")));
        }
        Ok(PacketSocket { fd })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Reads one frame without waiting: `Ok(None)` when nothing is queued, or when the frame
    /// was one the interface sent (a packet socket sees both ways; only arrivals are wanted).
    pub fn try_receive(&self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        // SAFETY (all three): plain data, zero is a valid start.
        let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
        message.msg_name = (&mut from as *mut libc::sockaddr_ll).cast();
        message.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: every pointer in `message` points at live buffers of the lengths given.
        // MSG_TRUNC makes a packet socket return the frame's full length.
        let len = unsafe {
            libc::recvmsg(
                self.raw_fd(),
                &mut message,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            )
        };
        if len < 0 {
            let error = io::Error::last_os_error();
            return match error.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(io::Error::new(
                    error.kind(),
                    format!("reading a frame: {error}"),
                )),
            };
        }
        if from.sll_pkttype == libc::PACKET_OUTGOING {
            return Ok(None);
        }
        let original_len = len as usize;
        Ok(Some(Received {
            unix_ns: receive_stamp(&message).unwrap_or_else(now_unix_ns),
            captured: original_len.min(buf.len()),
            original_len,
        }))
    }

    /// Frames the kernel dropped because this socket's buffer was full, since the last call.
    pub fn drops(&self) -> u64 {
        // SAFETY: tpacket_stats is plain data filled by getsockopt up to `len` bytes.
        let mut stats: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        let rc = unsafe {
            libc::getsockopt(
                self.raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut stats as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            u64::from(stats.tp_drops)
        } else {
            0
        }
    }
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

fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
