//! A node's interfaces, addresses and routes, set over one rtnetlink socket from a thread inside
//! its namespace (`sys::in_netns`). One `ip -batch` process per namespace did the same, and at
//! 1000 nodes spawning those processes was most of `up`.

use super::sys::{err, Error, Result};
use std::fmt;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// One change, as `ip` would be told it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `link set IFNAME up`
    LinkUp { ifname: String },
    /// `addr add ADDR/LEN dev IFNAME`
    Addr {
        ifname: String,
        addr: Ipv4Addr,
        prefix_len: u8,
    },
    /// `route add DST/LEN via VIA dev IFNAME`
    Route {
        ifname: String,
        dst: Ipv4Addr,
        prefix_len: u8,
        via: Ipv4Addr,
    },
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::LinkUp { ifname } => write!(f, "link set {ifname} up"),
            Request::Addr {
                ifname,
                addr,
                prefix_len,
            } => write!(f, "addr add {addr}/{prefix_len} dev {ifname}"),
            Request::Route {
                ifname,
                dst,
                prefix_len,
                via,
            } => write!(f, "route add {dst}/{prefix_len} via {via} dev {ifname}"),
        }
    }
}

impl Request {
    fn ifname(&self) -> &str {
        match self {
            Request::LinkUp { ifname }
            | Request::Addr { ifname, .. }
            | Request::Route { ifname, .. } => ifname,
        }
    }
}

/// Struct sizes of the kernel's uapi: nlmsghdr, ifinfomsg, ifaddrmsg, rtmsg.
pub(super) const HEADER_LEN: usize = 16;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const NLMSG_ERROR: u16 = 2;
/// Requests per send: the kernel drops acknowledgements that overflow the socket's receive
/// buffer (about 200 KiB; each small reply costs up to 1 KiB of it), so 64 always fit.
const PER_SEND: usize = 64;

/// Applies `requests` in order in the calling thread's namespace; stops at the first the
/// kernel refuses, naming it and the reason (`route add …: File exists`).
pub fn apply(requests: &[Request]) -> Result<()> {
    let socket = open()?;
    for (chunk_index, chunk) in requests.chunks(PER_SEND).enumerate() {
        let mut buf = Vec::new();
        for (i, request) in chunk.iter().enumerate() {
            let index = interface_index(request.ifname())
                .map_err(|e| Error(format!("`{request}`: {e}")))?;
            // Sequence numbers count from 1 so a reply names its request.
            put_request(&mut buf, i as u32 + 1, request, index);
        }
        send(&socket, &buf)?;
        if let Some((seq, errno)) = read_acks(&socket, chunk.len())? {
            let request = &requests[chunk_index * PER_SEND + seq as usize - 1];
            return err(format!(
                "`{request}`: {}",
                std::io::Error::from_raw_os_error(errno)
            ));
        }
    }
    Ok(())
}

