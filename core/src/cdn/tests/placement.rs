//! Chunk placement per offload mode, server assignment, and the consistent-hash ring.

use crate::cdn::hashing::{hash64, HashRing, HashRingError};
use crate::cdn::{
    assign, place, Assign, AssignError, Offload, PlacementError, Popularity, DEFAULT_VNODES,
};

fn offloaded(offload: Offload, segments: usize, popularity: &Popularity, seed: u64) -> Vec<usize> {
    place(&offload, segments, popularity, seed)
        .expect("placement")
        .offloaded()
        .collect()
}

#[test]
fn all_none_and_first_k() {
    let z = &Popularity::ZipfRank;
    assert_eq!(offloaded(Offload::All, 5, z, 0), vec![0, 1, 2, 3, 4]);
    assert_eq!(offloaded(Offload::None, 5, z, 0), Vec::<usize>::new());
    assert_eq!(offloaded(Offload::FirstK(3), 5, z, 0), vec![0, 1, 2]);
    assert_eq!(offloaded(Offload::FirstK(50), 5, z, 0), vec![0, 1, 2, 3, 4]);
    let p = place(&Offload::FirstK(2), 4, z, 0).expect("placement");
    assert!(p.is_offloaded(1) && !p.is_offloaded(2) && !p.is_offloaded(99));
    assert_eq!((p.count(), p.segments()), (2, 4));
}

#[test]
fn fraction_counts_are_rounded_seeded_and_nested() {
    let z = &Popularity::ZipfRank;
    assert_eq!(offloaded(Offload::Fraction(0.3), 100, z, 7).len(), 30);
    assert_eq!(
        offloaded(Offload::Fraction(0.25), 10, z, 7).len(),
        3,
        "2.5 rounds up"
    );
    assert_eq!(offloaded(Offload::Fraction(1.0), 10, z, 7).len(), 10);
    assert_eq!(offloaded(Offload::Fraction(0.0), 10, z, 7).len(), 0);
    let a = offloaded(Offload::Fraction(0.3), 100, z, 7);
    assert_eq!(
        a,
        offloaded(Offload::Fraction(0.3), 100, z, 7),
        "same seed, same chunks"
    );
    assert_ne!(
        a,
        offloaded(Offload::Fraction(0.3), 100, z, 8),
        "another seed, other chunks"
    );
    assert_ne!(a, (0..30).collect::<Vec<_>>(), "random, not the first 30");
    let more = offloaded(Offload::Fraction(0.6), 100, z, 7);
    assert!(
        a.iter().all(|i| more.contains(i)),
        "a larger fraction offloads a superset"
    );
    for bad in [-0.1, 1.5, f64::NAN] {
        assert!(matches!(
            place(&Offload::Fraction(bad), 10, z, 0),
            Err(PlacementError::BadFraction(_))
        ));
    }
}

#[test]
fn most_popular_by_counts_and_by_zipf_rank() {
    let counts = Popularity::Counts(vec![5, 90, 5, 40, 0, 90, 7]);
    // 90 (1), 90 (5): tie broken by index; then 40 (3), then 7 (6).
    assert_eq!(
        offloaded(Offload::MostPopular(3), 7, &counts, 0),
        vec![1, 3, 5]
    );
    assert_eq!(
        offloaded(Offload::MostPopular(4), 7, &counts, 0),
        vec![1, 3, 5, 6]
    );
    assert_eq!(offloaded(Offload::MostPopular(9), 7, &counts, 0).len(), 7);
    assert!(matches!(
        place(&Offload::MostPopular(3), 8, &counts, 0),
        Err(PlacementError::CountsLength {
            counts: 7,
            segments: 8
        })
    ));
    let z = &Popularity::ZipfRank;
    let top = offloaded(Offload::MostPopular(20), 100, z, 3);
    assert_eq!(top.len(), 20);
    assert_eq!(top, offloaded(Offload::MostPopular(20), 100, z, 3));
    assert_ne!(top, offloaded(Offload::MostPopular(20), 100, z, 4));
}

#[test]
fn offload_strings_round_trip() {
    for text in ["all", "none", "fraction:0.25", "first:10", "most-popular:3"] {
        let offload: Offload = text.parse().expect(text);
        assert_eq!(offload.to_string(), text);
    }
    for bad in [
        "",
        "some",
        "fraction:2",
        "fraction:x",
        "first:-1",
        "first:",
        "most-popular",
        "all:1",
    ] {
        assert!(bad.parse::<Offload>().is_err(), "{bad}");
    }
}

