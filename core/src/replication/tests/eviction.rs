//! Each eviction rule's choice on a small state: 5 contents, the lost one is 4.

use crate::replication::eviction::{Evictor, LflEstimates, LrlList};
use crate::replication::Rule;
use rand::rngs::SmallRng;
use rand::SeedableRng;

/// Contents 1 and 3 have no idle replica; the others have one in slot 10 + c.
const AVAILABLE: [u32; 3] = [0, 2, 4];

fn choose(evictor: &Evictor, rng: &mut SmallRng) -> Option<(u32, u32)> {
    evictor.choose(
        4,
        &AVAILABLE,
        |c| AVAILABLE.contains(&c),
        |c, _: &mut SmallRng| Some(10 + c),
        rng,
    )
}

#[test]
fn lrl_evicts_the_least_recently_lost_available_content() {
    let mut evictor = Evictor::Lrl(LrlList::new(&[0, 1, 2, 3, 4]));
    let mut rng = SmallRng::seed_from_u64(1);
    // From the least recent: 4 (the lost one), 3 (busy), 2.
    assert_eq!(choose(&evictor, &mut rng), Some((2, 12)));
    evictor.record_loss(2, 1.0);
    // Now 4, 3, 1 (busy), 0.
    assert_eq!(choose(&evictor, &mut rng), Some((0, 10)));
    if let Evictor::Lrl(list) = &evictor {
        assert_eq!(list.least_recent().collect::<Vec<_>>(), [4, 3, 1, 0, 2]);
    }
}

#[test]
fn lfl_evicts_the_available_content_with_the_smallest_estimate() {
    let mut estimates = LflEstimates::new(&[0, 1, 2, 3, 4], 10.0);
    for (c, t) in [(0, 1.0), (0, 2.0), (0, 3.0), (2, 50.0), (1, 0.0)] {
        estimates.record(c, t);
    }
    // At t = 50 (τ = 10): content 0 was lost thrice about 48 units ago (≈ 0.0025), content 2
    // once just now (0.1), 1 once at 0; 3 and 4 never.
    assert!(estimates.rate(0, 50.0) < estimates.rate(2, 50.0));
    let evictor = Evictor::Lfl(estimates);
    let mut rng = SmallRng::seed_from_u64(1);
    // Never lost: 3 (busy), 4 (the lost one); then 1 (busy), then 0.
    assert_eq!(choose(&evictor, &mut rng), Some((0, 10)));
}

#[test]
fn random_evicts_only_available_contents_other_than_the_lost_one() {
    let evictor = Evictor::new(Rule::Random, 5, 1.0, &mut SmallRng::seed_from_u64(1));
    let mut rng = SmallRng::seed_from_u64(2);
    let mut seen = [0; 5];
    for _ in 0..1000 {
        let (c, slot) = choose(&evictor, &mut rng).unwrap();
        assert_eq!(slot, 10 + c);
        seen[c as usize] += 1;
    }
    assert_eq!((seen[1], seen[3], seen[4]), (0, 0, 0));
    assert!(seen[0] > 400 && seen[2] > 400, "{seen:?}");
}

#[test]
fn no_victim_when_no_slot_fits() {
    let evictor = Evictor::Lrl(LrlList::new(&[0, 1, 2, 3, 4]));
    let choice = evictor.choose(
        4,
        &AVAILABLE,
        |c| AVAILABLE.contains(&c),
        |_, _: &mut SmallRng| None,
        &mut SmallRng::seed_from_u64(1),
    );
    assert_eq!(choice, None);
}
