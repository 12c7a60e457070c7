//! A minimal NFQUEUE client written directly on netlink.
//!
//! The userspace link backend holds every packet of a link direction in the kernel's NFQUEUE and
//! gives its verdict at the packet's departure time. The `nfq` crate hides its socket, so one
//! thread could not poll the queues of many namespaces; this client exposes its fd, receives many
//! messages per syscall (`recvmmsg`) and sends many verdicts per syscall (one `sendto` buffer of
//! verdict messages, which the kernel processes one after another).
//!
//! Only what the shaper needs is parsed: packet id, queue number, the packet's IP length and its
//! arrival stamp. The kernel puts no length in `NFQNL_COPY_META` messages (`NFQA_CAP_LEN` is only
//! sent when a copy is shorter than the packet), so queues are bound in `NFQNL_COPY_PACKET` mode
//! with a short copy range: the length is `NFQA_CAP_LEN` when the packet is longer than the range,
//! else the length of the copied payload.
//!
//! The arrival stamp (`NFQA_TIMESTAMP`) is CLOCK_REALTIME in whole microseconds. As
//! `nfqnl_build_packet_message()` builds it (`net/netfilter/nfnetlink_queue.c`, 6.x kernels),
//! it is sent for packets queued at PREROUTING, INPUT or FORWARD when `skb_tstamp_cond()` finds
//! a time: the skb's own receive stamp (taken with `ktime_get_real()` by `net_timestamp_check()`
//! in `netif_rx_internal()`, where a veth delivers, or in `__netif_receive_skb_core()`; see
//! `net/core/dev.c`), or, for an skb without one (or carrying a monotonic delivery time, as
//! TCP's packets do), `ktime_get_real()` as the message is built. In practice both need the
//! global static key `netstamp_needed_key`, on while any socket asks for receive timestamps
//! (`net_enable_timestamp()`); the shaper daemon keeps such a socket open.

use crate::params::MAX_LIMIT;
use std::fs::File;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

const NLMSG_HDRLEN: usize = 16;
const NFGENMSG_LEN: usize = 4;
const NLA_HDRLEN: usize = 4;
/// Attribute types carry two flag bits (nested, network byte order) above the type.
const NLA_TYPE_MASK: u16 = 0x3fff;

const NLMSG_NOOP: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_OVERRUN: u16 = 4;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;

const NFNL_SUBSYS_QUEUE: u16 = 3;
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_VERDICT: u16 = 1;
const NFQNL_MSG_CONFIG: u16 = 2;

const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_TIMESTAMP: u16 = 4;
const NFQA_PAYLOAD: u16 = 10;
const NFQA_CAP_LEN: u16 = 13;
const NFQA_SKB_INFO: u16 = 14;
/// `NFQA_SKB_INFO` flag: the packet is a GSO packet (many wire packets in one skb).
const NFQA_SKB_GSO: u32 = 1 << 1;

const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
const NFQNL_CFG_CMD_BIND: u8 = 1;
const NFQNL_CFG_CMD_UNBIND: u8 = 2;
const NFQNL_COPY_META: u8 = 1;
const NFQNL_COPY_PACKET: u8 = 2;
const NFQA_CFG_F_FAIL_OPEN: u32 = 1;
const NFQA_CFG_F_GSO: u32 = 1 << 2;

const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;

/// Datagrams received per `recvmmsg` call.
const RECV_BATCH: usize = 64;
/// Room for one packet message: headers, a short payload copy and the optional attributes the
/// kernel adds (timestamp, interfaces, hardware address, security context).
const RECV_SLOT: usize = 1024;
/// Verdicts are flushed once the send buffer holds this many bytes (2048 verdicts).
const SEND_FLUSH_BYTES: usize = 64 * 1024;
/// Asked for with SO_RCVBUFFORCE so bursts wait in the socket instead of being lost (ENOBUFS).
const RCVBUF_BYTES: i32 = 16 * 1024 * 1024;
/// How long a configuration request may wait for the kernel's acknowledgement.
const ACK_TIMEOUT_MS: i32 = 5000;

/// What the kernel should do with a queued packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    Drop,
}

/// A packet the kernel has queued and waits for a verdict on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    pub queue_num: u16,
    /// The kernel's id of the packet within its queue; the verdict names it.
    pub id: u32,
    /// Length of the IP packet (header included), in bytes.
    pub len: u32,
    /// When the kernel received the packet: CLOCK_REALTIME in ns, of microsecond resolution
    /// (the kernel truncates). None when the kernel sent no stamp (see the module documentation)
    /// or an impossible one.
    pub timestamp_ns: Option<u64>,
    /// A GSO packet (only on queues bound with [`QueueConfig::gso`]): `len` bytes that leave
    /// as several wire packets, each with its own copy of the headers.
    pub gso: bool,
    /// The IP and TCP/UDP header bytes at the start of the packet, read from the copy; 0 when
    /// they could not be read (another protocol, or a copy too short).
    pub headers_len: u16,
}

impl Packet {
    /// How many wire packets, and how many IP bytes in all, the packet stands for on a path of
    /// `mtu` bytes. A GSO packet's segments carry at most `mtu − headers` payload bytes each,
    /// which is the segment size TCP uses on our veths (its MSS follows the MTU); NFQUEUE does
    /// not pass the real `gso_size`, so a sender using smaller segments (UDP GSO) has its
    /// header bytes undercounted by a little.
    pub fn wire_packets(&self, mtu: u32) -> (u32, u64) {
        let len = u64::from(self.len);
        if !self.gso || len <= u64::from(mtu) {
            return (1, len);
        }
        let headers = u64::from(self.headers_len);
        let per_segment = u64::from(mtu).saturating_sub(headers).max(1);
        let segments = (len.saturating_sub(headers)).div_ceil(per_segment).max(1);
        let segments = u32::try_from(segments).unwrap_or(u32::MAX);
        (segments, len + u64::from(segments - 1) * headers)
    }
}

/// How to copy packets to userspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyMode {
    /// Metadata only: no payload and, as the kernel builds it, no length either.
    Meta,
    /// The first `range` bytes of each packet, plus `NFQA_CAP_LEN` when the packet is longer.
    Packet { range: u16 },
}

