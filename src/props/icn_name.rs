//! ICN names: no path panics the parser, a refusal quotes the path and says which component is
//! wrong, and a name made of valid components reads back with exactly those components.

use super::damaged;
use crate::icn::name::Name;
use proptest::prelude::*;

fn component() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_~%.-]{1,12}".prop_filter("not a dot segment", |c| {
        !matches!(
            c.to_ascii_lowercase().replace("%2e", ".").as_str(),
            "." | ".."
        )
    })
}

proptest! {
    #[test]
    fn prop_icn_name_any_path(path in prop_oneof![
        any::<String>(),
        prop::collection::vec(component(), 0..6).prop_flat_map(|c| damaged(format!("/{}", c.join("/")))),
    ]) {
        match Name::parse(&path) {
            Ok(name) => {
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
