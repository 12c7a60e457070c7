//! Bad parameters: each is refused with an error naming it.

use crate::p2p::lp::{minimum_cloud, TradeoffInput};
use crate::p2p::{minimum_inter_isp, Isp, P2pError, Policy, System};

fn name(error: P2pError) -> String {
    match error {
        P2pError::Invalid { name, .. } => name,
        other => panic!("not an input error: {other}"),
    }
}

fn isp(peers: u32, upload: f64) -> Isp {
    Isp { peers, upload }
}

#[test]
fn a_cache_larger_than_the_catalogue_is_refused() {
    let error = System::new(vec![isp(10, 1.0)], 4, 0.1, &[1.0; 3]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "cache: B = 4 must not exceed the number of chunks J = 3"
    );
    assert_eq!(
        name(System::new(vec![isp(10, 1.0)], 0, 0.1, &[1.0; 3]).unwrap_err()),
        "cache"
    );
}

#[test]
fn capacities_must_be_positive() {
    let system = |isps| System::new(isps, 1, 0.1, &[1.0; 3]);
    assert_eq!(
        name(system(vec![isp(10, 1.0), isp(0, 1.0)]).unwrap_err()),
        "peers of ISP 2"
    );
    for upload in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(
            name(system(vec![isp(10, upload)]).unwrap_err()),
            "upload of ISP 1"
        );
    }
    assert_eq!(name(system(vec![]).unwrap_err()), "isps");
    assert_eq!(
        name(System::new(vec![isp(1, 1.0)], 1, 1.0, &[1.0]).unwrap_err()),
        "idle"
    );
    assert_eq!(
        name(System::new(vec![isp(1, 1.0)], 1, 0.0, &[1.0, 0.0]).unwrap_err()),
        "popularity of chunk 2"
    );
    assert_eq!(
        name(minimum_inter_isp(&[1.0, 1.0], &[1.0, 0.0]).unwrap_err()),
        "capacity of ISP 2"
    );
    assert_eq!(
        name(Policy::Optimal.matrix(&[-1.0], &[1.0]).unwrap_err()),
        "requests of ISP 1"
    );
    let capped = TradeoffInput {
        requests: vec![1.0],
        capacities: vec![1.0],
        inter_isp_cap: Some(-1.0),
    };
    assert_eq!(name(minimum_cloud(&capped).unwrap_err()), "inter_isp_cap");
}

#[test]
fn an_unknown_dispatch_is_refused_by_name() {
    let error = "nearest".parse::<Policy>().unwrap_err();
    assert_eq!(
        error.to_string(),
        "dispatch: unknown policy `nearest` (expected local, proportional or optimal)"
    );
    for policy in Policy::ALL {
        assert_eq!(policy.name().parse::<Policy>(), Ok(policy));
    }
}
