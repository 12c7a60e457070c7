//! A packet socket (AF_PACKET) on one interface that reads the frames the interface receives,
//! each with the kernel's receive timestamp: the moment the receiver got the frame, which is
//! after the link's emulation on both backends.

use crate::probe::sockopt::set_int;
use crate::probe::stamped::{now_unix_ns, receive_message};
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

/// `linux/if_packet.h`: a packet socket option that keeps the frames an interface sends out of
/// the socket's queue.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// Frames an interface sent that `try_receive` skips in one call before it says none is queued.
const MAX_SKIPPED: usize = 64;

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
        // Only arrivals are wanted: frames the interface sends are not queued at all (Linux
        // 4.20 on; before, `try_receive` skips them).
        let _ = set_int(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1);
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

    /// Reads the next frame the interface received, without waiting: `Ok(None)` when none is
    /// queued. A packet socket sees both ways; frames the interface sent are skipped here (up
    /// to `MAX_SKIPPED` a call, so a busy sender cannot keep it here), not returned as `None`
    /// at once, which the caller would take for an empty queue.
    pub fn try_receive(&self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        for _ in 0..MAX_SKIPPED {
            // SAFETY: plain data, zero is a valid start.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            // MSG_TRUNC makes a packet socket return the frame's full length.
            let received = receive_message(
                self.raw_fd(),
                buf,
                &mut from,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            );
            let (len, stamp) = match received {
                Ok(received) => received,
                Err(error) => {
                    return match error.kind() {
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                        _ => Err(io::Error::new(
                            error.kind(),
                            format!("reading a frame: {error}"),
                        )),
                    }
                }
            };
            if from.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            return Ok(Some(Received {
                unix_ns: stamp.unwrap_or_else(now_unix_ns),
                captured: len.min(buf.len()),
                original_len: len,
            }));
        }
        Ok(None)
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