/// How a queue is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    pub copy: CopyMode,
    /// Packets the kernel holds for this queue before dropping new ones.
    pub max_len: u32,
    /// Accept (rather than drop) packets when the queue is full. Off for link emulation: a full
    /// queue must not let traffic through unimpaired.
    pub fail_open: bool,
    /// Take GSO packets whole (`NFQA_CFG_F_GSO`) instead of having the kernel cut them into
    /// wire packets before queuing them one by one.
    pub gso: bool,
}

impl Default for QueueConfig {
    /// What the link backend uses: enough copy for the longest IPv4 header and a TCP header
    /// (GSO packets are counted by their headers), a queue as long as the largest netem limit
    /// (the shaper enforces the limit itself), fail-open off, GSO packets whole.
    fn default() -> Self {
        QueueConfig {
            copy: CopyMode::Packet { range: 80 },
            max_len: MAX_LIMIT,
            fail_open: false,
            gso: true,
        }
    }
}

/// One message read from the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    Packet(Packet),
    /// An acknowledgement (`errno` 0) or an error report for the request with sequence `seq`.
    Ack {
        seq: u32,
        errno: i32,
    },
    /// A message of no interest here (NOOP, DONE, other nfnetlink messages).
    Other,
}

/// A message that could not be parsed. Its packet, when the message announced one and its id
/// could be read, still waits in the kernel for a verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub error: String,
    /// (queue number, packet id) of the packet the message announced.
    pub packet: Option<(u16, u32)>,
}

impl From<Malformed> for io::Error {
    fn from(malformed: Malformed) -> io::Error {
        invalid(malformed.error)
    }
}

/// What one [`NfQueueSocket::recv_batch`] call got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecvSummary {
    pub packets: usize,
    /// The batch was full: more may be waiting.
    pub more: bool,
    /// The kernel reported ENOBUFS: messages were lost because the socket buffer was full
    /// (their packets are dropped by the kernel).
    pub overrun: bool,
    /// Error reports for earlier requests (e.g. a verdict for an unknown packet id).
    pub request_errors: u32,
    /// The errno of the last such report.
    pub last_request_errno: i32,
    /// Messages (or datagrams) that could not be parsed; they were skipped.
    pub malformed: u32,
    /// Packets of malformed messages that were given a drop verdict (fail-closed).
    pub malformed_dropped: u32,
    /// Why the last malformed message was refused.
    pub last_malformed: Option<String>,
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn align4(len: usize) -> usize {
    (len + 3) & !3
}

fn read_u16_ne(bytes: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([bytes[at], bytes[at + 1]])
}

fn read_u32_ne(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn read_u32_be(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Appends one nfnetlink message of the queue subsystem; `attrs` appends its attributes.
fn put_message(
    buf: &mut Vec<u8>,
    msg_type: u16,
    flags: u16,
    seq: u32,
    queue_num: u16,
    attrs: impl FnOnce(&mut Vec<u8>),
) {
    let start = buf.len();
    buf.extend_from_slice(&0u32.to_ne_bytes()); // length, patched below
    buf.extend_from_slice(&((NFNL_SUBSYS_QUEUE << 8) | msg_type).to_ne_bytes());
    buf.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel
    buf.extend_from_slice(&[libc::AF_UNSPEC as u8, 0]); // nfgen_family, NFNETLINK_V0
    buf.extend_from_slice(&queue_num.to_be_bytes()); // res_id
    attrs(buf);
    let len = (buf.len() - start) as u32;
    buf[start..start + 4].copy_from_slice(&len.to_ne_bytes());
}

fn put_attr(buf: &mut Vec<u8>, attr_type: u16, payload: &[u8]) {
    buf.extend_from_slice(&((NLA_HDRLEN + payload.len()) as u16).to_ne_bytes());
    buf.extend_from_slice(&attr_type.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(align4(buf.len()), 0);
}

/// Appends a request that binds `queue_num` to this socket and configures it, in one message
/// (the kernel applies the command first, then the parameters).
pub fn put_bind(buf: &mut Vec<u8>, seq: u32, queue_num: u16, config: &QueueConfig) {
    put_message(buf, NFQNL_MSG_CONFIG, NLM_F_ACK, seq, queue_num, |buf| {
        put_attr(buf, NFQA_CFG_CMD, &[NFQNL_CFG_CMD_BIND, 0, 0, 0]);
        let (mode, range) = match config.copy {
            CopyMode::Meta => (NFQNL_COPY_META, 0u32),
            CopyMode::Packet { range } => (NFQNL_COPY_PACKET, u32::from(range)),
        };
        let mut params = [0u8; 5];
        params[..4].copy_from_slice(&range.to_be_bytes());
        params[4] = mode;
        put_attr(buf, NFQA_CFG_PARAMS, &params);
        put_attr(buf, NFQA_CFG_QUEUE_MAXLEN, &config.max_len.to_be_bytes());
        let mut flags = 0;
        if config.fail_open {
            flags |= NFQA_CFG_F_FAIL_OPEN;
        }
        if config.gso {
            flags |= NFQA_CFG_F_GSO;
        }
        put_attr(buf, NFQA_CFG_FLAGS, &flags.to_be_bytes());
        put_attr(
            buf,
            NFQA_CFG_MASK,
            &(NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO).to_be_bytes(),
        );
    });
}

/// Appends the request that turns taking GSO packets whole on or off for a bound queue.
pub fn put_gso(buf: &mut Vec<u8>, seq: u32, queue_num: u16, gso: bool) {
    put_message(buf, NFQNL_MSG_CONFIG, NLM_F_ACK, seq, queue_num, |buf| {
        let flags = if gso { NFQA_CFG_F_GSO } else { 0 };
        put_attr(buf, NFQA_CFG_FLAGS, &flags.to_be_bytes());
        put_attr(buf, NFQA_CFG_MASK, &NFQA_CFG_F_GSO.to_be_bytes());
    });
}

/// Appends a request that unbinds `queue_num` (the kernel drops the packets it still holds).
pub fn put_unbind(buf: &mut Vec<u8>, seq: u32, queue_num: u16) {
    put_message(buf, NFQNL_MSG_CONFIG, NLM_F_ACK, seq, queue_num, |buf| {
        put_attr(buf, NFQA_CFG_CMD, &[NFQNL_CFG_CMD_UNBIND, 0, 0, 0]);
    });
}

/// Appends a verdict for one packet. No acknowledgement is asked for: the kernel still reports
/// an error (e.g. an unknown id) with an `NLMSG_ERROR` message.
pub fn put_verdict(buf: &mut Vec<u8>, seq: u32, queue_num: u16, id: u32, verdict: Verdict) {
    put_message(buf, NFQNL_MSG_VERDICT, 0, seq, queue_num, |buf| {
        let code = match verdict {
            Verdict::Accept => NF_ACCEPT,
            Verdict::Drop => NF_DROP,
        };
        let mut hdr = [0u8; 8];
        hdr[..4].copy_from_slice(&code.to_be_bytes());
        hdr[4..].copy_from_slice(&id.to_be_bytes());
        put_attr(buf, NFQA_VERDICT_HDR, &hdr);
    });
}

/// The netlink messages of one datagram.
pub struct Messages<'a> {
    rest: &'a [u8],
}

/// Iterates over the messages of a datagram received from the kernel. A malformed message is an
/// error and the iteration goes on after it, unless its own length is what is wrong (then the
/// rest cannot be framed and the iteration ends).
pub fn messages(datagram: &[u8]) -> Messages<'_> {
    Messages { rest: datagram }
}

impl Iterator for Messages<'_> {
    type Item = Result<Message, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let rest = std::mem::take(&mut self.rest);
        if rest.len() < NLMSG_HDRLEN {
            return Some(Err(Malformed {
                error: format!(
                    "netlink: {} trailing bytes, shorter than a message header",
                    rest.len()
                ),
                packet: None,
            }));
        }
        let len = read_u32_ne(rest, 0) as usize;
        if len < NLMSG_HDRLEN || len > rest.len() {
            return Some(Err(Malformed {
                error: format!(
                    "netlink: message length {len} outside {NLMSG_HDRLEN}..={}",
                    rest.len()
                ),
                packet: unframed_packet(rest),
            }));
        }
        self.rest = &rest[align4(len).min(rest.len())..];
        Some(parse_message(&rest[..len]))
    }
}

