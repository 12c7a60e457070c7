//! ICN names: no path panics the parser, a refusal quotes the path and says which component is
//! wrong, and a name made of valid components reads back with exactly those components.

use crate::icn::name::Name;
use crate::testing::damaged;
use proptest::prelude::*;

fn is_dot_segment(component: &str) -> bool {
    matches!(
        component.to_ascii_lowercase().replace("%2e", ".").as_str(),
        "." | ".."
    )
}

fn component() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_~%.-]{1,12}".prop_filter("not a dot segment", |c| !is_dot_segment(c))
}

/// A valid component or one of the spellings the parser must refuse.
fn near_component() -> impl Strategy<Value = String> {
    const TRICKY: &[&str] = &[
        ".", "..", "%2e", "%2E.", ".%2e", "%2e%2E", "", "a?b", "a b", "a\\b", "a#", "\t",
    ];
    prop_oneof![3 => component(), 1 => prop::sample::select(TRICKY).prop_map(String::from)]
}

proptest! {
    #[test]
    fn prop_icn_name_any_path(path in prop_oneof![
        any::<String>(),
        prop::collection::vec(near_component(), 0..6).prop_flat_map(|c| damaged(format!("/{}", c.join("/")))),
    ]) {
        match Name::parse(&path) {
            Ok(name) => {
                // What the parser promises of a name it accepts.
                for c in name.components() {
                    prop_assert!(!is_dot_segment(c), "{path:?}");
                    prop_assert!(!c.contains(|c: char| c.is_control() || c.is_whitespace() || matches!(c, '?' | '#' | '\\')), "{path:?}");
                }
                let slashes = path.matches('/').count() - usize::from(name.is_root());
                prop_assert_eq!(name.components().count(), slashes, "empty component in {:?}", path);
                prop_assert_eq!(name.as_str(), path.as_str());
                prop_assert_eq!(Name::parse(&name.to_string()), Ok(name.clone()));
            }
            Err(e) => {
                let prefix = format!("name {path:?}: ");
                prop_assert!(e.starts_with(&prefix), "{e}");
                let why = &e[prefix.len()..];
                prop_assert!(why == "must start with '/'" || why.starts_with("component "), "{e}");
            }
        }
    }

    #[test]
    fn prop_icn_name_components_round_trip(components in prop::collection::vec(component(), 0..8)) {
        let path = format!("/{}", components.join("/"));
        let name = Name::parse(&path).map_err(TestCaseError::fail)?;
        prop_assert_eq!(name.components().collect::<Vec<_>>(), components.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assert_eq!(name.is_root(), components.is_empty());
        for prefix in name.prefixes() {
            let prefix = Name::parse(prefix).map_err(TestCaseError::fail)?;
            prop_assert!(prefix.is_prefix_of(&name));
        }
    }
}