#[test]
fn round_robin_and_least_loaded() {
    let servers = ["a", "b", "c"];
    let paths = ["p0", "p1", "p2", "p3", "p4"];
    assert_eq!(
        assign(&Assign::RoundRobin, &servers, &paths),
        Ok(vec![0, 1, 2, 0, 1])
    );
    let least = Assign::LeastLoaded {
        loads: vec![3, 0, 1],
    };
    // Loads (3,0,1): b → (3,1,1); b,c tie → b → (3,2,1); c → (3,2,2); b,c tie → b; then c.
    assert_eq!(assign(&least, &servers, &paths), Ok(vec![1, 1, 2, 1, 2]));
    let wrong = Assign::LeastLoaded { loads: vec![0] };
    assert_eq!(
        assign(&wrong, &servers, &paths),
        Err(AssignError::LoadsLength {
            loads: 1,
            servers: 3
        })
    );
    let none: [&str; 0] = [];
    assert_eq!(
        assign(&Assign::RoundRobin, &none, &paths),
        Err(AssignError::NoServers)
    );
    assert_eq!(
        assign(&Assign::RoundRobin, &none, &none),
        Ok(vec![]),
        "nothing to place needs no server"
    );
}

fn keys(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("/video{}/q{}/seg-{:05}.ts", i % 7, i % 3, i))
        .collect()
}

#[test]
fn consistent_hashing_is_stable_and_balanced() {
    let servers = [
        "http://dcs1:8080",
        "http://dcs2:8080",
        "http://dcs3:8080",
        "http://dcs4:8080",
    ];
    let ring = HashRing::new(&servers, DEFAULT_VNODES).expect("ring");
    let again = HashRing::new(&servers, DEFAULT_VNODES).expect("ring");
    let keys = keys(10_000);
    let mut counts = [0usize; 4];
    for key in &keys {
        let server = ring.server_for(key);
        assert_eq!(server, again.server_for(key), "same servers, same owner");
        counts[server] += 1;
    }
    // Each server within ±10% of the fair 2500.
    for (i, &c) in counts.iter().enumerate() {
        assert!(
            (2250..=2750).contains(&c),
            "server {i} got {c} of 10000: {counts:?}"
        );
    }
    // Fixed hash values (computed independently): the ring must not depend on the build or
    // process, which std's hasher does not promise.
    assert_eq!(hash64(b""), 0xf52a_15e9_a9b5_e89b);
    assert_eq!(hash64(b"/bbb/500k/seg-00000.ts"), 0xef3b_7424_6780_fb26);
}

#[test]
fn adding_a_server_moves_only_its_share_and_only_to_it() {
    let four = ["s1", "s2", "s3", "s4"];
    let five = ["s1", "s2", "s3", "s4", "s5"];
    let before = HashRing::new(&four, DEFAULT_VNODES).expect("ring");
    let after = HashRing::new(&five, DEFAULT_VNODES).expect("ring");
    let keys = keys(10_000);
    let mut moved = 0;
    for key in &keys {
        let (old, new) = (before.server_for(key), after.server_for(key));
        if old != new {
            assert_eq!(
                new,
                4,
                "{key} moved from s{} to s{} instead of the new server",
                old + 1,
                new + 1
            );
            moved += 1;
        }
    }
    // The fair share of the new server is 2000 of 10000.
    assert!((1700..=2300).contains(&moved), "{moved} keys moved");
}

#[test]
fn ring_construction_errors() {
    let none: [&str; 0] = [];
    assert_eq!(
        HashRing::new(&none, 10).err(),
        Some(HashRingError::NoServers)
    );
    assert_eq!(
        HashRing::new(&["a"], 0).err(),
        Some(HashRingError::BadVnodes { vnodes: 0 })
    );
    assert_eq!(
        HashRing::new(&["a", "b", "a"], 10).err(),
        Some(HashRingError::DuplicateServer { name: "a".into() })
    );
    let one = HashRing::new(&["only"], 1).expect("ring");
    assert!(keys(100).iter().all(|k| one.server_for(k) == 0));
}