/// The packet a message whose length is wrong announced, read from the bytes there are (a
/// datagram cut short by the receive slot keeps its packet header, which the kernel puts first).
fn unframed_packet(rest: &[u8]) -> Option<(u16, u32)> {
    if read_u16_ne(rest, 4) != PACKET_MSG_TYPE {
        return None;
    }
    match parse_packet(&rest[NLMSG_HDRLEN..]) {
        Ok(packet) => Some((packet.queue_num, packet.id)),
        Err(malformed) => malformed.packet,
    }
}

const PACKET_MSG_TYPE: u16 = (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET;

/// Parses one netlink message (header included, exactly its length).
fn parse_message(msg: &[u8]) -> Result<Message, Malformed> {
    let msg_type = read_u16_ne(msg, 4);
    let seq = read_u32_ne(msg, 8);
    let body = &msg[NLMSG_HDRLEN..];
    match msg_type {
        NLMSG_ERROR => {
            if body.len() < 4 {
                return Err(Malformed {
                    error: format!(
                        "netlink: error message of {} bytes has no error code",
                        msg.len()
                    ),
                    packet: None,
                });
            }
            let error = i32::from_ne_bytes([body[0], body[1], body[2], body[3]]);
            Ok(Message::Ack {
                seq,
                errno: error.saturating_neg(),
            })
        }
        NLMSG_OVERRUN => Err(Malformed {
            error: "netlink: overrun message: data was lost".to_string(),
            packet: None,
        }),
        NLMSG_NOOP | NLMSG_DONE => Ok(Message::Other),
        PACKET_MSG_TYPE => parse_packet(body).map(Message::Packet),
        _ => Ok(Message::Other),
    }
}

/// Parses the body (after the netlink header) of an `NFQNL_MSG_PACKET` message; when it is
/// malformed, the error keeps the packet's id if the packet header was read.
fn parse_packet(body: &[u8]) -> Result<Packet, Malformed> {
    if body.len() < NFGENMSG_LEN {
        return Err(Malformed {
            error: format!(
                "nfqueue: packet message body of {} bytes has no nfgenmsg header",
                body.len()
            ),
            packet: None,
        });
    }
    let queue_num = u16::from_be_bytes([body[2], body[3]]);
    let mut id = None;
    parse_packet_attrs(queue_num, &body[NFGENMSG_LEN..], &mut id).map_err(|e| Malformed {
        error: e.to_string(),
        packet: id.map(|id| (queue_num, id)),
    })
}

/// Reads a packet message's attributes, setting `id` as soon as the packet header is read.
fn parse_packet_attrs(
    queue_num: u16,
    mut attrs: &[u8],
    id: &mut Option<u32>,
) -> io::Result<Packet> {
    let mut cap_len = None;
    let mut payload_len = None;
    let mut timestamp_ns = None;
    let mut gso = false;
    let mut headers_len = 0;
    while !attrs.is_empty() {
        if attrs.len() < NLA_HDRLEN {
            return Err(invalid(format!(
                "nfqueue: queue {queue_num}: {} trailing bytes, shorter than an attribute header",
                attrs.len()
            )));
        }
        let len = usize::from(read_u16_ne(attrs, 0));
        let attr_type = read_u16_ne(attrs, 2) & NLA_TYPE_MASK;
        if len < NLA_HDRLEN || len > attrs.len() {
            return Err(invalid(format!(
                "nfqueue: queue {queue_num}: attribute {attr_type} has length {len} outside {NLA_HDRLEN}..={}",
                attrs.len()
            )));
        }
        let payload = &attrs[NLA_HDRLEN..len];
        match attr_type {
            NFQA_PACKET_HDR => {
                // struct nfqnl_msg_packet_hdr { __be32 packet_id; __be16 hw_protocol; __u8 hook; }
                if payload.len() < 7 {
                    return Err(invalid(format!(
                        "nfqueue: queue {queue_num}: packet header attribute of {} bytes (want 7)",
                        payload.len()
                    )));
                }
                *id = Some(read_u32_be(payload, 0));
            }
            NFQA_CAP_LEN => {
                if payload.len() != 4 {
                    return Err(invalid(format!(
                        "nfqueue: queue {queue_num}: capture length attribute of {} bytes (want 4)",
                        payload.len()
                    )));
                }
                cap_len = Some(read_u32_be(payload, 0));
            }
            NFQA_TIMESTAMP => {
                // struct nfqnl_msg_packet_timestamp { __aligned_be64 sec; __aligned_be64 usec; }
                let stamp: [u8; 16] = payload.try_into().map_err(|_| {
                    invalid(format!(
                        "nfqueue: queue {queue_num}: timestamp attribute of {} bytes (want 16)",
                        payload.len()
                    ))
                })?;
                timestamp_ns = timestamp_to_ns(stamp);
            }
            NFQA_SKB_INFO => {
                if payload.len() != 4 {
                    return Err(invalid(format!(
                        "nfqueue: queue {queue_num}: skb info attribute of {} bytes (want 4)",
                        payload.len()
                    )));
                }
                gso = read_u32_be(payload, 0) & NFQA_SKB_GSO != 0;
            }
            NFQA_PAYLOAD => {
                payload_len = Some(payload.len() as u32);
                headers_len = ip_transport_headers_len(payload);
            }
            _ => {}
        }
        attrs = &attrs[align4(len).min(attrs.len())..];
    }
    let id = id.ok_or_else(|| {
        invalid(format!(
            "nfqueue: queue {queue_num}: packet message without a packet header"
        ))
    })?;
    let len = cap_len.or(payload_len).ok_or_else(|| {
        invalid(format!(
            "nfqueue: queue {queue_num}: packet {id} carries no length (neither payload nor \
             capture length); bind the queue with CopyMode::Packet"
        ))
    })?;
    Ok(Packet {
        queue_num,
        id,
        len,
        timestamp_ns,
        gso,
        headers_len,
    })
}

/// The IP header plus TCP or UDP header length at the start of `packet` (a copy of its first
/// bytes); 0 when the protocol is another or the copy ends before the headers do.
fn ip_transport_headers_len(packet: &[u8]) -> u16 {
    const TCP: u8 = 6;
    const UDP: u8 = 17;
    let (ip_len, protocol) = match packet.first().map(|b| b >> 4) {
        Some(4) if packet.len() >= 20 => (usize::from(packet[0] & 0x0f) * 4, packet[9]),
        // Extension headers are not followed: a packet with them counts as unknown.
        Some(6) if packet.len() >= 40 => (40, packet[6]),
        _ => return 0,
    };
    let transport_len = match protocol {
        TCP => match packet.get(ip_len + 12) {
            Some(offset) if offset >> 4 >= 5 => usize::from(offset >> 4) * 4,
            _ => return 0,
        },
        UDP => 8,
        _ => return 0,
    };
    if ip_len < 20 {
        return 0;
    }
    u16::try_from(ip_len + transport_len).unwrap_or(0)
}

/// An `NFQA_TIMESTAMP` payload in nanoseconds; None for a time no kernel sends (microseconds
/// past a second, or beyond what u64 nanoseconds hold, i.e. after the year 2554).
fn timestamp_to_ns(stamp: [u8; 16]) -> Option<u64> {
    let [s0, s1, s2, s3, s4, s5, s6, s7, u0, u1, u2, u3, u4, u5, u6, u7] = stamp;
    let sec = u64::from_be_bytes([s0, s1, s2, s3, s4, s5, s6, s7]);
    let usec = u64::from_be_bytes([u0, u1, u2, u3, u4, u5, u6, u7]);
    if usec >= 1_000_000 {
        return None;
    }
    sec.checked_mul(1_000_000_000)?.checked_add(usec * 1_000)
}

impl RecvSummary {
    fn note_malformed(&mut self, error: String) {
        self.malformed += 1;
        self.last_malformed = Some(error);
    }
}

/// Hands each packet of `datagram` to `on_packet` and counts the rest in `summary`. A malformed
/// message is skipped; the packet it names, when its id can be read, goes to `refuse` (for a drop
/// verdict: fail-closed, and the kernel's queue does not fill with packets nobody will decide).
fn read_datagram(
    datagram: &[u8],
    summary: &mut RecvSummary,
    on_packet: &mut impl FnMut(Packet),
    refuse: &mut impl FnMut(u16, u32),
) {
    for message in messages(datagram) {
        match message {
            Ok(Message::Packet(packet)) => {
                on_packet(packet);
                summary.packets += 1;
            }
            Ok(Message::Ack { errno, .. }) if errno != 0 => {
                summary.request_errors += 1;
                summary.last_request_errno = errno;
            }
            Ok(_) => {}
            Err(malformed) => {
                if let Some((queue_num, id)) = malformed.packet {
                    refuse(queue_num, id);
                    summary.malformed_dropped += 1;
                }
                summary.note_malformed(malformed.error);
            }
        }
    }
}

/// A NETLINK_NETFILTER socket serving one or more queues of one network namespace.
pub struct NfQueueSocket {
    fd: OwnedFd,
    seq: u32,
    /// Receive slots for `recvmmsg`, `RECV_BATCH` × `RECV_SLOT` bytes.
    rx: Vec<u8>,
    /// Verdict messages waiting for [`NfQueueSocket::flush`].
    tx: Vec<u8>,
    /// Packets that arrived while a configuration request waited for its acknowledgement.
    backlog: Vec<Packet>,
}

impl AsRawFd for NfQueueSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for NfQueueSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Runs `f` on a short-lived thread that has joined the network namespace at `netns`; sockets
/// it creates stay in that namespace when used from any thread.
pub fn in_netns<T: Send>(netns: &Path, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    let file = File::open(netns).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot open network namespace {}: {e}", netns.display()),
        )
    })?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: setns on a valid fd; it changes only this (short-lived) thread.
                if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    let e = io::Error::last_os_error();
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot enter network namespace {}: {e}", netns.display()),
                    ));
                }
                f()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("network namespace thread panicked")))
    })
}

