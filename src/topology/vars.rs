//! `[vars]`, `--set NAME=VALUE` overrides, and `${name}` substitution in string values, so one
//! file serves a whole sweep (`cdnlab run chain.toml --set internet_delay=200ms`).

use super::error::Diags;
use super::reader::{self, Value};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use toml::de::{DeTable, DeValue};

/// Splits a `--set` argument, `NAME=VALUE`, at its first `=`.
pub fn parse_set(arg: &str) -> Result<(String, String), String> {
    let Some((name, value)) = arg.split_once('=') else {
        return Err(format!("`{arg}` is not NAME=VALUE"));
    };
    if !is_var_name(name) {
        return Err(format!(
            "`{name}` is not a variable name (letters, digits and `_`, not starting with a digit)"
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

/// Letters, digits and `_`, not starting with a digit: also what a sweep's plot may name, as it
/// becomes part of a file name.
pub fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The file's `[vars]` with the `--set` overrides applied (a later `--set` wins).
pub(crate) fn read_vars(
    root: &DeTable,
    set: &[(String, String)],
    diags: &mut Diags,
) -> BTreeMap<String, String> {
    let mut vars = BTreeMap::new();
    if let Some(table) = root
        .get("vars")
        .and_then(|v| reader::table(v, "vars", diags))
    {
        for (key, value) in table.iter() {
            if !is_var_name(key.get_ref()) {
                diags.at(
                    &key.span(),
                    format!(
                        "`{}` is not a variable name (letters, digits and `_`, not starting with a digit)",
                        key.get_ref()
                    ),
                );
            }
            if let Some(text) = reader::string(value, key.get_ref(), diags) {
                vars.insert(key.get_ref().to_string(), text.into_inner());
            }
        }
    }
    let known = known_list(&vars);
    for (name, value) in set {
        match vars.get_mut(name) {
            Some(slot) => *slot = value.clone(),
            None => diags.option(
                format!("--set {name}"),
                format!("no such variable; {known}"),
            ),
        }
    }
    vars
}

/// "the file's variables are: a, b" for messages about a name that is not one of them.
fn known_list(vars: &BTreeMap<String, String>) -> String {
    if vars.is_empty() {
        "the file has no [vars]".to_string()
    } else {
        let names: Vec<&str> = vars.keys().map(String::as_str).collect();
        format!("the file's variables are: {}", names.join(", "))
    }
}

/// What a deferred `${name}` becomes: the name between these two private-use characters, for a
/// writer (`cdnlab compose`) to turn into its own reference to the variable.
pub const DEFERRED_OPEN: char = '\u{E000}';
pub const DEFERRED_CLOSE: char = '\u{E001}';

/// Substitutes `${name}` in every string value of the file except `[vars]` itself (whose
/// values are taken literally); the variables in `deferred` are left as marked references
/// (`DEFERRED_OPEN name DEFERRED_CLOSE`) instead. A string that cannot be substituted is
/// reported once, at its position, and nothing more is said about it.
pub(crate) fn substitute(
    root: &mut DeTable,
    vars: &BTreeMap<String, String>,
    deferred: &BTreeSet<String>,
    diags: &mut Diags,
) {
    for (key, value) in root.iter_mut() {
        if key.get_ref() != "vars" {
            substitute_value(value, vars, deferred, diags);
        }
    }
}

fn substitute_value(
    value: &mut Value,
    vars: &BTreeMap<String, String>,
    deferred: &BTreeSet<String>,
    diags: &mut Diags,
) {
    let span = value.span();
    match value.get_mut() {
        DeValue::String(text) if text.contains('$') => match expand(text, vars, deferred) {
            Ok(expanded) => *text = Cow::Owned(expanded),
            Err(message) => diags.at_and_poison(&span, message),
        },
        DeValue::Array(items) => {
            for item in items.iter_mut() {
                substitute_value(item, vars, deferred, diags);
            }
        }
        DeValue::Table(table) => {
            for (_, item) in table.iter_mut() {
                substitute_value(item, vars, deferred, diags);
            }
        }
        _ => {}
    }
}

/// The variables that only nodes' `config` tables and `command`s use: a value given to the
/// program and nothing else, so a compose file can leave it to the environment. A variable
/// that anything else uses (a link, `only_if`, the timeline, `ready`) shapes the topology and
/// is substituted when the file is read.
pub(crate) fn program_only_vars(root: &DeTable) -> BTreeSet<String> {
    let (mut in_programs, mut elsewhere) = (BTreeSet::new(), BTreeSet::new());
    for (key, value) in root.iter() {
        match key.get_ref().as_ref() {
            "vars" => {}
            "nodes" => match value.get_ref() {
                DeValue::Table(nodes) => {
                    for (_, node) in nodes.iter() {
                        let DeValue::Table(node) = node.get_ref() else {
                            references(node, &mut elsewhere);
                            continue;
                        };
                        for (field, item) in node.iter() {
                            let program = ["config", "command"].contains(&field.get_ref().as_ref());
                            references(
                                item,
                                if program {
                                    &mut in_programs
                                } else {
                                    &mut elsewhere
                                },
                            );
                        }
                    }
                }
                _ => references(value, &mut elsewhere),
            },
            _ => references(value, &mut elsewhere),
        }
    }
    in_programs.difference(&elsewhere).cloned().collect()
}

/// Every `${name}` in a value's strings.
fn references(value: &Value, names: &mut BTreeSet<String>) {
    match value.get_ref() {
        DeValue::String(text) => {
            let mut rest = text.as_ref();
            while let Some(i) = rest.find('$') {
                let from_dollar = &rest[i..];
                if let Some(after) = from_dollar.strip_prefix("$${") {
                    rest = after;
                } else if let Some((name, after)) = from_dollar
                    .strip_prefix("${")
                    .and_then(|body| body.split_once('}'))
                {
                    names.insert(name.to_string());
                    rest = after;
                } else {
                    rest = &from_dollar[1..];
                }
            }
        }
        DeValue::Array(items) => items.iter().for_each(|item| references(item, names)),
        DeValue::Table(table) => table.iter().for_each(|(_, item)| references(item, names)),
        _ => {}
    }
}

/// `${name}` becomes the variable's value (or, if deferred, its marked reference); `$${` is a
/// literal `${`; any other `$` stays.
fn expand(
    text: &str,
    vars: &BTreeMap<String, String>,
    deferred: &BTreeSet<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let from_dollar = &rest[i..];
        if let Some(after) = from_dollar.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some(body) = from_dollar.strip_prefix("${") {
            let end = body
                .find('}')
                .ok_or("unterminated `${` (write `$${` for a literal `${`)")?;
            let name = &body[..end];
            let value = vars
                .get(name)
                .ok_or_else(|| format!("`${{{name}}}`: no such variable; {}", known_list(vars)))?;
            if deferred.contains(name) {
                out.extend([DEFERRED_OPEN]);
                out.push_str(name);
                out.extend([DEFERRED_CLOSE]);
            } else {
                out.push_str(value);
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = &from_dollar[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("d".to_string(), "50ms".to_string()),
            ("host".to_string(), "server".to_string()),
        ])
    }

    #[test]
    fn expands_variables_and_keeps_other_dollars() {
        assert_eq!(expand("${d}", &vars(), &BTreeSet::new()).unwrap(), "50ms");
        assert_eq!(
            expand("http://${host}:8080/${d}", &vars(), &BTreeSet::new()).unwrap(),
            "http://server:8080/50ms"
        );
        assert_eq!(
            expand("echo $HOME $$ $${d}", &vars(), &BTreeSet::new()).unwrap(),
            "echo $HOME $$ ${d}"
        );
        assert_eq!(
            expand("cost $", &vars(), &BTreeSet::new()).unwrap(),
            "cost $"
        );
    }

    #[test]
    fn unset_and_unterminated_variables_are_errors() {
        assert_eq!(
            expand("${nope}", &vars(), &BTreeSet::new()).unwrap_err(),
            "`${nope}`: no such variable; the file's variables are: d, host"
        );
        assert_eq!(
            expand("x${d", &vars(), &BTreeSet::new()).unwrap_err(),
            "unterminated `${` (write `$${` for a literal `${`)"
        );
        assert_eq!(
            expand("${d}", &BTreeMap::new(), &BTreeSet::new()).unwrap_err(),
            "`${d}`: no such variable; the file has no [vars]"
        );
    }

    #[test]
    fn set_arguments_split_at_the_first_equals() {
        assert_eq!(
            parse_set("delay=a=b"),
            Ok(("delay".to_string(), "a=b".to_string()))
        );
        assert_eq!(parse_set("d="), Ok(("d".to_string(), String::new())));
        assert_eq!(parse_set("delay").unwrap_err(), "`delay` is not NAME=VALUE");
        assert_eq!(
            parse_set("1x=5").unwrap_err(),
            "`1x` is not a variable name (letters, digits and `_`, not starting with a digit)"
        );
    }
}
