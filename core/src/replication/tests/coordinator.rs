//! The coordinator's decisions on a farm small enough to follow by hand: 3 servers of 2 slots,
//! contents 0, 1 and 2.

use crate::replication::coordinator::{Coordinator, Decision, Trigger};
use crate::replication::farm::Observer;
use crate::replication::{Rule, Scheme};
use rand::rngs::SmallRng;
use rand::SeedableRng;

struct Nothing;

impl Observer for Nothing {
    fn available_changes(&mut self, _: u32, _: u32) {}
    fn replicas_change(&mut self, _: u32, _: u32) {}
}

/// Server 0 stores {0, 1}, server 1 {0, 1}, server 2 {0, 2}.
fn coordinator(scheme: Option<Scheme>, rng: &mut SmallRng) -> Coordinator {
    Coordinator::new(3, 2, vec![0, 1, 0, 1, 0, 2], scheme, 10.0, rng)
}

const LRL: Scheme = Scheme {
    rule: Rule::Lrl,
    virtual_losses: false,
};

#[test]
fn a_request_goes_to_an_idle_server_storing_it_and_is_lost_when_none_is() {
    let mut rng = SmallRng::seed_from_u64(7);
    let mut farm = coordinator(None, &mut rng);
    let step = farm.request(2, 0.0, &mut Nothing, &mut rng);
    assert_eq!(step.decision, Decision::Serve { server: 2 });
    assert_eq!(step.copy, None);
    // Server 2 is busy: content 2 has no idle replica, content 0 two.
    assert_eq!(farm.farm().available_count(2), 0);
    assert_eq!(farm.farm().available_count(0), 2);
    let lost = farm.request(2, 0.1, &mut Nothing, &mut rng);
    assert_eq!(lost.decision, Decision::Lost);
    assert_eq!(lost.copy, None, "a static replication never copies");
    assert_eq!(farm.finish(2, &mut Nothing), Some(2));
    assert_eq!(farm.farm().available_count(2), 1);
    assert_eq!(
        farm.finish(2, &mut Nothing),
        None,
        "an idle server cannot finish"
    );
}

#[test]
fn a_loss_replaces_an_available_replica_on_an_idle_server_not_storing_the_content() {
    let mut rng = SmallRng::seed_from_u64(7);
    let mut farm = coordinator(Some(LRL), &mut rng);
    assert_eq!(
        farm.request(2, 0.0, &mut Nothing, &mut rng).decision,
        Decision::Serve { server: 2 }
    );
    let step = farm.request(2, 0.5, &mut Nothing, &mut rng);
    assert_eq!(step.decision, Decision::Lost);
    // Servers 0 and 1 are idle and store 0 and 1; either may give a slot up, never server 2.
    let copy = step.copy.expect("an idle server not storing 2 exists");
    assert!(copy.server < 2, "{copy:?}");
    assert_eq!(copy.content, 2);
    assert_eq!(copy.trigger, Trigger::Loss);
    assert!(copy.evicted == 0 || copy.evicted == 1);
    assert_eq!(copy.slot / 2, copy.server);
    assert_eq!(farm.farm().replicas(), {
        let mut replicas = vec![3, 2, 1];
        replicas[copy.evicted as usize] -= 1;
        replicas[2] += 1;
        replicas
    });
    // The new replica is idle: the next request for 2 is served there.
    assert_eq!(
        farm.request(2, 0.6, &mut Nothing, &mut rng).decision,
        Decision::Serve {
            server: copy.server
        }
    );
}

#[test]
fn no_copy_when_every_idle_server_stores_the_lost_content() {
    let mut rng = SmallRng::seed_from_u64(3);
    // Every server stores 0; busy the three of them, then lose 0: nothing can be replaced.
    let mut farm = coordinator(Some(LRL), &mut rng);
    for t in 0..3 {
        assert!(matches!(
            farm.request(0, t as f64, &mut Nothing, &mut rng).decision,
            Decision::Serve { .. }
        ));
    }
    let step = farm.request(0, 4.0, &mut Nothing, &mut rng);
    assert_eq!(step.decision, Decision::Lost);
    assert_eq!(step.copy, None);
}