impl NfQueueSocket {
    /// Opens a socket in the caller's network namespace, or in the one at `netns`.
    pub fn open(netns: Option<&Path>) -> io::Result<NfQueueSocket> {
        let fd = match netns {
            Some(path) => in_netns(path, open_fd)?,
            None => open_fd()?,
        };
        Ok(NfQueueSocket {
            fd,
            seq: 0,
            rx: vec![0; RECV_BATCH * RECV_SLOT],
            tx: Vec::with_capacity(SEND_FLUSH_BYTES + 64),
            backlog: Vec::new(),
        })
    }

    /// Binds `queue_num` to this socket. Fails (EPERM/EBUSY) when another socket holds it.
    pub fn bind_queue(&mut self, queue_num: u16, config: &QueueConfig) -> io::Result<()> {
        let seq = self.next_seq();
        let mut buf = Vec::with_capacity(96);
        put_bind(&mut buf, seq, queue_num, config);
        self.request(&buf, seq)
            .map_err(|e| io::Error::new(e.kind(), format!("binding nfqueue {queue_num}: {e}")))
    }

    /// Has the kernel pass `queue_num`'s GSO packets whole (`gso`) or cut into wire packets.
    /// Packets that arrive while the kernel acknowledges wait for the next
    /// [`NfQueueSocket::recv_batch`].
    pub fn set_gso(&mut self, queue_num: u16, gso: bool) -> io::Result<()> {
        let seq = self.next_seq();
        let mut buf = Vec::with_capacity(48);
        put_gso(&mut buf, seq, queue_num, gso);
        self.request(&buf, seq)
            .map_err(|e| io::Error::new(e.kind(), format!("configuring nfqueue {queue_num}: {e}")))
    }

