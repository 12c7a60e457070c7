//! Proportional and optimized replication keep to the slots and the cap.

use crate::replication::allocation::{cap, optimized, proportional};
use crate::replication::placement::{place, EMPTY};
use crate::replication::popularity::{class_farm, zipf_farm};
use rand::rngs::SmallRng;
use rand::SeedableRng;

fn total(r: &[u32]) -> u64 {
    r.iter().map(|&x| x as u64).sum()
}

#[test]
fn proportional_fills_the_slots_under_the_cap() {
    for system in [zipf_farm(0.8), zipf_farm(1.2), class_farm()] {
        let system = system.unwrap();
        let r = proportional(&system);
        assert_eq!(total(&r), (system.m() * system.d()) as u64);
        assert!(r.iter().all(|&x| x <= cap(&system)));
        // More popular, at least as many replicas.
        assert!(r.windows(2).all(|w| w[0] >= w[1]));
    }
    // Zipf 1.2's top content would need more than m: it is held at 95%.
    let system = zipf_farm(1.2).unwrap();
    assert_eq!(proportional(&system)[0], 1900);
}

#[test]
fn equation_5_keeps_the_budget() {
    for system in [zipf_farm(0.8), zipf_farm(1.2), class_farm()] {
        let system = system.unwrap();
        let r = optimized(&system).unwrap();
        assert!(total(&r) <= (system.m() * system.d()) as u64);
        assert!(total(&r) + system.n() as u64 >= (system.m() * system.d()) as u64);
        assert!(r.iter().all(|&x| x <= cap(&system)));
        assert!(r.windows(2).all(|w| w[0] >= w[1]));
    }
    // Uniform plus a logarithmic correction: flatter than proportional.
    let system = zipf_farm(0.8).unwrap();
    let (p, o) = (proportional(&system), optimized(&system).unwrap());
    assert!(
        o[0] < p[0] && o[199] > p[199],
        "{} {} {} {}",
        o[0],
        p[0],
        o[199],
        p[199]
    );
}

#[test]
fn placement_puts_each_replica_on_a_distinct_server() {
    let system = zipf_farm(1.2).unwrap();
    let r = proportional(&system);
    let slots = place(&system, &r, &mut SmallRng::seed_from_u64(3)).unwrap();
    let d = system.d();
    let mut counts = vec![0u32; system.n()];
    for server in slots.chunks(d) {
        let mut held: Vec<u32> = server.iter().copied().filter(|&c| c != EMPTY).collect();
        let len = held.len();
        held.sort();
        held.dedup();
        assert_eq!(held.len(), len, "a server holds a content twice");
        held.iter().for_each(|&c| counts[c as usize] += 1);
    }
    assert_eq!(counts, r);
}
