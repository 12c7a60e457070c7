//! Theorem 1's max flow against brute force: every way of giving each request to one peer
//! that caches its chunk, or to none, within every peer's upload slots.

use crate::p2p::flow::{served, Peer};
use proptest::prelude::*;

/// The most requests any assignment serves, by trying them all.
fn brute_force(requests: &[u64], peers: &[Peer]) -> u64 {
    let wanted: Vec<u32> = (requests.iter().enumerate())
        .flat_map(|(j, &r)| std::iter::repeat_n(j as u32, r as usize))
        .collect();
    fn best(wanted: &[u32], peers: &[Peer], left: &mut [u64]) -> u64 {
        let Some((&chunk, rest)) = wanted.split_first() else {
            return 0;
        };
        let mut most = best(rest, peers, left);
        for (i, peer) in peers.iter().enumerate() {
            if left[i] > 0 && peer.chunks.contains(&chunk) {
                left[i] -= 1;
                most = most.max(1 + best(rest, peers, left));
                left[i] += 1;
            }
        }
        most
    }
    let mut left: Vec<u64> = peers.iter().map(|p| p.slots).collect();
    best(&wanted, peers, &mut left)
}

fn instance() -> impl Strategy<Value = (Vec<u64>, Vec<Peer>)> {
    (1usize..=3).prop_flat_map(|chunks| {
        let requests = proptest::collection::vec(0u64..=2, chunks);
        let peer = (0u32..(1 << chunks), 0u64..=2).prop_map(move |(mask, slots)| Peer {
            chunks: (0..chunks as u32)
                .filter(|c| mask & (1 << c) != 0)
                .collect(),
            slots,
        });
        (requests, proptest::collection::vec(peer, 1..=3))
    })
}

proptest! {
    #[test]
    fn max_flow_equals_the_best_assignment((requests, peers) in instance()) {
        let flow = served(&requests, &peers);
        prop_assert_eq!(flow.total, brute_force(&requests, &peers));
        prop_assert_eq!(flow.per_chunk.iter().sum::<u64>(), flow.total);
        for (s, r) in flow.per_chunk.iter().zip(&requests) {
            prop_assert!(s <= r);
        }
    }
}

#[test]
fn peers_of_one_cache_state_pool_their_upload() {
    // Two peers caching {0, 1} with one slot each serve two requests of chunk 0 together;
    // a peer caching only chunk 1 cannot help.
    let peers = [
        Peer {
            chunks: vec![1, 0],
            slots: 1,
        },
        Peer {
            chunks: vec![0, 1],
            slots: 1,
        },
        Peer {
            chunks: vec![1],
            slots: 5,
        },
    ];
    let flow = served(&[3, 1], &peers);
    assert_eq!(flow.total, 3);
    assert_eq!(flow.per_chunk, [2, 1]);
    assert_eq!(served(&[0, 0], &peers).total, 0);
}