    /// True when packets read while waiting for an acknowledgement wait for
    /// [`NfQueueSocket::recv_batch`] (no readiness event announces them).
    pub fn has_backlog(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// Unbinds `queue_num`; the kernel drops the packets of it that still wait for a verdict.
    pub fn unbind_queue(&mut self, queue_num: u16) -> io::Result<()> {
        let seq = self.next_seq();
        let mut buf = Vec::with_capacity(32);
        put_unbind(&mut buf, seq, queue_num);
        self.request(&buf, seq)
            .map_err(|e| io::Error::new(e.kind(), format!("unbinding nfqueue {queue_num}: {e}")))
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Sends one request and waits for its acknowledgement.
    fn request(&mut self, msg: &[u8], seq: u32) -> io::Result<()> {
        self.send_all(msg)?;
        loop {
            let mut pollfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let ready = unsafe { libc::poll(&mut pollfd, 1, ACK_TIMEOUT_MS) };
            if ready < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if ready == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no acknowledgement from the kernel",
                ));
            }
            let mut buf = [0u8; 8192];
            // SAFETY: recv into a buffer we own, with its length.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) | Some(libc::ENOBUFS) => continue,
                    _ => return Err(e),
                }
            }
            let mut acked = None;
            for message in messages(&buf[..n as usize]) {
                match message? {
                    Message::Packet(packet) => self.backlog.push(packet),
                    Message::Ack { seq: s, errno } if s == seq => acked = Some(errno),
                    _ => {}
                }
            }
            match acked {
                Some(0) => return Ok(()),
                Some(errno) => return Err(io::Error::from_raw_os_error(errno)),
                None => {}
            }
        }
    }

    fn send_all(&self, buf: &[u8]) -> io::Result<()> {
        // SAFETY: a zeroed sockaddr_nl is the kernel's address once its family is set.
        let mut addr: libc::sockaddr_nl = unsafe { zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        loop {
            // SAFETY: sendto with a buffer and an address we own, with their lengths.
            let n = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    buf.as_ptr().cast(),
                    buf.len(),
                    0,
                    (&addr as *const libc::sockaddr_nl).cast(),
                    size_of::<libc::sockaddr_nl>() as libc::socklen_t,
                )
            };
            if n >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Receives up to one batch of datagrams without blocking, calling `on_packet` for each
    /// queued packet. Returns an empty summary when nothing is waiting. A malformed message is
    /// skipped and counted, and the packet it names (if its id can be read) gets a drop verdict
    /// with the next [`NfQueueSocket::flush`]: the rest of the batch is still delivered.
    pub fn recv_batch(&mut self, mut on_packet: impl FnMut(Packet)) -> io::Result<RecvSummary> {
        let mut summary = RecvSummary::default();
        for packet in self.backlog.drain(..) {
            on_packet(packet);
            summary.packets += 1;
        }
        // SAFETY: plain C structs; all-zero is a valid value for each.
        let mut iovecs: [libc::iovec; RECV_BATCH] = unsafe { zeroed() };
        let mut headers: [libc::mmsghdr; RECV_BATCH] = unsafe { zeroed() };
        for (i, (iov, header)) in iovecs.iter_mut().zip(headers.iter_mut()).enumerate() {
            iov.iov_base = self.rx[i * RECV_SLOT..].as_mut_ptr().cast();
            iov.iov_len = RECV_SLOT;
            header.msg_hdr.msg_iov = iov;
            header.msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: every header points at one iovec of its own RECV_SLOT bytes inside self.rx,
        // all of which outlive the call.
        let n = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                headers.as_mut_ptr(),
                RECV_BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) => Ok(summary),
                // Interrupted before it looked: more may be waiting.
                Some(libc::EINTR) => {
                    summary.more = true;
                    Ok(summary)
                }
                Some(libc::ENOBUFS) => {
                    summary.overrun = true;
                    summary.more = true;
                    Ok(summary)
                }
                _ => Err(e),
            };
        }
        let n = n as usize;
        summary.more = n == RECV_BATCH;
        let (tx, seq) = (&mut self.tx, &mut self.seq);
        let mut refuse = |queue_num, id| {
            *seq = seq.wrapping_add(1);
            put_verdict(tx, *seq, queue_num, id, Verdict::Drop);
        };
        for (i, header) in headers[..n].iter().enumerate() {
            if header.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                // The messages past the slot are lost; those within it are still read (the cut
                // one is malformed, its packet dropped).
                summary.note_malformed(format!(
                    "nfqueue: a datagram was longer than the {RECV_SLOT}-byte receive slot"
                ));
            }
            let len = (header.msg_len as usize).min(RECV_SLOT);
            let datagram = &self.rx[i * RECV_SLOT..i * RECV_SLOT + len];
            read_datagram(datagram, &mut summary, &mut on_packet, &mut refuse);
        }
        Ok(summary)
    }

    /// Queues a verdict; it is sent by the next [`NfQueueSocket::flush`] (or now, when the
    /// buffer is full).
    pub fn push_verdict(&mut self, queue_num: u16, id: u32, verdict: Verdict) -> io::Result<()> {
        let seq = self.next_seq();
        put_verdict(&mut self.tx, seq, queue_num, id, verdict);
        if self.tx.len() >= SEND_FLUSH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// True when verdicts wait to be sent.
    pub fn has_pending(&self) -> bool {
        !self.tx.is_empty()
    }

    /// Sends every queued verdict in one syscall.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.tx.is_empty() {
            return Ok(());
        }
        let result = self.send_all(&self.tx);
        self.tx.clear();
        result
    }
}

