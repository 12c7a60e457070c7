//! Typed reading of a role's TOML `config` table, shared by every role binary, so
//! that all of them accept the same forms and every error names its file and key.
//!
//! Topology variables substitute into strings only, so wherever an integer, a number or a
//! boolean is expected a string holding one is accepted too (`segments = "${chunks}"`). Times are
//! tc units (`"30s"`). Unknown keys are refused (`Keys::only`), so a typo never silently falls
//! back to a default.

use std::path::Path;
use std::time::Duration;

use netem::units::parse_duration_ns;
use toml::{Table, Value};

/// Reads a node's config file into a table; errors name the file, and the line and column
/// of a TOML syntax error.
pub fn read_table(path: &Path) -> Result<Table, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    text.parse().map_err(|e| format!("{}: {e}", path.display()))
}

/// A config table (or a nested one) and the name its keys are reported under.
pub struct Keys<'a> {
    table: &'a Table,
    /// `""` at the top; `videos[0].` inside the first video.
    prefix: String,
}

impl<'a> Keys<'a> {
    pub fn new(table: &'a Table) -> Keys<'a> {
        Keys {
            table,
            prefix: String::new(),
        }
    }

    fn nested(table: &'a Table, prefix: String) -> Keys<'a> {
        Keys { table, prefix }
    }

    /// The full name of `key` for messages (`videos[0].segments`).
    pub fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// The name of this table itself (`videos[0]`); empty at the top.
    pub fn table_name(&self) -> &str {
        self.prefix.trim_end_matches('.')
    }

    /// The error `config key `KEY`: MESSAGE`.
    pub fn fail<T>(&self, key: &str, message: impl std::fmt::Display) -> Result<T, String> {
        Err(format!("config key `{}`: {message}", self.name(key)))
    }

    /// Fails on the first key not in `known`; `owner` says whose keys they are in the message
    /// (`role ucs`, ``mode `client` ``).
    pub fn only(&self, known: &[&str], owner: &str) -> Result<(), String> {
        match self.table.keys().find(|key| !known.contains(&key.as_str())) {
            Some(key) => Err(format!(
                "unknown config key `{}` for {owner} (known: {})",
                self.name(key),
                known.join(", ")
            )),
            None => Ok(()),
        }
    }

    /// `value`, given at `key`, as a node's name: a topology's rule for node names.
    pub fn node_name(&self, key: &str, value: &str) -> Result<String, String> {
        crate::topology::check_node_name(value, "node").or_else(|e| self.fail(key, e))?;
        Ok(value.to_string())
    }

    pub fn string(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => self.fail(
                key,
                format!("expected a string, found {}", other.type_str()),
            ),
        }
    }

    /// An integer ≥ 0, or a string holding one.
    pub fn integer(&self, key: &str) -> Result<Option<u64>, String> {
        let n = match self.table.get(key) {
            None => return Ok(None),
            Some(Value::Integer(n)) => i128::from(*n),
            Some(Value::String(text)) => match text.trim().parse::<i128>() {
                Ok(n) => n,
                Err(_) => return self.fail(key, format!("expected an integer, found {text:?}")),
            },
            Some(other) => {
                return self.fail(
                    key,
                    format!("expected an integer, found {}", other.type_str()),
                )
            }
        };
        match u64::try_from(n) {
            Ok(n) => Ok(Some(n)),
            Err(_) if n < 0 => self.fail(key, format!("{n} is negative")),
            Err(_) => self.fail(key, format!("{n} is too big")),
        }
    }

    /// An integer ≥ 0 that fits a `usize` (a count or a size), or a string holding one.
    pub fn count(&self, key: &str) -> Result<Option<usize>, String> {
        self.integer(key)?
            .map(|n| usize::try_from(n).or_else(|_| self.fail(key, format!("{n} is too big"))))
            .transpose()
    }

    /// A count at `key` ([`Keys::count`]), `default` when absent, refused outside `range`: a
    /// count sizes what a role allocates or spawns, so a typo of a few digits must be an error,
    /// not an abort.
    pub fn count_within(
        &self,
        key: &str,
        default: usize,
        range: std::ops::RangeInclusive<usize>,
    ) -> Result<usize, String> {
        let outside = |n: &usize| format!("{n} is not {} to {}", range.start(), range.end());
        self.within(key, self.count(key)?, default, &range, outside)
    }

    /// `value` read at `key`, `default` when absent, refused with `outside`'s message when
    /// not in `range`.
    fn within<T: PartialOrd>(
        &self,
        key: &str,
        value: Option<T>,
        default: T,
        range: &std::ops::RangeInclusive<T>,
        outside: impl FnOnce(&T) -> String,
    ) -> Result<T, String> {
        match value {
            None => Ok(default),
            Some(v) if range.contains(&v) => Ok(v),
            Some(v) => self.fail(key, outside(&v)),
        }
    }

    /// A port, or a string holding one; `default` when absent.
    pub fn port(&self, key: &str, default: u16) -> Result<u16, String> {
        match self.integer(key)? {
            None => Ok(default),
            Some(n) => {
                u16::try_from(n).or_else(|_| self.fail(key, format!("{n} is not a port (0-65535)")))
            }
        }
    }

    /// A required, non-empty list: an array of strings or numbers, or one string of
    /// comma-separated items (what a `${var}` substitutes to). Items come back as text.
    pub fn items(&self, key: &str) -> Result<Vec<String>, String> {
        let items: Vec<String> = match self.table.get(key) {
            None => return self.fail(key, "is required"),
            Some(Value::String(text)) => text.split(',').map(|s| s.trim().to_string()).collect(),
            Some(Value::Array(values)) => values
                .iter()
                .map(|v| match v {
                    Value::String(s) => Some(s.trim().to_string()),
                    Value::Integer(n) => Some(n.to_string()),
                    Value::Float(x) => Some(x.to_string()),
                    _ => None,
                })
                .collect::<Option<_>>()
                .map_or_else(|| self.fail(key, "expected strings or numbers"), Ok)?,
            Some(other) => {
                return self.fail(key, format!("expected a list, found {}", other.type_str()))
            }
        };
        if items.is_empty() || items.iter().any(String::is_empty) {
            return self.fail(key, "is empty or has an empty item");
        }
        Ok(items)
    }

    /// A required list of distinct node names (see [`Keys::items`] and [`Keys::node_name`]),
    /// at most `most` of them. A name listed twice is refused: a role knows a caller by its
    /// certificate's name, so the second entry could never be told apart from the first.
    pub fn node_names(&self, key: &str, most: usize) -> Result<Vec<String>, String> {
        let names = self.distinct_items(key)?;
        if names.len() > most {
            return self.fail(key, format!("at most {most} nodes, not {}", names.len()));
        }
        for name in &names {
            self.node_name(key, name)?;
        }
        Ok(names)
    }

    /// A required list (see [`Keys::items`]) in which no item is listed twice: each names one
    /// thing that others refer to by position or by name.
    pub fn distinct_items(&self, key: &str) -> Result<Vec<String>, String> {
        let items = self.items(key)?;
        let mut seen = std::collections::HashSet::new();
        for item in &items {
            if !seen.insert(item.as_str()) {
                return self.fail(key, format!("`{item}` is listed twice"));
            }
        }
        Ok(items)
    }

    /// A required list of finite numbers ≥ 0 (see [`Keys::items`]).
    pub fn numbers(&self, key: &str) -> Result<Vec<f64>, String> {
        self.items(key)?
            .iter()
            .map(|text| match text.parse::<f64>() {
                Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
                _ => self.fail(key, format!("`{text}` is not a number ≥ 0")),
            })
            .collect()
    }

    /// A boolean, or a string holding `true` or `false`.
    pub fn boolean(&self, key: &str) -> Result<Option<bool>, String> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Value::Boolean(flag)) => Ok(Some(*flag)),
            Some(Value::String(text)) => match text.trim().parse() {
                Ok(flag) => Ok(Some(flag)),
                Err(_) => self.fail(key, format!("expected true or false, found {text:?}")),
            },
            Some(other) => self.fail(
                key,
                format!("expected true or false, found {}", other.type_str()),
            ),
        }
    }

    /// A finite number ≥ 0, integer or float, or a string holding one.
    pub fn number(&self, key: &str) -> Result<Option<f64>, String> {
        let value = match self.table.get(key) {
            None => return Ok(None),
            Some(Value::Integer(n)) => *n as f64,
            Some(Value::Float(x)) => *x,
            Some(Value::String(text)) => match text.trim().parse::<f64>() {
                Ok(x) => x,
                Err(_) => return self.fail(key, format!("expected a number, found {text:?}")),
            },
            Some(other) => {
                return self.fail(
                    key,
                    format!("expected a number, found {}", other.type_str()),
                )
            }
        };
        if value.is_finite() && value >= 0.0 {
            Ok(Some(value))
        } else {
            self.fail(key, format!("{value} is not a number ≥ 0"))
        }
    }

    /// A number of seconds (as `number`).
    pub fn seconds(&self, key: &str) -> Result<Option<Duration>, String> {
        self.number(key)?
            .map(|s| {
                Duration::try_from_secs_f64(s)
                    .or_else(|_| self.fail(key, format!("{s} s is too long")))
            })
            .transpose()
    }

    /// A time in tc units (`"30s"`). A bare number is refused: its unit would be a guess.
    pub fn duration(&self, key: &str) -> Result<Option<Duration>, String> {
        self.string(key)?
            .map(|text| match parse_duration_ns(text) {
                Ok(ns) => Ok(Duration::from_nanos(ns)),
                Err(e) => self.fail(key, e),
            })
            .transpose()
    }

    /// A time at `key` ([`Keys::duration`]), `default` when absent, refused outside `range`:
    /// a limit of `0s` would fail every request at once, and a period of `0s` cannot tick.
    pub fn duration_within(
        &self,
        key: &str,
        default: Duration,
        range: std::ops::RangeInclusive<Duration>,
    ) -> Result<Duration, String> {
        let outside = |_: &Duration| format!("must be {:?} to {:?}", range.start(), range.end());
        self.within(key, self.duration(key)?, default, &range, outside)
    }

    /// A time in tc units (`"6s"`, `"500ms"`), or a bare number of seconds.
    pub fn time(&self, key: &str) -> Result<Option<Duration>, String> {
        match self.table.get(key) {
            Some(Value::Integer(_) | Value::Float(_)) => self.seconds(key),
            None | Some(Value::String(_)) => self.duration(key),
            Some(other) => self.fail(
                key,
                format!(
                    "expected a time such as \"10s\", found {}",
                    other.type_str()
                ),
            ),
        }
    }

    /// A nested table, for settings such as `drr = { url = ..., control = ... }`; `None` when
    /// the key is absent or not a table.
    pub fn table(&self, key: &str) -> Option<Keys<'a>> {
        match self.table.get(key) {
            Some(Value::Table(table)) => Some(Keys::nested(table, format!("{}.", self.name(key)))),
            _ => None,
        }
    }

    /// The table at `key[index]`, reported under that name.
    pub fn nested_at(&self, key: &str, index: usize, table: &'a Table) -> Keys<'a> {
        Keys::nested(table, format!("{}[{index}].", self.name(key)))
    }

    /// The raw value, for keys with several accepted shapes.
    pub fn value(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().expect("test TOML")
    }

    #[test]
    fn numbers_and_booleans_may_be_strings() {
        let t = table("n = ' 7 '\nb = 'true'\nx = '2.5'\np = '8080'");
        let keys = Keys::new(&t);
        assert_eq!(keys.integer("n").unwrap(), Some(7));
        assert_eq!(keys.count("n").unwrap(), Some(7));
        assert_eq!(keys.boolean("b").unwrap(), Some(true));
        assert_eq!(keys.number("x").unwrap(), Some(2.5));
        assert_eq!(keys.port("p", 80).unwrap(), 8080);
        assert_eq!(keys.port("absent", 80).unwrap(), 80);
        assert_eq!(keys.integer("absent").unwrap(), None);
    }

    #[test]
    fn times_in_tc_units_or_seconds() {
        let t = table("tc = '250ms'\nbare = 2\nfloat = 0.5\nflag = true");
        let keys = Keys::new(&t);
        assert_eq!(
            keys.duration("tc").unwrap(),
            Some(Duration::from_millis(250))
        );
        assert_eq!(keys.time("tc").unwrap(), Some(Duration::from_millis(250)));
        assert_eq!(keys.time("bare").unwrap(), Some(Duration::from_secs(2)));
        assert_eq!(
            keys.time("float").unwrap(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(keys.time("absent").unwrap(), None);
        assert!(keys
            .duration("bare")
            .unwrap_err()
            .contains("`bare`: expected a string, found integer"));
        assert!(keys
            .time("flag")
            .unwrap_err()
            .contains("`flag`: expected a time such as \"10s\", found boolean"));
    }

    #[test]
    fn errors_name_the_nested_key() {
        let t = table("v = [{ n = -1, p = 70000, b = 'yes', x = 'fast', k = 1 }]");
        let Some(Value::Array(items)) = Keys::new(&t).value("v") else {
            panic!("an array")
        };
        let Value::Table(inner) = &items[0] else {
            panic!("a table")
        };
        let top = Keys::new(&t);
        let keys = top.nested_at("v", 0, inner);
        assert_eq!(keys.table_name(), "v[0]");
        assert_eq!(
            keys.integer("n").unwrap_err(),
            "config key `v[0].n`: -1 is negative"
        );
        assert!(keys
            .port("p", 80)
            .unwrap_err()
            .contains("`v[0].p`: 70000 is not a port"));
        assert!(keys
            .boolean("b")
            .unwrap_err()
            .contains("`v[0].b`: expected true or false, found \"yes\""));
        assert!(keys
            .number("x")
            .unwrap_err()
            .contains("`v[0].x`: expected a number"));
        assert!(keys
            .integer("x")
            .unwrap_err()
            .contains("`v[0].x`: expected an integer"));
        assert_eq!(
            keys.only(&["n", "p", "b", "x"], "a video").unwrap_err(),
            "unknown config key `v[0].k` for a video (known: n, p, b, x)"
        );
    }

    #[test]
    fn lists_as_arrays_or_comma_separated_strings() {
        let t = table("a = ['x', 'y']\ns = 'x, y'\nn = [1, 2.5, '3']\nbad = '1,,2'\nneg = '1,-2'");
        let keys = Keys::new(&t);
        assert_eq!(keys.items("a").unwrap(), ["x", "y"]);
        assert_eq!(keys.items("s").unwrap(), ["x", "y"]);
        assert_eq!(keys.numbers("n").unwrap(), [1.0, 2.5, 3.0]);
        assert!(keys
            .items("bad")
            .unwrap_err()
            .contains("`bad`: is empty or has an empty item"));
        assert!(keys
            .numbers("neg")
            .unwrap_err()
            .contains("`-2` is not a number ≥ 0"));
        assert!(keys
            .items("absent")
            .unwrap_err()
            .contains("`absent`: is required"));
    }

    #[test]
    fn durations_outside_their_range_are_refused_by_key() {
        let t = table("zero = '0s'\nok = '250ms'\nlong = '601s'");
        let keys = Keys::new(&t);
        let range = Duration::from_millis(100)..=Duration::from_secs(600);
        let within = |key| keys.duration_within(key, Duration::from_secs(1), range.clone());
        assert_eq!(within("ok").unwrap(), Duration::from_millis(250));
        assert_eq!(within("absent").unwrap(), Duration::from_secs(1));
        for key in ["zero", "long"] {
            let error = within(key).unwrap_err();
            assert!(
                error.contains(&format!("`{key}`: must be 100ms to 600s")),
                "{error}"
            );
        }
    }

    #[test]
    fn node_name_lists_are_checked_distinct_and_bounded() {
        let t = table(
            "ok = ['s1', 's2']
twice = 's1, s2, s1'
bad = ['s1', '../x']
many = 'a,b,c'",
        );
        let keys = Keys::new(&t);
        assert_eq!(keys.node_names("ok", 2).unwrap(), ["s1", "s2"]);
        assert!(keys
            .node_names("twice", 8)
            .unwrap_err()
            .contains("`twice`: `s1` is listed twice"));
        assert!(keys.node_names("bad", 8).unwrap_err().contains("`bad`"));
        assert!(keys
            .node_names("many", 2)
            .unwrap_err()
            .contains("`many`: at most 2 nodes, not 3"));
    }
}
