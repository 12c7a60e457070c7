//! The shared impairment keys (`delay`, `jitter`, `delay_correlation`, `distribution`, `loss`,
//! `loss_correlation`, `rate`, `limit`) as links, LANs, `from.NODE` overrides, timeline events
//! and `cdnlab link set` flags all write them, and the one conversion into an
//! `ImpairmentsChange`, so a value means the same thing wherever it is written.

use super::error::{Diags, Span};
use super::reader::a_type;
use netem::units::{
    format_duration_ns, format_percent, format_rate_bps, parse_duration_ns, parse_limit,
    parse_percent, parse_rate_bps,
};
use netem::{Distribution, ImpairmentsChange};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// The shared impairment keys, in the order messages list them.
pub const IMPAIRMENT_KEYS: [&str; 8] = [
    "delay",
    "jitter",
    "delay_correlation",
    "distribution",
    "loss",
    "loss_correlation",
    "rate",
    "limit",
];

/// The shared impairment keys as written, before their units are parsed. `T` is
/// `Spanned<String>` for a file (errors point at the value) and `&str` for command-line flags.
#[derive(Debug, Clone, PartialEq)]
pub struct ImpairmentFields<T = Spanned<String>> {
    /// A time: `10ms`.
    pub delay: Option<T>,
    /// A time: `2ms`.
    pub jitter: Option<T>,
    /// A percentage: `25%`.
    pub delay_correlation: Option<T>,
    /// `uniform`, `normal`, `pareto` or `paretonormal`.
    pub distribution: Option<T>,
    /// A percentage: `1%`.
    pub loss: Option<T>,
    /// A percentage: `25%`.
    pub loss_correlation: Option<T>,
    /// A tc rate (`5mbit`), or `unlimited` to remove a limit.
    pub rate: Option<T>,
    /// A whole number of packets, at least 1.
    pub limit: Option<T>,
}

impl<T> Default for ImpairmentFields<T> {
    fn default() -> Self {
        ImpairmentFields {
            delay: None,
            jitter: None,
            delay_correlation: None,
            distribution: None,
            loss: None,
            loss_correlation: None,
            rate: None,
            limit: None,
        }
    }
}

/// Parses one key's text into its place in a change.
type Setter = fn(&mut ImpairmentsChange, &str) -> Result<(), String>;

impl<T> ImpairmentFields<T> {
    pub fn is_empty(&self) -> bool {
        self.entries().iter().all(|(_, value, _)| value.is_none())
    }

    fn entries(&self) -> [(&'static str, Option<&T>, Setter); 8] {
        [
            ("delay", self.delay.as_ref(), |c, t| {
                c.delay_ns = Some(parse_duration_ns(t).map_err(|e| e.0)?);
                Ok(())
            }),
            ("jitter", self.jitter.as_ref(), |c, t| {
                c.jitter_ns = Some(parse_duration_ns(t).map_err(|e| e.0)?);
                Ok(())
            }),
            (
                "delay_correlation",
                self.delay_correlation.as_ref(),
                |c, t| {
                    c.delay_correlation = Some(parse_percent(t).map_err(|e| e.0)?);
                    Ok(())
                },
            ),
            ("distribution", self.distribution.as_ref(), |c, t| {
                let distribution = Distribution::from_name(t.trim()).ok_or_else(|| {
                    format!(
                        "unknown distribution `{t}` (use uniform, normal, pareto or paretonormal)"
                    )
                })?;
                c.distribution = Some(distribution);
                Ok(())
            }),
            ("loss", self.loss.as_ref(), |c, t| {
                c.loss = Some(parse_percent(t).map_err(|e| e.0)?);
                Ok(())
            }),
            (
                "loss_correlation",
                self.loss_correlation.as_ref(),
                |c, t| {
                    c.loss_correlation = Some(parse_percent(t).map_err(|e| e.0)?);
                    Ok(())
                },
            ),
            ("rate", self.rate.as_ref(), |c, t| {
                c.rate_bps = Some(if t.trim() == "unlimited" {
                    None
                } else {
                    Some(parse_rate_bps(t).map_err(|e| e.0)?)
                });
                Ok(())
            }),
            ("limit", self.limit.as_ref(), |c, t| {
                c.limit = Some(parse_limit(t).map_err(|e| e.0)?);
                Ok(())
            }),
        ]
    }

    /// The one conversion underneath `parse_change` and `change_from_flags`: every field
    /// given, parsed; or every field that could not be, with why.
    fn convert(
        &self,
        text: impl Fn(&T) -> &str,
    ) -> Result<ImpairmentsChange, Vec<(&'static str, &T, String)>> {
        let mut change = ImpairmentsChange::default();
        let mut errors = Vec::new();
        for (key, value, set) in self.entries() {
            if let Some(value) = value {
                if let Err(message) = set(&mut change, text(value)) {
                    errors.push((key, value, message));
                }
            }
        }
        if errors.is_empty() {
            Ok(change)
        } else {
            Err(errors)
        }
    }
}

/// The change the fields of a file describe; errors carry the byte span of the bad value and a
/// message naming its key (`delay: `50` has no unit; …`).
pub fn parse_change(fields: &ImpairmentFields) -> Result<ImpairmentsChange, Vec<(Span, String)>> {
    fields.convert(|v| v.get_ref().as_str()).map_err(|errors| {
        errors
            .into_iter()
            .map(|(key, value, message)| (value.span(), format!("{key}: {message}")))
            .collect()
    })
}

/// What a change sets, as the shared keys and their texts, in `IMPAIRMENT_KEYS` order: the
/// inverse of the conversion above, for writers of keys (`--net delay=10ms`) or flags
/// (`--delay 10ms`). A removed rate is `rate = unlimited`.
pub fn change_entries(change: &ImpairmentsChange) -> Vec<(&'static str, String)> {
    let c = change;
    let mut entries = Vec::new();
    let mut add = |key: &'static str, text: Option<String>| {
        if let Some(text) = text {
            entries.push((key, text));
        }
    };
    add("delay", c.delay_ns.map(format_duration_ns));
    add("jitter", c.jitter_ns.map(format_duration_ns));
    add("delay_correlation", c.delay_correlation.map(format_percent));
    add("distribution", c.distribution.map(|d| d.name().to_string()));
    add("loss", c.loss.map(format_percent));
    add("loss_correlation", c.loss_correlation.map(format_percent));
    add(
        "rate",
        c.rate_bps
            .map(|rate| rate.map_or("unlimited".to_string(), format_rate_bps)),
    );
    add("limit", c.limit.map(|limit| limit.to_string()));
    entries
}

