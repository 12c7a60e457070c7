//! The kernel's counters of a namespace's root qdiscs — what `tc -s qdisc show` prints: bytes
//! and packets sent, drops, the packets queued — read over rtnetlink (an RTM_GETQDISC dump) on
//! a socket opened inside the namespace and kept, so a sample costs one request per namespace
//! and starts no process. The kernel backend's link counters (`cdnlab web`, `links.jsonl`).

use super::rtnetlink::{self, HEADER_LEN};
use super::sys::{self, err, Result};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};

/// A root qdisc's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QdiscStats {
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
    /// Packets queued now.
    pub qlen: u64,
}

/// Some interfaces of one namespace whose root qdiscs are read.
pub struct Namespace {
    socket: OwnedFd,
    indices: Vec<u32>,
    seq: u32,
    /// Where the dump's datagrams are read, kept between samples.
    buf: Vec<u8>,
}

/// How long a dump may take to answer before the sample is given up.
const ANSWER_WITHIN: libc::timeval = libc::timeval {
    tv_sec: 1,
    tv_usec: 0,
};

const NLMSG_DONE: u16 = 3;
const NLMSG_ERROR: u16 = 2;
/// The size of `struct tcmsg`: family, two pads, ifindex, handle, parent, info.
const TCMSG_LEN: usize = 20;
/// `TC_H_ROOT`: the parent of a root qdisc.
const ROOT: u32 = u32::MAX;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;
const TCA_STATS_PKT64: u16 = 8;

impl Namespace {
    /// Opens the socket in namespace `netns` (by its /run/netns name) and finds `ifnames`
    /// there.
    pub fn open(netns: &str, ifnames: &[String]) -> Result<Namespace> {
        let names = ifnames.to_vec();
        let (socket, indices) = sys::in_netns(netns, move || {
            let socket = rtnetlink::open()?;
            // SAFETY: setsockopt with a timeval we own and its size.
            let rc = unsafe {
                libc::setsockopt(
                    socket.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_RCVTIMEO,
                    (&ANSWER_WITHIN as *const libc::timeval).cast(),
                    std::mem::size_of::<libc::timeval>() as libc::socklen_t,
                )
            };
            if rc != 0 {
                return err(format!(
                    "a timeout on the rtnetlink socket: {}",
                    std::io::Error::last_os_error()
                ));
            }
            let indices = names
                .iter()
                .map(|name| rtnetlink::interface_index(name))
                .collect::<Result<Vec<u32>>>()?;
            Ok((socket, indices))
        })
        .map_err(|e| sys::Error(format!("namespace {netns}: {e}")))?;
        Ok(Namespace {
            socket,
            indices,
            seq: 0,
            buf: vec![0u8; 64 * 1024],
        })
    }

    /// The root qdisc's counters of each interface, in the order they were named (`None`: the
    /// kernel listed no root qdisc for it).
    pub fn read(&mut self) -> Result<Vec<Option<QdiscStats>>> {
        self.seq = self.seq.wrapping_add(1);
        rtnetlink::send(&self.socket, &dump_request(self.seq))?;
        let mut roots = HashMap::new();
        // A dump an earlier read gave up on may still arrive: its messages carry its own
        // sequence number and are skipped.
        loop {
            let n = rtnetlink::recv(&self.socket, &mut self.buf)?;
            if parse_dump(&self.buf[..n], self.seq, &mut roots)? {
                break;
            }
        }
        Ok(self.indices.iter().map(|i| roots.get(i).copied()).collect())
    }
}

