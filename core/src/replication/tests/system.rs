//! Bad parameters are refused with an error naming the parameter.

use crate::replication::{ParamError, Replication, System};

#[test]
fn impossible_farms_are_refused_by_name() {
    let e = System::new(vec![0.1; 10], 2, 4).unwrap_err();
    assert_eq!(e, ParamError::StorageBelowCatalog { m: 2, d: 4, n: 10 });
    assert!(
        e.to_string().starts_with("m·d = 2·4 = 8 is below n = 10"),
        "{e}"
    );
    let e = System::new(vec![5.0; 4], 10, 2).unwrap_err();
    assert!(e.to_string().starts_with("rho = 2 must be below 1"), "{e}");
    let e = System::new(vec![5.0; 4], 10, 5).unwrap_err();
    assert!(e.to_string().starts_with("d = 5 is above n = 4"), "{e}");
    let e = System::new(vec![1.0, f64::NAN], 10, 1).unwrap_err();
    assert!(e.to_string().starts_with("lambda:"), "{e}");
    assert!(System::new(vec![], 10, 1).is_err());
    assert!(System::new(vec![1.0], 0, 1).is_err());
}

#[test]
fn scheme_names_read_back_and_unknown_ones_are_refused() {
    for name in crate::replication::scheme::NAMES {
        let r: Replication = name.parse().unwrap();
        assert_eq!(r.to_string(), name);
    }
    for bad in ["lru", "optimized-virtual", "", "LRL"] {
        let e = bad.parse::<Replication>().unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("scheme `{bad}` does not exist")),
            "{e}"
        );
    }
}