/// The change command-line flags describe (`cdnlab link set --delay 80ms`); errors name the
/// flag (`--delay-correlation: …`), one per line.
pub fn change_from_flags(fields: &ImpairmentFields<&str>) -> Result<ImpairmentsChange, String> {
    fields.convert(|v| v).map_err(|errors| {
        errors
            .into_iter()
            .map(|(key, _, message)| format!("--{}: {message}", key.replace('_', "-")))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// The shared keys present in `table` (other keys are the caller's to check).
pub(crate) fn read_fields(table: &DeTable, diags: &mut Diags) -> ImpairmentFields {
    let text = |key: &str, example: &str, diags: &mut Diags| -> Option<Spanned<String>> {
        let value = table.get(key)?;
        match value.get_ref() {
            DeValue::String(text) => Some(Spanned::new(value.span(), text.to_string())),
            // A queue limit is a plain number; the file may write it as one.
            DeValue::Integer(int) if key == "limit" => Some(Spanned::new(
                value.span(),
                i64::from_str_radix(int.as_str(), int.radix())
                    .map_or_else(|_| int.to_string(), |n| n.to_string()),
            )),
            other => {
                diags.at(
                    &value.span(),
                    format!(
                        "`{key}` must be a string like {key} = \"{example}\", not {}",
                        a_type(other)
                    ),
                );
                None
            }
        }
    };
    ImpairmentFields {
        delay: text("delay", "10ms", diags),
        jitter: text("jitter", "2ms", diags),
        delay_correlation: text("delay_correlation", "25%", diags),
        distribution: text("distribution", "normal", diags),
        loss: text("loss", "1%", diags),
        loss_correlation: text("loss_correlation", "25%", diags),
        rate: text("rate", "5mbit", diags),
        limit: text("limit", "100", diags),
    }
}

/// Parses the fields into a change, reporting each bad value at its position.
pub(crate) fn change_or_report(
    fields: &ImpairmentFields,
    diags: &mut Diags,
) -> Option<ImpairmentsChange> {
    match parse_change(fields) {
        Ok(change) => Some(change),
        Err(errors) => {
            for (span, message) in errors {
                diags.at(&span, message);
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netem::Impairments;

    #[test]
    fn flags_convert_with_tc_units() {
        let fields = ImpairmentFields {
            delay: Some("80ms"),
            jitter: Some("5ms"),
            delay_correlation: Some("25%"),
            distribution: Some("pareto"),
            loss: Some("0.5%"),
            loss_correlation: Some("10%"),
            rate: Some("5mbit"),
            limit: Some("300"),
        };
        let change = change_from_flags(&fields).unwrap();
        let applied = change.apply_to(&Impairments::default());
        assert_eq!(
            applied,
            Impairments {
                delay_ns: 80_000_000,
                jitter_ns: 5_000_000,
                delay_correlation: 0.25,
                distribution: Some(Distribution::Pareto),
                loss: 0.005,
                loss_correlation: 0.1,
                rate_bps: Some(5_000_000),
                limit: 300,
            }
        );
    }

    #[test]
    fn only_the_fields_given_change() {
        let change = change_from_flags(&ImpairmentFields {
            rate: Some("unlimited"),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            change,
            ImpairmentsChange {
                rate_bps: Some(None),
                ..Default::default()
            }
        );
        assert!(change_from_flags(&ImpairmentFields::default())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn flag_errors_name_every_bad_flag() {
        let fields = ImpairmentFields {
            delay: Some("50"),
            delay_correlation: Some("2"),
            distribution: Some("gaussian"),
            rate: Some("0mbit"),
            limit: Some("0"),
            ..Default::default()
        };
        assert_eq!(
            change_from_flags(&fields).unwrap_err(),
            "--delay: `50` has no unit; write it as e.g. `50ms`, `1.5s` or `500us`\n\
             --delay-correlation: `2` is not a percentage; write it as e.g. `0.5%`\n\
             --distribution: unknown distribution `gaussian` (use uniform, normal, pareto or paretonormal)\n\
             --rate: `0mbit`: a rate must be above 0\n\
             --limit: a queue limit must be at least 1 packet"
        );
        assert_eq!(
            change_from_flags(&ImpairmentFields {
                limit: Some("-3"),
                ..Default::default()
            })
            .unwrap_err(),
            "--limit: `-3` is not a whole number of packets"
        );
    }
}
