//! The `icn-router` config table, read with the shared `Keys` reader (unknown keys refused,
//! every error names its key):
//!
//! ```toml
//! port = 80                     # default 80
//! cs_capacity = 4000000         # Content Store bytes (or "4000000"); 0 disables caching
//! pit_lifetime = "4s"           # default 4s: how long a pending Interest waits for Data
//! upstream_timeout = "4s"       # default 4s: one forward, all next hops tried included
//! pit_entries = 10000           # default 10000 (1 to 1000000): names pending at once (one fetch each); 503 past it
//! pit_waiters = 1000            # default 1000 (1 to 100000): requests waiting on one name; 503 past it
//! fib = [                       # at least one route
//!   { prefix = "/app1", nexthop = "http://border1:80", cost = 0 },   # cost defaults to 0
//! ]
//! ```

use std::time::Duration;

use toml::{Table, Value};

use crate::cdn::BaseUrl;
use crate::icn::Name;
use crate::roles::config::Keys;

const KEYS: &[&str] = &[
    "port",
    "cs_capacity",
    "pit_lifetime",
    "upstream_timeout",
    "pit_entries",
    "pit_waiters",
    "fib",
];
const ROUTE_KEYS: &[&str] = &["prefix", "nexthop", "cost"];

/// NFD's default Interest lifetime; an upstream answer is awaited as long by default.
const DEFAULT_WAIT: Duration = Duration::from_secs(4);

#[derive(Debug, Clone, PartialEq)]
pub struct RouterConfig {
    pub port: u16,
    /// Content Store bytes; 0 disables caching.
    pub cs_capacity: usize,
    pub pit_lifetime: Duration,
    pub upstream_timeout: Duration,
    /// Names pending at once (each one upstream fetch): clients choose names, so the PIT needs
    /// a bound; a new name past it gets 503.
    pub pit_entries: usize,
    /// Requests waiting on one pending name; one more gets 503.
    pub pit_waiters: usize,
    /// The FIB, in the order written.
    pub routes: Vec<Route>,
}

/// One FIB entry's next hop.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub prefix: Name,
    pub nexthop: BaseUrl,
    pub cost: u64,
}

pub fn parse(table: &Table) -> Result<RouterConfig, String> {
    let keys = Keys::new(table);
    keys.only(KEYS, "role icn-router")?;
    let cs_capacity = match keys.count("cs_capacity")? {
        Some(bytes) => bytes,
        None => {
            return keys.fail(
                "cs_capacity",
                "is required: the Content Store's size in bytes (0 disables caching)",
            )
        }
    };
    Ok(RouterConfig {
        port: keys.port("port", 80)?,
        cs_capacity,
        pit_lifetime: positive_duration(&keys, "pit_lifetime")?,
        upstream_timeout: positive_duration(&keys, "upstream_timeout")?,
        pit_entries: keys.count_within("pit_entries", 10_000, 1..=1_000_000)?,
        pit_waiters: keys.count_within("pit_waiters", 1_000, 1..=100_000)?,
        routes: routes(&keys)?,
    })
}

fn positive_duration(keys: &Keys, key: &str) -> Result<Duration, String> {
    match keys.duration(key)? {
        None => Ok(DEFAULT_WAIT),
        Some(d) if d.is_zero() => keys.fail(key, "must be longer than 0"),
        Some(d) => Ok(d),
    }
}

/// `fib`: a non-empty array of `{ prefix, nexthop, cost }` tables, no next hop twice under
/// one prefix.
fn routes(keys: &Keys) -> Result<Vec<Route>, String> {
    let items = match keys.value("fib") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        None => return keys.fail("fib", "is required: at least one { prefix, nexthop, cost }"),
        Some(other) => {
            return keys.fail(
                "fib",
                format!(
                    "expected a non-empty array of {{ prefix, nexthop, cost }} tables, found {}",
                    other.type_str()
                ),
            )
        }
    };
    let mut routes: Vec<Route> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Table(table) = item else {
            return keys.fail(
                &format!("fib[{i}]"),
                format!("expected a table, found {}", item.type_str()),
            );
        };
        let route = route(&keys.nested_at("fib", i, table))?;
        if let Some(j) = routes
            .iter()
            .position(|r| r.prefix == route.prefix && r.nexthop == route.nexthop)
        {
            return keys.fail(
                &format!("fib[{i}]"),
                format!(
                    "prefix {} already has next hop {} (fib[{j}])",
                    route.prefix, route.nexthop
                ),
            );
        }
        routes.push(route);
    }
    Ok(routes)
}

