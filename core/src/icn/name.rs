//! ICN names: the components of a URL path (`/app1/obj42` is `app1`, `obj42`), compared and
//! matched component by component as NDN names are, so that `/app1` is a prefix of
//! `/app1/obj42` but not of `/app10/x`.
//!
//! A name is kept as its canonical path text, which is what hashes and compares: tables keyed by
//! names (CS, PIT, FIB) can then be probed with a borrowed `&str` of a prefix, without building
//! a name per lookup. Components are kept as written (percent-escapes are not decoded), so two
//! spellings of one component are two names, as they are two URLs.

use std::borrow::Borrow;
use std::fmt;

/// The longest name taken, in bytes. A router's Content Store counts the bodies it keeps
/// against its capacity, not their names (so that a capacity of N objects' bytes holds N
/// objects); bounded names keep what a client can make it hold beyond that small.
pub const MAX_NAME_BYTES: usize = 1024;

/// A validated name: `/` (the root, no components) or `/C1/C2/…` with every component
/// non-empty and neither `.` nor `..`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(String);

impl Name {
    /// The name a URL path spells. Refused, with the reason: no leading `/`, an empty
    /// component (`//`, or a trailing `/` after a component), a dot segment (`.`, `..`, or one
    /// spelled with `%2e`, which URL parsers resolve too, so the name fetched upstream would
    /// differ from the one cached), a query or fragment, a backslash (a `/` to URL parsers),
    /// control or space characters, and a path longer than [`MAX_NAME_BYTES`].
    pub fn parse(path: &str) -> Result<Name, String> {
        if path.len() > MAX_NAME_BYTES {
            let length = path.len();
            return Err(format!(
                "a name of {length} bytes: at most {MAX_NAME_BYTES} are taken"
            ));
        }
        let fail = |why: String| Err(format!("name {path:?}: {why}"));
        let Some(rest) = path.strip_prefix('/') else {
            return fail("must start with '/'".into());
        };
        if rest.is_empty() {
            return Ok(Name("/".into()));
        }
        for (i, component) in rest.split('/').enumerate() {
            let position = i + 1;
            if component.is_empty() {
                return fail(format!("component {position} is empty"));
            }
            // At most `%2e%2e`: longer components are no dot segment, and need no copy.
            if component.len() <= 6
                && matches!(
                    component.to_ascii_lowercase().replace("%2e", ".").as_str(),
                    "." | ".."
                )
            {
                return fail(format!(
                    "component {position} is the dot segment {component:?}"
                ));
            }
            if let Some(c) = component
                .chars()
                .find(|c| c.is_control() || c.is_whitespace() || matches!(c, '?' | '#' | '\\'))
            {
                return fail(format!("component {position} contains {c:?}"));
            }
        }
        Ok(Name(path.to_string()))
    }

    /// The path text, `/` for the root.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The components, none for the root.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').skip(1).filter(|c| !c.is_empty())
    }

    /// True for the root, `/`, which has no components (and is a prefix of every name).
    pub fn is_root(&self) -> bool {
        self.0 == "/"
    }

    /// True when every component of `self` is the same component of `other`, in order: what
    /// the tests check `prefixes` against.
    #[cfg(test)]
    pub fn is_prefix_of(&self, other: &Name) -> bool {
        self.is_root()
            || other.0.strip_prefix(self.0.as_str()).is_some_and(|rest| {
                // A prefix must end where a component ends: `/app1` before `/x`, not `0/x`.
                rest.is_empty() || rest.starts_with('/')
            })
    }

    /// Every prefix of this name as path text, longest (the name itself) first and the root
    /// `/` last: what a longest-prefix match probes, in order.
    pub fn prefixes(&self) -> impl Iterator<Item = &str> {
        let text = self.0.as_str();
        let cuts = text.rmatch_indices('/').map(|(at, _)| at);
        std::iter::once(text)
            .chain(cuts.filter(|&at| at > 0).map(move |at| &text[..at]))
            .chain((!self.is_root()).then_some("/"))
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Name {
    type Err = String;

    fn from_str(text: &str) -> Result<Name, String> {
        Name::parse(text)
    }
}

/// A name from text known to be valid, for tests.
#[cfg(test)]
pub(crate) fn name(text: &str) -> Name {
    Name::parse(text).expect("a valid test name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_its_components() {
        let n = name("/app1/obj42");
        assert_eq!(n.components().collect::<Vec<_>>(), ["app1", "obj42"]);
        assert!(!n.is_root());
        assert_eq!(n.to_string(), "/app1/obj42");
        let root = name("/");
        assert_eq!(root.components().count(), 0);
        assert!(root.is_root());
        // Percent-escapes stay as written.
        assert_eq!(name("/a%2Fb").components().collect::<Vec<_>>(), ["a%2Fb"]);
    }

    #[test]
    fn malformed_paths_are_refused_with_the_reason() {
        let cases = [
            ("", "must start with '/'"),
            ("app1/x", "must start with '/'"),
            ("//x", "component 1 is empty"),
            ("/app1//x", "component 2 is empty"),
            ("/app1/", "component 2 is empty"),
            ("/app1/../etc", "component 2 is the dot segment \"..\""),
            ("/./x", "component 1 is the dot segment \".\""),
            ("/a/%2E%2e", "component 2 is the dot segment \"%2E%2e\""),
            ("/a/.%2e/b", "component 2 is the dot segment \".%2e\""),
            ("/a\\b", "component 1 contains '\\\\'"),
            ("/a?b=1", "component 1 contains '?'"),
            ("/a/b c", "component 2 contains ' '"),
            ("/a/\u{7f}", "component 2 contains '\\u{7f}'"),
        ];
        for (path, why) in cases {
            let error = Name::parse(path).expect_err(path);
            assert_eq!(error, format!("name {path:?}: {why}"));
        }
        // `..` inside a component is just text.
        assert!(Name::parse("/a..b/..c").is_ok());
        // The longest name is taken; one byte more is refused, without echoing it.
        let longest = format!("/{}", "x".repeat(MAX_NAME_BYTES - 1));
        assert!(Name::parse(&longest).is_ok());
        let error = Name::parse(&format!("{longest}y")).unwrap_err();
        assert_eq!(error, "a name of 1025 bytes: at most 1024 are taken");
    }

    #[test]
    fn prefixes_match_whole_components() {
        let app1 = name("/app1");
        assert!(app1.is_prefix_of(&name("/app1/obj42")));
        assert!(app1.is_prefix_of(&name("/app1")));
        assert!(!app1.is_prefix_of(&name("/app10/x")));
        assert!(!app1.is_prefix_of(&name("/app10")));
        assert!(!name("/app1/obj42").is_prefix_of(&app1));
        assert!(name("/").is_prefix_of(&app1));
        assert!(!app1.is_prefix_of(&name("/")));
    }

    #[test]
    fn prefixes_run_from_longest_to_the_root() {
        let whole = name("/a/bb/c");
        let all: Vec<&str> = whole.prefixes().collect();
        assert_eq!(all, ["/a/bb/c", "/a/bb", "/a", "/"]);
        assert_eq!(name("/").prefixes().collect::<Vec<_>>(), ["/"]);
        // Each is a name that is a prefix of the whole.
        for prefix in whole.prefixes() {
            assert!(name(prefix).is_prefix_of(&whole), "{prefix}");
        }
    }
}
