//! Every role's `config` table: no table panics a reader, and every refusal names the key it is
//! about (`config key `x`: …`, ``unknown config key `x` …``), as `role_config` promises.

use crate::role_configs::{Reader, READERS};
use proptest::prelude::*;
use toml::{Table, Value};

/// Strings near what the readers accept: numbers, times, URLs, names, policies.
const TEXTS: &[&str] = &[
    "",
    "0",
    "1",
    "3",
    "-1",
    "0.5",
    "1e400",
    "NaN",
    "inf",
    "18446744073709551616",
    "30s",
    "2ms",
    "0s",
    "5mbit",
    "50%",
    "http://x:8080",
    "http://[::1]:80/p",
    "ftp://x",
    "${v}",
    "/app1",
    "/app1/obj",
    "//",
    "a",
    "zipf",
    "all",
    "none",
    "first:3",
    "fraction:0.5",
    "round-robin",
    "consistent-hash",
    "ts",
    "fmp4",
    "client",
    "server",
    "upstream-rr",
    "direct-cs",
    "h2",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::sample::select(TEXTS).prop_map(|t| Value::String(t.to_string())),
        1 => any::<String>().prop_map(Value::String),
        3 => prop_oneof![any::<i64>(), -3..100i64].prop_map(Value::Integer),
        2 => prop_oneof![any::<f64>(), -1.0..100.0f64].prop_map(Value::Float),
        1 => any::<bool>().prop_map(Value::Boolean),
    ]
}

fn table_of(
    keys: Vec<String>,
    value: impl Strategy<Value = Value>,
) -> impl Strategy<Value = Table> {
    prop::collection::vec((prop::sample::select(keys), value), 0..10)
        .prop_map(|entries| entries.into_iter().collect())
}

/// A config table of `keys` (and, rarely, a stranger) with values of any type, nested as arrays
/// and tables go; a nested table draws from `nested` (every reader's keys: a video's, a
/// quality's, a FIB entry's are among them).
fn config(mut keys: Vec<String>, nested: Vec<String>) -> impl Strategy<Value = Table> {
    keys.push("no_such_key".to_string());
    let value = leaf().prop_recursive(3, 24, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            table_of(nested.clone(), inner).prop_map(Value::Table),
        ]
    });
    table_of(keys, value)
}

/// The keys a reader knows, as its refusal of an unknown key lists them: the generator follows
/// the readers as they change.
fn known_keys(read: Reader) -> Vec<String> {
    let mut stranger = Table::new();
    stranger.insert("no_such_key".into(), Value::Integer(1));
    let error = read(&stranger, "n").err().unwrap_or_default();
    let known = error
        .split_once("(known: ")
        .map_or("", |(_, rest)| rest.trim_end_matches(')'));
    known
        .split(", ")
        .filter(|k| !k.is_empty())
        .map(String::from)
        .collect()
}

/// The probe's reader with `mode` set, since each mode has its own keys.
fn probe_in_mode(table: &Table, mode: &str) -> Result<(), String> {
    let mut table = table.clone();
    table.insert("mode".into(), Value::String(mode.into()));
    crate::probe::config::parse_role_config(&table).map(drop)
}

/// Every role's reader (the ones `cdnlab up` checks configs with), by role name; the probe
/// once per mode.
fn readers() -> Vec<(&'static str, Reader)> {
    let probe: [(&'static str, Reader); 2] = [
        ("probe server", |t, _| probe_in_mode(t, "server")),
        ("probe client", |t, _| probe_in_mode(t, "client")),
    ];
    let others = READERS.iter().filter(|(role, _)| *role != "probe");
    probe.into_iter().chain(others.copied()).collect()
}

/// A reader and a table drawn from the keys it knows.
fn reader_and_table() -> impl Strategy<Value = ((&'static str, Reader), Table)> {
    let mut all: Vec<String> = readers()
        .into_iter()
        .flat_map(|(_, read)| known_keys(read))
        .collect();
    all.sort();
    all.dedup();
    prop::sample::select(readers())
        .prop_flat_map(move |reader| (Just(reader), config(known_keys(reader.1), all.clone())))
}

#[test]
fn prop_config_every_reader_lists_its_keys() {
    for (role, read) in readers() {
        assert!(
            !known_keys(read).is_empty(),
            "{role}: no `(known: …)` list to draw keys from"
        );
    }
}

proptest! {
    #[test]
    fn prop_config_refusals_name_their_key(((role, read), table) in reader_and_table()) {
        if let Err(error) = read(&table, role) {
            prop_assert!(error.contains("config key `"), "{role}: {error}\n{table}");
        }
    }
}