/// Appends the netlink message of `request` (on interface `index`), asking for an
/// acknowledgement, to `buf`.
fn put_request(buf: &mut Vec<u8>, seq: u32, request: &Request, index: u32) {
    let start = buf.len();
    let ask = (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16;
    let create = (libc::NLM_F_CREATE | libc::NLM_F_EXCL) as u16;
    let (kind, flags) = match request {
        Request::LinkUp { .. } => (libc::RTM_NEWLINK, ask),
        Request::Addr { .. } => (libc::RTM_NEWADDR, ask | create),
        Request::Route { .. } => (libc::RTM_NEWROUTE, ask | create),
    };
    buf.extend_from_slice(&0u32.to_ne_bytes()); // length, filled in below
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(&flags.to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills in ours
    match request {
        Request::LinkUp { .. } => {
            // ifinfomsg: family, pad, type, index, flags, change (only IFF_UP changes).
            buf.extend_from_slice(&[libc::AF_UNSPEC as u8, 0, 0, 0]);
            buf.extend_from_slice(&index.to_ne_bytes());
            buf.extend_from_slice(&(libc::IFF_UP as u32).to_ne_bytes());
            buf.extend_from_slice(&(libc::IFF_UP as u32).to_ne_bytes());
        }
        Request::Addr {
            addr, prefix_len, ..
        } => {
            // ifaddrmsg: family, prefix length, flags, scope (global), index.
            buf.extend_from_slice(&[libc::AF_INET as u8, *prefix_len, 0, 0]);
            buf.extend_from_slice(&index.to_ne_bytes());
            put_attr(buf, IFA_LOCAL, &addr.octets());
            put_attr(buf, IFA_ADDRESS, &addr.octets());
        }
        Request::Route {
            dst,
            prefix_len,
            via,
            ..
        } => {
            // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags: what
            // `ip route add` sends.
            buf.extend_from_slice(&[
                libc::AF_INET as u8,
                *prefix_len,
                0,
                0,
                libc::RT_TABLE_MAIN,
                libc::RTPROT_BOOT,
                libc::RT_SCOPE_UNIVERSE,
                libc::RTN_UNICAST,
            ]);
            buf.extend_from_slice(&0u32.to_ne_bytes());
            put_attr(buf, libc::RTA_DST, &dst.octets());
            put_attr(buf, libc::RTA_GATEWAY, &via.octets());
            put_attr(buf, libc::RTA_OIF, &index.to_ne_bytes());
        }
    }
    let len = (buf.len() - start) as u32;
    buf[start..start + 4].copy_from_slice(&len.to_ne_bytes());
}

/// Appends a route attribute; every payload here is a multiple of 4 bytes, so none needs
/// padding.
fn put_attr(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    buf.extend_from_slice(&(4 + payload.len() as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
}

/// Reads the acknowledgements of `count` requests; the first refusal as (sequence, errno).
fn read_acks(socket: &OwnedFd, count: usize) -> Result<Option<(u32, i32)>> {
    let mut acked = 0;
    let mut refused = None;
    let mut buf = vec![0u8; 64 * 1024];
    while acked < count {
        let n = recv(socket, &mut buf)?;
        for (seq, errno) in acks(&buf[..n])? {
            acked += 1;
            if errno != 0 && refused.is_none() {
                refused = Some((seq, errno));
            }
        }
    }
    Ok(refused)
}

/// Reads one datagram of replies into `buf`; its length.
pub(super) fn recv(socket: &OwnedFd, buf: &mut [u8]) -> Result<usize> {
    loop {
        // SAFETY: recv into a buffer we own, with its length.
        let n = unsafe { libc::recv(socket.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return err(format!("reading rtnetlink replies: {e}"));
        }
    }
}

/// The acknowledgements in a datagram: each request's sequence number and errno (0: done).
fn acks(datagram: &[u8]) -> Result<Vec<(u32, i32)>> {
    let mut found = Vec::new();
    let mut rest = datagram;
    while rest.len() >= HEADER_LEN {
        let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let kind = u16::from_ne_bytes([rest[4], rest[5]]);
        let seq = u32::from_ne_bytes([rest[8], rest[9], rest[10], rest[11]]);
        if len < HEADER_LEN || len > rest.len() {
            return err(format!("a malformed rtnetlink reply (length {len})"));
        }
        if kind == NLMSG_ERROR {
            let Some(errno) = rest.get(HEADER_LEN..HEADER_LEN + 4) else {
                return err("an rtnetlink error reply without its error code");
            };
            let errno = i32::from_ne_bytes([errno[0], errno[1], errno[2], errno[3]]);
            found.push((seq, errno.wrapping_neg()));
        }
        rest = &rest[(len + 3) & !3..];
    }
    Ok(found)
}

pub(super) fn interface_index(ifname: &str) -> Result<u32> {
    let name = std::ffi::CString::new(ifname)
        .map_err(|_| Error(format!("interface name `{ifname}` holds a NUL byte")))?;
    // SAFETY: if_nametoindex reads a NUL-terminated string we own.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => err(format!(
            "no interface {ifname}: {}",
            std::io::Error::last_os_error()
        )),
        index => Ok(index),
    }
}

pub(super) fn open() -> Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the socket belongs to the calling thread's namespace.
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if raw < 0 {
        return err(format!(
            "opening an rtnetlink socket: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: `raw` is a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Sends `buf` to the kernel in one datagram.
pub(super) fn send(socket: &OwnedFd, buf: &[u8]) -> Result<()> {
    // SAFETY: a zeroed sockaddr_nl with its family set addresses the kernel (port 0).
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    loop {
        // SAFETY: sendto with a buffer and an address we own, and their lengths.
        let n = unsafe {
            libc::sendto(
                socket.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                0,
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if n >= 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return err(format!("sending rtnetlink requests: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_is_the_message_ip_route_add_sends() {
        let route = Request::Route {
            ifname: "eth0".into(),
            dst: Ipv4Addr::new(198, 18, 0, 4),
            prefix_len: 30,
            via: Ipv4Addr::new(198, 18, 0, 2),
        };
        assert_eq!(
            route.to_string(),
            "route add 198.18.0.4/30 via 198.18.0.2 dev eth0"
        );
        let mut buf = Vec::new();
        put_request(&mut buf, 7, &route, 3);
        let mut expected = Vec::new();
        expected.extend_from_slice(&52u32.to_ne_bytes());
        expected.extend_from_slice(&24u16.to_ne_bytes());
        expected.extend_from_slice(&0x605u16.to_ne_bytes());
        expected.extend_from_slice(&7u32.to_ne_bytes());
        expected.extend_from_slice(&0u32.to_ne_bytes());
        expected.extend_from_slice(&[2, 30, 0, 0, 254, 3, 0, 1, 0, 0, 0, 0]);
        expected.extend_from_slice(&8u16.to_ne_bytes());
        expected.extend_from_slice(&1u16.to_ne_bytes());
        expected.extend_from_slice(&[198, 18, 0, 4]);
        expected.extend_from_slice(&8u16.to_ne_bytes());
        expected.extend_from_slice(&5u16.to_ne_bytes());
        expected.extend_from_slice(&[198, 18, 0, 2]);
        expected.extend_from_slice(&8u16.to_ne_bytes());
        expected.extend_from_slice(&4u16.to_ne_bytes());
        expected.extend_from_slice(&3u32.to_ne_bytes());
        assert_eq!(buf, expected);
    }

    #[test]
    fn addresses_and_links_carry_their_interface() {
        let mut buf = Vec::new();
        let addr = Request::Addr {
            ifname: "eth1".into(),
            addr: Ipv4Addr::new(198, 18, 0, 5),
            prefix_len: 30,
        };
        put_request(&mut buf, 1, &addr, 9);
        assert_eq!(buf.len(), HEADER_LEN + 8 + 2 * 8);
        assert_eq!(&buf[HEADER_LEN..HEADER_LEN + 8], [2, 30, 0, 0, 9, 0, 0, 0]);
        let link = Request::LinkUp {
            ifname: "lo".into(),
        };
        assert_eq!(link.to_string(), "link set lo up");
        let mut buf = Vec::new();
        put_request(&mut buf, 2, &link, 1);
        assert_eq!(buf.len(), HEADER_LEN + 16);
        assert_eq!(&buf[HEADER_LEN + 4..HEADER_LEN + 8], 1u32.to_ne_bytes());
    }

    fn error_reply(seq: u32, errno: i32) -> Vec<u8> {
        let mut reply = Vec::new();
        reply.extend_from_slice(&36u32.to_ne_bytes());
        reply.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        reply.extend_from_slice(&0u16.to_ne_bytes());
        reply.extend_from_slice(&seq.to_ne_bytes());
        reply.extend_from_slice(&0u32.to_ne_bytes());
        reply.extend_from_slice(&(-errno).to_ne_bytes());
        reply.extend_from_slice(&[0; 16]);
        reply
    }

    #[test]
    fn replies_give_each_requests_outcome_and_malformed_ones_are_errors() {
        let mut datagram = error_reply(1, 0);
        datagram.extend(error_reply(2, libc::EEXIST));
        assert_eq!(acks(&datagram).unwrap(), [(1, 0), (2, libc::EEXIST)]);
        assert!(acks(&datagram[..20]).is_err());
        let mut short = error_reply(3, 0);
        short[..4].copy_from_slice(&8u32.to_ne_bytes());
        assert!(acks(&short).is_err());
    }
}
