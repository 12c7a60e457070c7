//! The Forwarding Information Base: name prefixes to next hops with costs, looked up by longest
//! prefix match over whole components (`/app1` matches `/app1/x`, never `/app10/x`). Each
//! entry keeps its next hops in ascending cost, so the match is NFD's best-route strategy's
//! order: the cheapest first, the others as fallbacks.

use std::collections::HashMap;

use super::name::Name;

/// A way out of the router: `face` (a URL, a site…) at `cost`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextHop<F> {
    pub face: F,
    pub cost: u64,
}

#[derive(Debug, Clone)]
pub struct Fib<F> {
    entries: HashMap<Name, Vec<NextHop<F>>>,
}

impl<F> Default for Fib<F> {
    fn default() -> Fib<F> {
        Fib {
            entries: HashMap::new(),
        }
    }
}

impl<F: PartialEq> Fib<F> {
    pub fn new() -> Fib<F> {
        Fib::default()
    }

    /// Adds `face` at `cost` under `prefix`; a face already there gets the new cost. Next hops
    /// of equal cost keep the order they were added in.
    pub fn insert(&mut self, prefix: Name, face: F, cost: u64) {
        let hops = self.entries.entry(prefix).or_default();
        hops.retain(|hop| hop.face != face);
        let at = hops.partition_point(|hop| hop.cost <= cost);
        hops.insert(at, NextHop { face, cost });
    }

    /// The longest prefix of `name` with an entry, and its next hops cheapest first.
    pub fn longest_match(&self, name: &Name) -> Option<(&Name, &[NextHop<F>])> {
        name.prefixes()
            .find_map(|prefix| self.entries.get_key_value(prefix))
            .map(|(prefix, hops)| (prefix, hops.as_slice()))
    }

    /// Prefixes with an entry.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::icn::name::name;

    fn faces<'a>(fib: &'a Fib<&'static str>, lookup: &str) -> Option<(String, Vec<&'a str>)> {
        fib.longest_match(&name(lookup)).map(|(prefix, hops)| {
            (
                prefix.to_string(),
                hops.iter().map(|hop| hop.face).collect(),
            )
        })
    }

    #[test]
    fn the_longest_prefix_by_components_wins() {
        let mut fib = Fib::new();
        fib.insert(name("/app1"), "border-app1", 0);
        fib.insert(name("/app1/videos"), "border-videos", 0);
        fib.insert(name("/app10"), "border-app10", 0);
        let found = |n| faces(&fib, n);
        assert_eq!(
            found("/app1/obj42"),
            Some(("/app1".into(), vec!["border-app1"]))
        );
        assert_eq!(
            found("/app1/videos/v/1"),
            Some(("/app1/videos".into(), vec!["border-videos"]))
        );
        assert_eq!(
            found("/app1/videos2"),
            Some(("/app1".into(), vec!["border-app1"]))
        );
        assert_eq!(
            found("/app10/x"),
            Some(("/app10".into(), vec!["border-app10"]))
        );
        // `/app1` is no prefix of `/app100`, and there is no default route.
        assert_eq!(found("/app100/x"), None);
        assert_eq!(found("/"), None);
        assert_eq!(fib.len(), 3);
    }

    #[test]
    fn the_root_is_the_default_route() {
        let mut fib = Fib::new();
        assert!(fib.is_empty());
        fib.insert(name("/"), "default", 0);
        fib.insert(name("/app1"), "app1", 0);
        assert_eq!(faces(&fib, "/x/y"), Some(("/".into(), vec!["default"])));
        assert_eq!(faces(&fib, "/"), Some(("/".into(), vec!["default"])));
        assert_eq!(faces(&fib, "/app1/y"), Some(("/app1".into(), vec!["app1"])));
    }

    #[test]
    fn next_hops_are_ordered_by_cost() {
        let mut fib = Fib::new();
        let app = name("/app1");
        fib.insert(app.clone(), "far", 20);
        fib.insert(app.clone(), "near", 5);
        fib.insert(app.clone(), "also-near", 5);
        fib.insert(app.clone(), "middle", 10);
        let (_, hops) = fib.longest_match(&name("/app1/x")).expect("a route");
        let order: Vec<(&str, u64)> = hops.iter().map(|h| (h.face, h.cost)).collect();
        assert_eq!(
            order,
            [("near", 5), ("also-near", 5), ("middle", 10), ("far", 20)]
        );
        // Re-adding a face moves it to its new cost.
        fib.insert(app, "far", 0);
        assert_eq!(
            faces(&fib, "/app1/x").map(|(_, f)| f),
            Some(vec!["far", "near", "also-near", "middle"])
        );
    }
}