fn open_fd() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call.
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_NETFILTER,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a new fd that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // A large buffer lets bursts wait instead of being lost; SO_RCVBUFFORCE passes rmem_max
    // (it needs CAP_NET_ADMIN, which binding a queue needs anyway), SO_RCVBUF is the fallback.
    if setsockopt_int(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, RCVBUF_BYTES).is_err() {
        setsockopt_int(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, RCVBUF_BYTES)?;
    }
    // SAFETY: a zeroed sockaddr_nl with its family set asks the kernel for a port id.
    let mut addr: libc::sockaddr_nl = unsafe { zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    // SAFETY: bind with an address we own and its length.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_nl).cast(),
            size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

fn setsockopt_int(fd: &OwnedFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: setsockopt with a c_int we own and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const i32).cast(),
            size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
#[path = "props/nfqueue.rs"]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn nlmsg(msg_type: u16, seq: u32, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((NLMSG_HDRLEN + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&msg_type.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(body);
        m.resize(align4(m.len()), 0);
        m
    }

    pub(super) fn attr(attr_type: u16, payload: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        put_attr(&mut a, attr_type, payload);
        a
    }

    /// A packet message as the kernel builds it (nfgenmsg, packet header, optional attributes).
    pub(super) fn packet_msg(queue: u16, id: u32, extra: &[Vec<u8>]) -> Vec<u8> {
        let mut body = vec![libc::AF_INET as u8, 0];
        body.extend_from_slice(&queue.to_be_bytes());
        let mut hdr = id.to_be_bytes().to_vec();
        hdr.extend_from_slice(&0x0800u16.to_be_bytes());
        hdr.push(0); // NF_INET_PRE_ROUTING
        body.extend(attr(NFQA_PACKET_HDR, &hdr));
        for a in extra {
            body.extend_from_slice(a);
        }
        nlmsg(NFNL_SUBSYS_QUEUE << 8, 0, &body)
    }

    #[test]
    fn verdict_message_bytes() {
        let mut buf = Vec::new();
        put_verdict(&mut buf, 7, 3, 0x01020304, Verdict::Accept);
        let mut want = Vec::new();
        want.extend_from_slice(&32u32.to_ne_bytes());
        want.extend_from_slice(&0x0301u16.to_ne_bytes());
        want.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        want.extend_from_slice(&7u32.to_ne_bytes());
        want.extend_from_slice(&0u32.to_ne_bytes());
        want.extend_from_slice(&[0, 0, 0, 3]);
        want.extend_from_slice(&12u16.to_ne_bytes());
        want.extend_from_slice(&NFQA_VERDICT_HDR.to_ne_bytes());
        want.extend_from_slice(&[0, 0, 0, 1, 1, 2, 3, 4]);
        assert_eq!(buf, want);

        put_verdict(&mut buf, 8, 3, 9, Verdict::Drop);
        assert_eq!(buf.len(), 64, "verdicts are appended back to back");
        assert_eq!(&buf[32 + 24..32 + 28], &[0, 0, 0, 0], "NF_DROP");
    }

    #[test]
    fn bind_message_bytes() {
        let mut buf = Vec::new();
        put_bind(&mut buf, 1, 258, &QueueConfig::default());
        assert_eq!(read_u32_ne(&buf, 0) as usize, buf.len());
        assert_eq!(
            read_u16_ne(&buf, 4),
            0x0302,
            "queue subsystem, config message"
        );
        assert_eq!(read_u16_ne(&buf, 6), NLM_F_REQUEST | NLM_F_ACK);
        assert_eq!(&buf[18..20], &[1, 2], "queue number, big endian");
        let attrs = &buf[20..];
        // command: len 8, type 1, BIND
        assert_eq!(&attrs[..5], &[8, 0, 1, 0, NFQNL_CFG_CMD_BIND]);
        // params: len 9 (padded to 12), type 2, range 80 big endian, COPY_PACKET
        assert_eq!(&attrs[8..17], &[9, 0, 2, 0, 0, 0, 0, 80, NFQNL_COPY_PACKET]);
        // max length 65536 big endian
        assert_eq!(&attrs[20..28], &[8, 0, 3, 0, 0, 1, 0, 0]);
        // flags GSO with mask FAIL_OPEN | GSO: fail-open off, GSO packets whole
        assert_eq!(&attrs[28..36], &[8, 0, 5, 0, 0, 0, 0, 4]);
        assert_eq!(&attrs[36..44], &[8, 0, 4, 0, 0, 0, 0, 5]);
        assert_eq!(attrs.len(), 44);
    }

    #[test]
    fn gso_message_bytes() {
        let mut buf = Vec::new();
        put_gso(&mut buf, 9, 3, false);
        assert_eq!(read_u32_ne(&buf, 0) as usize, buf.len());
        assert_eq!(read_u16_ne(&buf, 4), 0x0302, "a config message");
        assert_eq!(read_u16_ne(&buf, 6), NLM_F_REQUEST | NLM_F_ACK);
        let attrs = &buf[20..];
        // flags 0 under mask GSO: only the GSO flag changes
        assert_eq!(attrs, &[8, 0, 5, 0, 0, 0, 0, 0, 8, 0, 4, 0, 0, 0, 0, 4]);
        buf.clear();
        put_gso(&mut buf, 9, 3, true);
        assert_eq!(&buf[20..28], &[8, 0, 5, 0, 0, 0, 0, 4]);
    }

    /// The first bytes of an IPv4 TCP packet: a 20-byte IP header and a TCP header of
    /// `tcp_len` bytes.
    fn ipv4_tcp_headers(tcp_len: u8) -> Vec<u8> {
        let mut bytes = vec![0u8; 20 + usize::from(tcp_len)];
        bytes[0] = 0x45;
        bytes[9] = 6;
        bytes[20 + 12] = (tcp_len / 4) << 4;
        bytes
    }

    #[test]
    fn parses_a_gso_packet_and_counts_its_wire_packets() {
        // Ten full segments of a TCP flow with timestamps: 1448 payload bytes each.
        let len = 52 + 10 * 1448u32;
        let msg = packet_msg(
            2,
            7,
            &[
                attr(NFQA_SKB_INFO, &NFQA_SKB_GSO.to_be_bytes()),
                attr(NFQA_PAYLOAD, &ipv4_tcp_headers(32)),
                attr(NFQA_CAP_LEN, &len.to_be_bytes()),
            ],
        );
        let got: Vec<_> = messages(&msg).collect::<Result<_, _>>().unwrap();
        let Message::Packet(packet) = got[0] else {
            panic!("{got:?}")
        };
        assert!(packet.gso);
        assert_eq!(packet.headers_len, 52);
        assert_eq!(packet.len, len);
        // Each segment carries its own 52 header bytes: 10 × 1500.
        assert_eq!(packet.wire_packets(1500), (10, 15_000));
        // A last short segment still counts.
        let short = Packet {
            len: len + 1,
            ..packet
        };
        assert_eq!(short.wire_packets(1500), (11, 15_000 + 1 + 52));
        // Not GSO: one packet, whatever its length.
        let plain = Packet {
            gso: false,
            ..packet
        };
        assert_eq!(plain.wire_packets(1500), (1, u64::from(len)));
        // Headers unknown: segments of the MTU, no header bytes added.
        let unknown = Packet {
            headers_len: 0,
            ..packet
        };
        assert_eq!(unknown.wire_packets(1500), (10, u64::from(len)));
    }

    #[test]
    fn header_lengths_are_read_only_when_whole() {
        assert_eq!(ip_transport_headers_len(&ipv4_tcp_headers(20)), 40);
        assert_eq!(ip_transport_headers_len(&ipv4_tcp_headers(60)), 80);
        let mut udp = vec![0u8; 28];
        udp[0] = 0x45;
        udp[9] = 17;
        assert_eq!(ip_transport_headers_len(&udp), 28);
        let mut bad_offset = ipv4_tcp_headers(20);
        bad_offset[32] = 4 << 4;
        assert_eq!(ip_transport_headers_len(&bad_offset), 0, "TCP offset < 5");
        assert_eq!(ip_transport_headers_len(&ipv4_tcp_headers(20)[..30]), 0);
        assert_eq!(ip_transport_headers_len(&[0x45; 40]), 0, "protocol 69");
        assert_eq!(ip_transport_headers_len(&[]), 0);
    }

    #[test]
    fn parses_packet_with_capture_length() {
        let payload = [0x45u8; 40];
        let msg = packet_msg(
            5,
            1234,
            &[
                attr(NFQA_PAYLOAD, &payload),
                attr(NFQA_CAP_LEN, &1500u32.to_be_bytes()),
            ],
        );
        let got: Vec<_> = messages(&msg).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            vec![Message::Packet(Packet {
                queue_num: 5,
                id: 1234,
                len: 1500,
                timestamp_ns: None,
                gso: false,
                headers_len: 0,
            })]
        );
    }

    #[test]
    fn short_packet_length_is_its_payload() {
        let msg = packet_msg(0, 1, &[attr(NFQA_PAYLOAD, &[0x45; 29])]);
        let got: Vec<_> = messages(&msg).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            vec![Message::Packet(Packet {
                queue_num: 0,
                id: 1,
                len: 29,
                timestamp_ns: None,
                gso: false,
                headers_len: 0,
            })]
        );
    }

    #[test]
    fn parses_several_messages_and_error_acks() {
        let mut datagram = packet_msg(1, 10, &[attr(NFQA_CAP_LEN, &100u32.to_be_bytes())]);
        let mut err_body = (-libc::ENOENT).to_ne_bytes().to_vec();
        err_body.extend_from_slice(&[0; 16]); // the request's header
        datagram.extend(nlmsg(NLMSG_ERROR, 42, &err_body));
        datagram.extend(nlmsg(NLMSG_ERROR, 43, &0i32.to_ne_bytes()));
        datagram.extend(nlmsg(NLMSG_DONE, 0, &[]));
        let got: Vec<_> = messages(&datagram).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            vec![
                Message::Packet(Packet {
                    queue_num: 1,
                    id: 10,
                    len: 100,
                    timestamp_ns: None,
                    gso: false,
                    headers_len: 0,
                }),
                Message::Ack {
                    seq: 42,
                    errno: libc::ENOENT
                },
                Message::Ack { seq: 43, errno: 0 },
                Message::Other,
            ]
        );
    }

    pub(super) fn timestamp(sec: u64, usec: u64) -> Vec<u8> {
        let mut payload = sec.to_be_bytes().to_vec();
        payload.extend_from_slice(&usec.to_be_bytes());
        attr(NFQA_TIMESTAMP, &payload)
    }

    fn parse_one(msg: &[u8]) -> Result<Message, Malformed> {
        messages(msg).next().expect("one message")
    }

    #[test]
    fn parses_the_arrival_timestamp() {
        let len = attr(NFQA_CAP_LEN, &1500u32.to_be_bytes());
        // 2024-06-01 12:00:00.123456 UTC, as the kernel sends it: before the payload.
        let msg = packet_msg(3, 9, &[timestamp(1_717_243_200, 123_456), len.clone()]);
        let Message::Packet(packet) = parse_one(&msg).unwrap() else {
            panic!("not a packet")
        };
        assert_eq!(packet.timestamp_ns, Some(1_717_243_200_123_456_000));
        assert_eq!((packet.queue_num, packet.id, packet.len), (3, 9, 1500));

        // Times no kernel sends are no stamp, not an error: the packet is still shaped.
        for (sec, usec) in [(1, 1_000_000), (u64::MAX / 1_000_000_000 + 1, 0)] {
            let msg = packet_msg(3, 9, &[timestamp(sec, usec), len.clone()]);
            let Message::Packet(packet) = parse_one(&msg).unwrap() else {
                panic!("not a packet")
            };
            assert_eq!(packet.timestamp_ns, None, "{sec} s {usec} µs");
        }
        // The largest representable time still converts.
        let sec = u64::MAX / 1_000_000_000;
        let msg = packet_msg(3, 9, &[timestamp(sec, 0), len.clone()]);
        let Message::Packet(packet) = parse_one(&msg).unwrap() else {
            panic!("not a packet")
        };
        assert_eq!(packet.timestamp_ns, Some(sec * 1_000_000_000));

        // A timestamp attribute of the wrong size is a malformed message.
        let msg = packet_msg(3, 9, &[attr(NFQA_TIMESTAMP, &[0; 8]), len]);
        let err = parse_one(&msg).unwrap_err();
        assert!(
            err.error.contains("timestamp attribute of 8 bytes"),
            "{err:?}"
        );
    }

    #[test]
    fn packet_without_length_is_an_error() {
        // What the kernel sends in COPY_META mode: no payload, no capture length.
        let msg = packet_msg(2, 7, &[]);
        let err = messages(&msg).next().unwrap().unwrap_err();
        assert!(err.error.contains("no length"), "{err:?}");
    }

    #[test]
    fn malformed_messages_are_errors() {
        let good = packet_msg(1, 10, &[attr(NFQA_CAP_LEN, &100u32.to_be_bytes())]);
        // Every truncation of a valid message is refused, never a panic.
        for cut in 1..good.len() {
            let mut m = good[..cut].to_vec();
            if cut >= 4 {
                m[..4].copy_from_slice(&(cut as u32).to_ne_bytes());
            }
            let results: Vec<_> = messages(&m).collect();
            assert!(results.iter().any(|r| r.is_err()), "cut at {cut} accepted");
        }
        // Header length larger than the datagram.
        let mut m = good.clone();
        m[..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(messages(&m).next().unwrap().is_err());
        // Attribute length running past the message.
        let mut m = good.clone();
        m[20..22].copy_from_slice(&200u16.to_ne_bytes());
        assert!(messages(&m).next().unwrap().is_err());
        // Zero-length attribute (would loop forever if accepted).
        let mut m = good.clone();
        m[20..22].copy_from_slice(&0u16.to_ne_bytes());
        assert!(messages(&m).next().unwrap().is_err());
        // A short packet header.
        let mut body = vec![2, 0, 0, 1];
        body.extend(attr(NFQA_PACKET_HDR, &[0, 0, 0, 1]));
        body.extend(attr(NFQA_CAP_LEN, &100u32.to_be_bytes()));
        assert!(messages(&nlmsg(NFNL_SUBSYS_QUEUE << 8, 0, &body))
            .next()
            .unwrap()
            .is_err());
        // An overrun report.
        assert!(messages(&nlmsg(NLMSG_OVERRUN, 0, &[]))
            .next()
            .unwrap()
            .is_err());
    }

    /// Reads `datagram` as `recv_batch` does: (delivered packets, refused packets, summary).
    pub(super) fn read(datagram: &[u8]) -> (Vec<Packet>, Vec<(u16, u32)>, RecvSummary) {
        let (mut delivered, mut refused, mut summary) =
            (Vec::new(), Vec::new(), RecvSummary::default());
        read_datagram(
            datagram,
            &mut summary,
            &mut |p| delivered.push(p),
            &mut |q, id| refused.push((q, id)),
        );
        (delivered, refused, summary)
    }

    #[test]
    fn a_malformed_message_does_not_abort_its_batch() {
        let cap = || attr(NFQA_CAP_LEN, &100u32.to_be_bytes());
        let first = packet_msg(1, 10, &[cap()]);
        // Framed correctly, but its timestamp attribute has the wrong size: packet 11 is named.
        let bad = packet_msg(1, 11, &[attr(NFQA_TIMESTAMP, &[0; 8]), cap()]);
        let last = packet_msg(1, 12, &[cap()]);
        let (delivered, refused, summary) = read(&[first, bad, last].concat());
        let ids: Vec<u32> = delivered.iter().map(|p| p.id).collect();
        assert_eq!(ids, [10, 12], "both good packets are delivered");
        assert_eq!(
            refused,
            [(1, 11)],
            "the bad one is dropped, not left in the queue"
        );
        assert_eq!(
            (
                summary.packets,
                summary.malformed,
                summary.malformed_dropped
            ),
            (2, 1, 1)
        );
        assert!(
            summary
                .last_malformed
                .unwrap()
                .contains("timestamp attribute of 8 bytes"),
            "the reason is kept for the log"
        );

        // A message without a packet header names no packet: skipped, counted, nothing refused.
        let mut headless = vec![libc::AF_INET as u8, 0, 0, 1];
        headless.extend(cap());
        let headless = nlmsg(NFNL_SUBSYS_QUEUE << 8, 0, &headless);
        let (delivered, refused, summary) = read(
            &[
                packet_msg(1, 20, &[cap()]),
                headless,
                packet_msg(1, 21, &[cap()]),
            ]
            .concat(),
        );
        assert_eq!(delivered.len(), 2);
        assert!(refused.is_empty());
        assert_eq!(summary.malformed, 1);
    }

    #[test]
    fn a_cut_message_still_names_its_packet() {
        // The last message of a datagram cut by the receive slot: its length runs past the end.
        let whole = packet_msg(4, 77, &[attr(NFQA_PAYLOAD, &[0x45; 40])]);
        let cut = &whole[..whole.len() - 8];
        let datagram = [
            packet_msg(4, 76, &[attr(NFQA_CAP_LEN, &9u32.to_be_bytes())]),
            cut.to_vec(),
        ]
        .concat();
        let (delivered, refused, summary) = read(&datagram);
        assert_eq!(delivered.len(), 1);
        assert_eq!(refused, [(4, 77)]);
        assert_eq!(summary.malformed, 1);
    }
}
