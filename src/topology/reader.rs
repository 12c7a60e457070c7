//! Typed reads from the parsed TOML tree, each reporting a wrong type or an unknown key at its
//! position. The file is read from `toml::de::DeTable` rather than through serde derives so that
//! every mistake is reported (serde stops at the first) and nodes keep their declaration order
//! (the tree sorts keys; their spans say where each was written).

use super::error::{Diags, Span};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

pub(crate) type Value<'i> = Spanned<DeValue<'i>>;

/// Reports every key of `table` that is not in `known`; `what` names the table in the message.
pub(crate) fn check_keys(table: &DeTable, known: &[&str], what: &str, diags: &mut Diags) {
    for key in table.keys() {
        if !known.contains(&key.get_ref().as_ref()) {
            diags.at(
                &key.span(),
                format!(
                    "unknown key `{}` in {what}; expected one of: {}",
                    key.get_ref(),
                    known.join(", ")
                ),
            );
        }
    }
}

/// "an integer", "a string", … for messages.
pub(crate) fn a_type(value: &DeValue) -> String {
    let name = value.type_str();
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

fn wrong_type(value: &Value, key: &str, expected: &str, diags: &mut Diags) {
    diags.at(
        &value.span(),
        format!(
            "`{key}` must be {expected}, not {}",
            a_type(value.get_ref())
        ),
    );
}

pub(crate) fn string(value: &Value, key: &str, diags: &mut Diags) -> Option<Spanned<String>> {
    match value.get_ref() {
        DeValue::String(text) => Some(Spanned::new(value.span(), text.to_string())),
        _ => {
            wrong_type(value, key, "a string", diags);
            None
        }
    }
}

/// A non-empty array of strings (a command line, a list of node names).
pub(crate) fn strings(value: &Value, key: &str, diags: &mut Diags) -> Option<Vec<Spanned<String>>> {
    let DeValue::Array(items) = value.get_ref() else {
        wrong_type(value, key, "an array of strings", diags);
        return None;
    };
    if items.is_empty() {
        diags.at(&value.span(), format!("`{key}` must not be empty"));
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items.iter() {
        match item.get_ref() {
            DeValue::String(text) => out.push(Spanned::new(item.span(), text.to_string())),
            other => {
                diags.at(
                    &item.span(),
                    format!("`{key}` must hold strings, not {}", a_type(other)),
                );
                return None;
            }
        }
    }
    Some(out)
}

pub(crate) fn table<'a, 'i>(
    value: &'a Value<'i>,
    key: &str,
    diags: &mut Diags,
) -> Option<&'a DeTable<'i>> {
    match value.get_ref() {
        DeValue::Table(table) => Some(table),
        _ => {
            wrong_type(value, key, "a table", diags);
            None
        }
    }
}

/// An integer, or a string holding one (what a `${var}` substitution leaves).
pub(crate) fn integer(value: &Value, key: &str, diags: &mut Diags) -> Option<i64> {
    let parsed = match value.get_ref() {
        DeValue::Integer(int) => i64::from_str_radix(int.as_str(), int.radix()).ok(),
        DeValue::String(text) => text.trim().parse().ok(),
        _ => None,
    };
    if parsed.is_none() {
        wrong_type(value, key, "an integer", diags);
    }
    parsed
}

/// A boolean, or a string holding `true` or `false` (what a `${var}` substitution leaves).
pub(crate) fn boolean(value: &Value, key: &str, diags: &mut Diags) -> Option<bool> {
    let parsed = match value.get_ref() {
        DeValue::Boolean(flag) => Some(*flag),
        DeValue::String(text) => text.trim().parse().ok(),
        _ => None,
    };
    if parsed.is_none() {
        wrong_type(value, key, "true or false", diags);
    }
    parsed
}

/// The tables of a `[[key]]` array, each with its span (the `[[key]]` header).
pub(crate) fn array_of_tables<'a, 'i>(
    value: &'a Value<'i>,
    key: &str,
    diags: &mut Diags,
) -> Vec<(Span, &'a DeTable<'i>)> {
    let DeValue::Array(items) = value.get_ref() else {
        diags.at(
            &value.span(),
            format!("`{key}` must be an array of tables: write each one as [[{key}]]"),
        );
        return Vec::new();
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items.iter() {
        match item.get_ref() {
            DeValue::Table(table) => out.push((item.span(), table)),
            other => diags.at(
                &item.span(),
                format!("`{key}` must hold tables, not {}", a_type(other)),
            ),
        }
    }
    out
}
