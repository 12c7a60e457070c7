//! The netlink/NFQUEUE parser: no datagram panics it or makes it loop, every error names the
//! layer and field it refuses, packet messages read back as built, and a damaged message costs
//! only itself: every other packet of its datagram is still delivered.

use super::tests::{attr, nlmsg, packet_msg, read, timestamp};
use super::*;
use proptest::prelude::*;

/// A packet as the kernel would queue it, and its message.
fn packet() -> impl Strategy<Value = (Packet, Vec<u8>)> {
    let stamp = prop_oneof![
        Just(None),
        (0..=u64::MAX / 1_000_000_000 - 1, 0..1_000_000u64).prop_map(Some)
    ];
    (
        any::<u16>(),
        any::<u32>(),
        any::<u32>(),
        any::<bool>(),
        stamp,
    )
        .prop_map(|(queue_num, id, len, copied, stamp)| {
            // A short packet is copied whole (its length is the payload's); a long one is cut
            // to the copy range and carries its capture length.
            let len = if copied { len % 41 } else { len };
            let mut extra = Vec::new();
            if let Some((sec, usec)) = stamp {
                extra.push(timestamp(sec, usec));
            }
            extra.push(if copied {
                attr(NFQA_PAYLOAD, &vec![0x45; len as usize])
            } else {
                attr(NFQA_CAP_LEN, &len.to_be_bytes())
            });
            let packet = Packet {
                queue_num,
                id,
                len,
                timestamp_ns: stamp.map(|(sec, usec)| sec * 1_000_000_000 + usec * 1_000),
                gso: false,
                headers_len: 0,
            };
            (packet, packet_msg(queue_num, id, &extra))
        })
}

/// Byte changes to make inside a message: (position as a fraction of it, new byte).
fn damage() -> impl Strategy<Value = Vec<(f64, u8)>> {
    prop::collection::vec((0.0..1.0f64, any::<u8>()), 1..6)
}

fn errors_name_their_field(malformed: &Malformed) -> Result<(), TestCaseError> {
    let e = &malformed.error;
    prop_assert!(
        e.starts_with("netlink: ")
            || e.starts_with("nfqueue: queue ")
            || e.starts_with("nfqueue: packet message"),
        "{e}"
    );
    Ok(())
}

proptest! {
    #[test]
    fn prop_nfqueue_arbitrary_datagrams(datagram in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut count = 0;
        for message in messages(&datagram) {
            count += 1;
            prop_assert!(count <= datagram.len() / NLMSG_HDRLEN + 1, "the iteration must end");
            if let Err(malformed) = message {
                errors_name_their_field(&malformed)?;
            }
        }
        let (delivered, refused, summary) = read(&datagram);
        prop_assert_eq!(summary.packets, delivered.len());
        prop_assert_eq!(summary.malformed_dropped as usize, refused.len());
    }

    #[test]
    fn prop_nfqueue_packets_read_back_as_built(packets in prop::collection::vec(packet(), 1..8)) {
        let datagram: Vec<u8> = packets.iter().flat_map(|(_, m)| m.clone()).collect();
        let (delivered, refused, summary) = read(&datagram);
        let want: Vec<Packet> = packets.iter().map(|(p, _)| *p).collect();
        prop_assert_eq!(delivered, want);
        prop_assert!(refused.is_empty());
        prop_assert_eq!(summary.malformed, 0);
    }

    /// Damage anywhere in one message but its length: every other packet is delivered exactly,
    /// and the damaged one is delivered, refused (dropped) or, if it no longer says it is a
    /// packet, ignored, never anything else.
    #[test]
    fn prop_nfqueue_damage_costs_only_its_message(
        packets in prop::collection::vec(packet(), 2..8),
        which in any::<prop::sample::Index>(),
        damage in damage(),
    ) {
        let k = which.index(packets.len());
        let mut datagram = Vec::new();
        let mut start = 0;
        for (i, (_, message)) in packets.iter().enumerate() {
            if i == k {
                start = datagram.len();
            }
            datagram.extend_from_slice(message);
        }
        let len = packets[k].1.len();
        for (at, byte) in damage {
            let at = 4 + ((len - 4) as f64 * at) as usize;
            datagram[start + at.min(len - 1)] = byte;
        }
        let (mut delivered, refused, summary) = read(&datagram);
        prop_assert!(delivered.len() + refused.len() <= packets.len());
        prop_assert!(refused.len() <= 1 && summary.malformed <= 1);
        if delivered.len() == packets.len() {
            delivered.remove(k); // the damaged message, still a packet (its fields may differ)
        }
        let others: Vec<Packet> = packets
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != k)
            .map(|(_, (p, _))| *p)
            .collect();
        prop_assert_eq!(delivered, others);
    }

    /// A datagram cut anywhere (as a too-small receive slot cuts it) delivers every message
    /// that fits whole, and drops the cut packet when its header survived.
    #[test]
    fn prop_nfqueue_cut_datagrams(packets in prop::collection::vec(packet(), 1..6), cut in 0.0..1.0f64) {
        let datagram: Vec<u8> = packets.iter().flat_map(|(_, m)| m.clone()).collect();
        let cut = (datagram.len() as f64 * cut) as usize;
        let (delivered, refused, summary) = read(&datagram[..cut]);
        let mut end = 0;
        let whole: Vec<Packet> = packets.iter().take_while(|(_, m)| { end += m.len(); end <= cut }).map(|(p, _)| *p).collect();
        prop_assert_eq!(&delivered, &whole);
        if whole.len() < packets.len() {
            let (cut_packet, _) = packets[whole.len()];
            let header_end = end - packets[whole.len()].1.len() + NLMSG_HDRLEN + NFGENMSG_LEN + 12;
            let start = end - packets[whole.len()].1.len();
            if cut > start {
                prop_assert_eq!(summary.malformed, 1);
                if cut >= header_end {
                    prop_assert_eq!(refused, vec![(cut_packet.queue_num, cut_packet.id)]);
                }
            }
        }
    }

    #[test]
    fn prop_nfqueue_error_acks(seq in any::<u32>(), errno in any::<i32>(), tail in prop::collection::vec(any::<u8>(), 0..20)) {
        let mut body = errno.to_ne_bytes().to_vec();
        body.extend(tail);
        let message = nlmsg(NLMSG_ERROR, seq, &body);
        prop_assert_eq!(
            messages(&message).next(),
            Some(Ok(Message::Ack { seq, errno: errno.saturating_neg() }))
        );
    }
}