fn route(keys: &Keys) -> Result<Route, String> {
    keys.only(ROUTE_KEYS, "a FIB entry")?;
    let prefix = match keys.string("prefix")? {
        Some(text) => Name::parse(text).or_else(|e| keys.fail("prefix", e))?,
        None => return keys.fail("prefix", "is required (a name such as \"/app1\")"),
    };
    let nexthop = match keys.string("nexthop")? {
        Some(text) => BaseUrl::parse(text).or_else(|e| keys.fail("nexthop", e))?,
        None => return keys.fail("nexthop", "is required (a URL such as \"http://border1\")"),
    };
    Ok(Route {
        prefix,
        nexthop,
        cost: keys.integer("cost")?.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<RouterConfig, String> {
        parse(&text.parse::<Table>().expect("test TOML"))
    }

    #[test]
    fn a_full_table_and_its_defaults() {
        let config = parsed(
            r#"
            cs_capacity = "4000000"
            pit_lifetime = "500ms"
            fib = [
                { prefix = "/app1", nexthop = "http://border1:80", cost = 3 },
                { prefix = "/", nexthop = "http://border2/" },
            ]
            "#,
        )
        .unwrap();
        assert_eq!(config.port, 80);
        assert_eq!(config.cs_capacity, 4_000_000);
        assert_eq!(config.pit_lifetime, Duration::from_millis(500));
        assert_eq!(config.upstream_timeout, Duration::from_secs(4));
        assert_eq!((config.pit_entries, config.pit_waiters), (10_000, 1_000));
        assert_eq!(
            config.routes,
            [
                Route {
                    prefix: Name::parse("/app1").unwrap(),
                    nexthop: BaseUrl::parse("http://border1:80").unwrap(),
                    cost: 3
                },
                Route {
                    prefix: Name::parse("/").unwrap(),
                    nexthop: BaseUrl::parse("http://border2").unwrap(),
                    cost: 0
                }
            ]
        );
    }

    #[test]
    fn errors_name_their_key() {
        let route = r#"fib = [{ prefix = "/a", nexthop = "http://b" }]"#;
        let cases = [
            (route.to_string(), "config key `cs_capacity`: is required"),
            (
                format!("cs_capacity = -1\n{route}"),
                "config key `cs_capacity`: -1 is negative",
            ),
            ("cs_capacity = 0".into(), "config key `fib`: is required"),
            (
                "cs_capacity = 0\nfib = []".into(),
                "config key `fib`: expected a non-empty array",
            ),
            (
                "cs_capacity = 0\nfib = [\"/a\"]".into(),
                "config key `fib[0]`: expected a table, found string",
            ),
            (
                "cs_capacity = 0\nfib = [{ prefix = \"/a//b\", nexthop = \"http://b\" }]".into(),
                "config key `fib[0].prefix`: name \"/a//b\": component 2 is empty",
            ),
            (
                "cs_capacity = 0\nfib = [{ prefix = \"/a\", nexthop = \"b:80\" }]".into(),
                "config key `fib[0].nexthop`: URL \"b:80\"",
            ),
            (
                "cs_capacity = 0\nfib = [{ prefix = \"/a\" }]".into(),
                "config key `fib[0].nexthop`: is required",
            ),
            (
                "cs_capacity = 0\nfib = [{ prefix = \"/a\", nexthop = \"http://b\", weight = 1 }]"
                    .into(),
                "unknown config key `fib[0].weight` for a FIB entry",
            ),
            (
                "cs_capacity = 0\nfib = [{ prefix = \"/a\", nexthop = \"http://b\" }, \
                 { prefix = \"/a\", nexthop = \"http://b/\", cost = 2 }]"
                    .into(),
                "config key `fib[1]`: prefix /a already has next hop http://b (fib[0])",
            ),
            (
                format!("cs_capacity = 0\npit_lifetime = \"0s\"\n{route}"),
                "config key `pit_lifetime`: must be longer than 0",
            ),
            (
                format!("cs_capacity = 0\nupstream_timeout = 4\n{route}"),
                "config key `upstream_timeout`: expected a string",
            ),
            (
                format!("cs_capacity = 0\npit_entries = 0\n{route}"),
                "config key `pit_entries`: 0 is not 1 to 1000000",
            ),
            (
                format!("cs_capacity = 0\npit_waiters = 1000000000\n{route}"),
                "config key `pit_waiters`: 1000000000 is not 1 to 100000",
            ),
            (
                format!("cs_capacity = 0\nfib_typo = 1\n{route}"),
                "unknown config key `fib_typo` for role icn-router",
            ),
        ];
        for (text, expected) in cases {
            let error = parsed(&text).expect_err(&text);
            assert!(error.starts_with(expected), "{text}\n→ {error}");
        }
    }
}