/// An RTM_GETQDISC dump request (all qdiscs of the namespace) with sequence number `seq`.
fn dump_request(seq: u32) -> Vec<u8> {
    let len = (HEADER_LEN + TCMSG_LEN) as u32;
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    let mut buf = Vec::with_capacity(len as usize);
    buf.extend_from_slice(&len.to_ne_bytes());
    buf.extend_from_slice(&libc::RTM_GETQDISC.to_ne_bytes());
    buf.extend_from_slice(&flags.to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes());
    buf.extend_from_slice(&[0u8; TCMSG_LEN]);
    buf
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The attributes (type without its flag bits, payload) packed in `bytes`.
fn attributes(mut bytes: &[u8]) -> Vec<(u16, &[u8])> {
    let mut found = Vec::new();
    while bytes.len() >= 4 {
        let len = u16::from_ne_bytes([bytes[0], bytes[1]]) as usize;
        let kind = u16::from_ne_bytes([bytes[2], bytes[3]]) & 0x3fff;
        if len < 4 || len > bytes.len() {
            break;
        }
        found.push((kind, &bytes[4..len]));
        bytes = bytes.get((len + 3) & !3..).unwrap_or(&[]);
    }
    found
}

/// A qdisc message's interface and counters, if it is a root qdisc's.
fn root_stats(message: &[u8]) -> Option<(u32, QdiscStats)> {
    let tcmsg = message.get(HEADER_LEN..HEADER_LEN + TCMSG_LEN)?;
    let ifindex = u32_at(tcmsg, 4)?;
    if u32_at(tcmsg, 12)? != ROOT {
        return None;
    }
    let mut stats = QdiscStats::default();
    let stats2 = attributes(&message[HEADER_LEN + TCMSG_LEN..])
        .into_iter()
        .find(|(kind, _)| *kind == libc::TCA_STATS2)?
        .1;
    let mut packets64 = None;
    for (kind, payload) in attributes(stats2) {
        match kind {
            TCA_STATS_BASIC => {
                stats.bytes = u64_at(payload, 0)?;
                stats.packets = u64::from(u32_at(payload, 8)?);
            }
            TCA_STATS_QUEUE => {
                stats.qlen = u64::from(u32_at(payload, 0)?);
                stats.drops = u64::from(u32_at(payload, 8)?);
            }
            TCA_STATS_PKT64 => packets64 = u64_at(payload, 0),
            _ => {}
        }
    }
    stats.packets = packets64.unwrap_or(stats.packets);
    Some((ifindex, stats))
}

/// Adds the root qdiscs of one datagram of the dump answering `seq` to `roots`; whether the
/// dump is done.
fn parse_dump(datagram: &[u8], seq: u32, roots: &mut HashMap<u32, QdiscStats>) -> Result<bool> {
    let mut rest = datagram;
    while rest.len() >= HEADER_LEN {
        let len = u32_at(rest, 0).unwrap_or(0) as usize;
        let kind = u16::from_ne_bytes([rest[4], rest[5]]);
        if len < HEADER_LEN || len > rest.len() {
            return err(format!("a malformed qdisc dump message (length {len})"));
        }
        let message = &rest[..len];
        if u32_at(message, 8) == Some(seq) {
            match kind {
                NLMSG_DONE => return Ok(true),
                NLMSG_ERROR => {
                    // The kernel's negative errno; 0 is an acknowledgement, which ends it too.
                    let errno =
                        u32_at(message, HEADER_LEN).map_or(0, |e| (e as i32).wrapping_neg());
                    if errno == 0 {
                        return Ok(true);
                    }
                    return err(format!(
                        "the qdisc dump: {}",
                        std::io::Error::from_raw_os_error(errno)
                    ));
                }
                libc::RTM_NEWQDISC => roots.extend(root_stats(message)),
                _ => {}
            }
        }
        rest = rest.get((len + 3) & !3..).unwrap_or(&[]);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attribute(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&(4 + payload.len() as u16).to_ne_bytes());
        bytes.extend_from_slice(&kind.to_ne_bytes());
        bytes.extend_from_slice(payload);
        while bytes.len() % 4 != 0 {
            bytes.push(0);
        }
        bytes
    }

    /// An RTM_NEWQDISC message as the kernel sends it: tcmsg, the kind, TCA_STATS2 with the
    /// basic and queue counters.
    fn qdisc(seq: u32, ifindex: u32, parent: u32, bytes: u64, packets: u32, drops: u32) -> Vec<u8> {
        let mut basic = bytes.to_ne_bytes().to_vec();
        basic.extend_from_slice(&packets.to_ne_bytes());
        let mut queue = Vec::new();
        for value in [3u32, 4500, drops, 0, 7] {
            queue.extend_from_slice(&value.to_ne_bytes());
        }
        let mut stats2 = attribute(TCA_STATS_BASIC, &basic);
        stats2.extend(attribute(TCA_STATS_QUEUE, &queue));
        let mut body = vec![0u8; 4];
        body.extend_from_slice(&ifindex.to_ne_bytes());
        body.extend_from_slice(&0x10000u32.to_ne_bytes());
        body.extend_from_slice(&parent.to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes());
        body.extend(attribute(1, b"tbf\0"));
        body.extend(attribute(libc::TCA_STATS2 | 0x8000, &stats2));
        let mut message = Vec::new();
        message.extend_from_slice(&((HEADER_LEN + body.len()) as u32).to_ne_bytes());
        message.extend_from_slice(&libc::RTM_NEWQDISC.to_ne_bytes());
        message.extend_from_slice(&2u16.to_ne_bytes());
        message.extend_from_slice(&seq.to_ne_bytes());
        message.extend_from_slice(&0u32.to_ne_bytes());
        message.extend(body);
        message
    }

    fn done(seq: u32) -> Vec<u8> {
        let mut message = Vec::new();
        message.extend_from_slice(&20u32.to_ne_bytes());
        message.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
        message.extend_from_slice(&2u16.to_ne_bytes());
        message.extend_from_slice(&seq.to_ne_bytes());
        message.extend_from_slice(&0u32.to_ne_bytes());
        message.extend_from_slice(&0u32.to_ne_bytes());
        message
    }

    /// Root qdiscs are kept with their counters (the stats attribute found under its nested
    /// flag), child qdiscs and other dumps' messages are not, and the dump ends at its DONE.
    #[test]
    fn a_dump_gives_each_interface_s_root_qdisc_counters() {
        let mut roots = HashMap::new();
        let mut first = qdisc(5, 2, ROOT, 1_000_000, 700, 9);
        first.extend(qdisc(5, 2, 0x10001, 1, 1, 1));
        first.extend(qdisc(4, 3, ROOT, 1, 1, 1));
        assert!(!parse_dump(&first, 5, &mut roots).unwrap());
        let mut second = qdisc(5, 3, ROOT, 42, 1, 0);
        second.extend(done(5));
        assert!(parse_dump(&second, 5, &mut roots).unwrap());
        let want = |bytes, packets, drops| QdiscStats {
            bytes,
            packets,
            drops,
            qlen: 3,
        };
        assert_eq!(roots[&2], want(1_000_000, 700, 9));
        assert_eq!(roots[&3], want(42, 1, 0));
        assert_eq!(roots.len(), 2);
        assert!(parse_dump(&[1, 0, 0, 0], 5, &mut roots).is_ok());
        let mut short = qdisc(5, 2, ROOT, 1, 1, 1);
        short[0] = 200;
        assert!(parse_dump(&short, 5, &mut roots).is_err());
    }

    #[test]
    fn the_request_asks_for_a_dump_of_every_qdisc() {
        let request = dump_request(9);
        assert_eq!(request.len(), 36);
        assert_eq!(u32_at(&request, 0), Some(36));
        assert_eq!(
            u16::from_ne_bytes([request[4], request[5]]),
            libc::RTM_GETQDISC
        );
        assert_eq!(u16::from_ne_bytes([request[6], request[7]]), 0x301);
        assert_eq!(u32_at(&request, 8), Some(9));
    }
}
