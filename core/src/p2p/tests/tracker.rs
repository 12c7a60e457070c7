//! The tracker's decisions: who serves, upload tokens, who counts as online, what it refuses.

use crate::p2p::tracker::{Choice, Tracker, TrackerParams};
use crate::p2p::Policy;
use rand::rngs::SmallRng;
use rand::SeedableRng;

/// Two ISPs: peers 0 and 1 in the first (upload 1), peer 2 in the second (upload 0.5).
fn tracker(policy: Policy) -> Tracker {
    Tracker::new(TrackerParams {
        isp_of: vec![0, 0, 1],
        upload: vec![1.0, 0.5],
        chunks: 10,
        cache: 2,
        policy,
        slot_s: 1.0,
    })
    .unwrap()
}

#[test]
fn a_playing_holder_with_upload_serves_then_the_cloud() {
    let mut t = tracker(Policy::Local);
    let mut rng = SmallRng::seed_from_u64(1);
    for p in 0..3 {
        t.heard(p, 0.0, true).unwrap();
    }
    t.cached(1, &[4]).unwrap();
    // Local: peer 0's download goes to ISP 1's peers; peer 1 caches chunk 4 but starts with no
    // token: a token needs a slot's upload.
    assert_eq!(t.locate(0, 4, 0.0, &mut rng).choice, Choice::Cloud);
    t.heard(1, 1.0, true).unwrap();
    let d = t.locate(0, 4, 1.0, &mut rng);
    assert_eq!((d.isp, d.choice), (0, Choice::Peer(1)));
    // Its one token is spent; nobody else holds chunk 4; a peer never serves itself.
    assert_eq!(t.locate(0, 4, 1.0, &mut rng).choice, Choice::Cloud);
    assert_eq!(t.locate(1, 4, 2.0, &mut rng).choice, Choice::Cloud);
    assert_eq!(t.totals().to_peers[0][0], 1);
    assert_eq!(t.totals().to_cloud[0][0], 3);
}

#[test]
fn idle_silent_and_departed_peers_serve_no_one() {
    let mut t = tracker(Policy::Local);
    let mut rng = SmallRng::seed_from_u64(2);
    t.cached(1, &[3]).unwrap();
    t.heard(1, 5.0, false).unwrap();
    assert_eq!(t.locate(0, 3, 5.0, &mut rng).choice, Choice::Cloud, "idle");
    t.heard(1, 6.0, true).unwrap();
    assert_eq!(
        t.locate(0, 3, 9.0, &mut rng).choice,
        Choice::Cloud,
        "silent for 3 slots"
    );
    t.heard(1, 10.0, true).unwrap();
    assert_eq!(t.locate(0, 3, 10.0, &mut rng).choice, Choice::Peer(1));
    t.left(1);
    t.heard(1, 12.0, true).unwrap();
    assert_eq!(t.locate(0, 3, 12.0, &mut rng).choice, Choice::Cloud, "left");
    assert!(t.cached(1, &[5]).is_err());
}

#[test]
fn caches_are_bounded_by_b_and_j_and_each_report_replaces_the_last() {
    let mut t = tracker(Policy::Local);
    let mut rng = SmallRng::seed_from_u64(4);
    for p in 0..3 {
        t.heard(p, 5.0, true).unwrap();
    }
    t.cached(1, &[1, 2]).unwrap();
    assert!(t.cached(1, &[1, 2, 3]).unwrap_err().contains("B = 2"));
    assert!(t
        .cached(1, &[10])
        .unwrap_err()
        .contains("past the catalogue"));
    // Refused reports changed nothing: peer 1 still holds 1 and 2.
    assert_eq!(t.locate(0, 1, 5.0, &mut rng).choice, Choice::Peer(1));
    // A later report replaces the set: 1 is gone, whatever reports came before were lost.
    t.cached(1, &[3, 3, 2]).unwrap();
    t.heard(1, 6.0, true).unwrap();
    assert_eq!(t.locate(0, 1, 6.0, &mut rng).choice, Choice::Cloud);
    assert_eq!(t.locate(0, 3, 6.0, &mut rng).choice, Choice::Peer(1));
}

#[test]
fn a_peer_reports_about_once_a_slot() {
    let mut t = tracker(Policy::Local);
    // Four reports may come at once (held up on the way), a fifth is refused...
    for _ in 0..4 {
        t.heard(0, 0.0, true).unwrap();
    }
    assert!(t.heard(0, 0.0, true).unwrap_err().contains("slot reports"));
    assert!(t.heard(0, 0.5, true).is_err(), "half a slot's credit");
    // ...until a slot has passed since the last report accepted; other peers are not held.
    t.heard(1, 0.5, true).unwrap();
    t.heard(0, 1.0, true).unwrap();
    assert!(t.heard(0, 1.0, true).is_err());
    // A peer that kept to one a slot has the whole burst again.
    for slot in 2..10 {
        t.heard(0, f64::from(slot), true).unwrap();
    }
    for _ in 0..3 {
        t.heard(0, 20.0, true).unwrap();
    }
}

#[test]
fn the_optimal_dispatch_follows_the_measured_rates() {
    let mut t = tracker(Policy::Optimal);
    let mut rng = SmallRng::seed_from_u64(3);
    // Both ISPs' peers play; ISP 2 asks for far more than its 0.5 chunks per slot.
    for slot in 0..60 {
        let now = f64::from(slot);
        for p in 0..3 {
            t.heard(p, now, true).unwrap();
        }
        for _ in 0..2 {
            t.locate(2, 7, now, &mut rng);
        }
        t.end_slot(now + 0.99).unwrap();
    }
    let (r, c) = (t.requests().to_vec(), t.capacities().to_vec());
    assert!((r[1] - 2.0).abs() < 0.01 && r[0] < 0.01, "{r:?}");
    assert!(
        (c[0] - 2.0).abs() < 0.01 && (c[1] - 0.5).abs() < 0.01,
        "{c:?}"
    );
    assert_eq!(t.dispatch(), Policy::Optimal.matrix(&r, &c).unwrap());
    // ISP 2 lacks 1.5, ISP 1 spares 2: ISP 2 sends 1.5 of its 2 downloads a slot abroad.
    assert!((t.dispatch()[1][0] - 0.75).abs() < 0.01);
}

#[test]
fn bad_parameters_are_named() {
    let params = TrackerParams {
        isp_of: vec![0, 2],
        upload: vec![1.0, 1.0],
        chunks: 10,
        cache: 2,
        policy: Policy::Local,
        slot_s: 1.0,
    };
    let name = |p: TrackerParams| match Tracker::new(p) {
        Err(crate::p2p::P2pError::Invalid { name, .. }) => name,
        other => panic!("{:?}", other.map(|_| ())),
    };
    assert_eq!(name(params.clone()), "ISP of peer 2");
    assert_eq!(
        name(TrackerParams {
            isp_of: vec![0, 0],
            ..params.clone()
        }),
        "peers of ISP 2"
    );
    assert_eq!(
        name(TrackerParams {
            isp_of: vec![0, 1],
            upload: vec![1.0, 0.0],
            ..params.clone()
        }),
        "upload of ISP 2"
    );
    assert_eq!(
        name(TrackerParams {
            isp_of: vec![0, 1],
            cache: 11,
            ..params.clone()
        }),
        "cache"
    );
    assert_eq!(
        name(TrackerParams {
            isp_of: vec![0, 1],
            slot_s: 0.0,
            ..params
        }),
        "slot"
    );
}
