//! `[[timeline]]` events: impairment changes on a link or LAN, and nodes stopped, started or
//! signalled, at times counted from when the clients start.

use super::addressing::RawSegment;
use super::error::{Diags, Span};
use super::impairments::{change_or_report, read_fields, IMPAIRMENT_KEYS};
use super::model::{NodeId, Program, SegmentKind, TimelineAction, TimelineEvent};
use super::names::NodeNames;
use super::reader::{self, check_keys, Value};
use crate::roles::SIGNALLED_ROLES;
use netem::units::parse_duration_ns;
use toml::de::DeTable;
use toml::Spanned;

/// The keys that say what an event acts on; exactly one per event.
const TARGETS: [&str; 5] = ["link", "lan", "stop", "start", "signal"];

/// The events, sorted by time (events at the same time keep their file order).
/// `programs[n]` is what node `n` runs (`None` when the node itself was refused).
pub(crate) fn read_timeline(
    root: &DeTable,
    names: &NodeNames,
    programs: &[Option<&Program>],
    segments: &[RawSegment],
    diags: &mut Diags,
) -> Vec<TimelineEvent> {
    let Some(value) = root.get("timeline") else {
        return Vec::new();
    };
    let known: Vec<&str> = ["at", "link", "lan", "from", "stop", "start", "signal"]
        .iter()
        .chain(IMPAIRMENT_KEYS.iter())
        .copied()
        .collect();
    let context = Context {
        names,
        programs,
        segments,
    };
    let mut events = Vec::new();
    for (span, table) in reader::array_of_tables(value, "timeline", diags) {
        check_keys(table, &known, "a timeline event", diags);
        let at_ns = read_at(table, &span, diags);
        let action = context.read_action(table, &span, diags);
        if let (Some(at_ns), Some(action)) = (at_ns, action) {
            events.push((span, TimelineEvent { at_ns, action }));
        }
    }
    events.sort_by_key(|(_, event)| event.at_ns);
    check_link_changes(&events, segments, names, diags);
    events.into_iter().map(|(_, event)| event).collect()
}

/// Follows each direction's impairments through the timeline's changes in time order, and
/// reports at its event a change that leaves a direction with impairments no backend takes
/// ([`netem::Impairments::check`]: a jitter table whose delay the change takes to 0), so the
/// file is refused before anything runs rather than the run failing halfway.
fn check_link_changes(
    events: &[(Span, TimelineEvent)],
    segments: &[RawSegment],
    names: &NodeNames,
    diags: &mut Diags,
) {
    let mut egress: Vec<Vec<netem::Impairments>> =
        segments.iter().map(|s| s.egress.clone()).collect();
    for (span, event) in events {
        let TimelineAction::SetLink {
            segment,
            from,
            change,
        } = &event.action
        else {
            continue;
        };
        for &node in from {
            let members = &segments[*segment].members;
            let Some(member) = members.iter().position(|&m| m == node) else {
                continue;
            };
            let changed = change.apply_to(&egress[*segment][member]);
            match changed.check() {
                Ok(()) => egress[*segment][member] = changed,
                Err(e) => {
                    let from = names.name(node);
                    diags.at(span, format!("after this change, what {from} sends: {e}"));
                    break;
                }
            }
        }
    }
}

fn read_at(table: &DeTable, span: &Span, diags: &mut Diags) -> Option<u64> {
    let Some(value) = table.get("at") else {
        diags.at(
            span,
            "a timeline event needs `at`, its time after the clients start (e.g. at = \"10s\")",
        );
        return None;
    };
    let text = reader::string(value, "at", diags)?;
    match parse_duration_ns(text.get_ref()) {
        Ok(ns) => Some(ns),
        Err(error) => {
            diags.at(&text.span(), format!("at: {error}"));
            None
        }
    }
}

struct Context<'a> {
    names: &'a NodeNames,
    programs: &'a [Option<&'a Program>],
    segments: &'a [RawSegment],
}

impl Context<'_> {
    fn read_action(
        &self,
        table: &DeTable,
        span: &Span,
        diags: &mut Diags,
    ) -> Option<TimelineAction> {
        let mut targets = TARGETS
            .iter()
            .filter_map(|&key| table.get_key_value(key).map(|(k, v)| (key, k.span(), v)));
        let Some((target, _, value)) = targets.next() else {
            diags.at(
                span,
                "a timeline event needs one of `link`, `lan`, `stop`, `start` or `signal`",
            );
            return None;
        };
        if let Some((second, second_span, _)) = targets.next() {
            diags.at(
                &second_span,
                format!(
                    "`{target}` and `{second}` in one event: write them as two [[timeline]] events"
                ),
            );
            return None;
        }
        match target {
            "link" => self.set_link(table, span, self.find_link(value, diags)?, diags),
            "lan" => self.set_link(table, span, self.find_lan(value, diags)?, diags),
            "stop" => Some(TimelineAction::StopNode {
                node: self.node_event(table, "stop", value, diags)?,
            }),
            "start" => Some(TimelineAction::StartNode {
                node: self.node_event(table, "start", value, diags)?,
            }),
            _ => Some(TimelineAction::SignalNode {
                node: self.node_event(table, "signal", value, diags)?,
            }),
        }
    }

    /// The link `link = ["A", "B"]` names (in either order).
    fn find_link(&self, value: &Value, diags: &mut Diags) -> Option<usize> {
        let ends = reader::strings(value, "link", diags)?;
        if ends.len() != 2 {
            diags.at(
                &value.span(),
                format!(
                    "`link` must name the two nodes of a link, not {}",
                    ends.len()
                ),
            );
            return None;
        }
        let a = self.names.resolve(&ends[0], diags);
        let b = self.names.resolve(&ends[1], diags);
        let (a, b) = (a?, b?);
        let found = self.segments.iter().position(|s| {
            s.kind == SegmentKind::Link && (s.members == [a, b] || s.members == [b, a])
        });
        if found.is_none() {
            diags.at(
                &value.span(),
                format!(
                    "no link between `{}` and `{}`",
                    self.names.name(a),
                    self.names.name(b)
                ),
            );
        }
        found
    }

    /// The LAN `lan = "NAME"` names.
    fn find_lan(&self, value: &Value, diags: &mut Diags) -> Option<usize> {
        let name = reader::string(value, "lan", diags)?;
        let lans: Vec<&str> = self
            .segments
            .iter()
            .filter(|s| s.kind == SegmentKind::Lan)
            .map(|s| s.name.as_str())
            .collect();
        let found = self
            .segments
            .iter()
            .position(|s| s.kind == SegmentKind::Lan && s.name == *name.get_ref());
        if found.is_none() {
            let known = if lans.is_empty() {
                "the file has no [[lans]]".to_string()
            } else {
                format!("the LANs are: {}", lans.join(", "))
            };
            diags.at(
                &name.span(),
                format!("no LAN named `{}`; {known}", name.get_ref()),
            );
        }
        found
    }

    /// A change to segment `segment`: of the sender `from` names, or of every member.
    fn set_link(
        &self,
        table: &DeTable,
        span: &Span,
        segment: usize,
        diags: &mut Diags,
    ) -> Option<TimelineAction> {
        let on = &self.segments[segment];
        let from = match table.get("from") {
            Some(value) => {
                let name = reader::string(value, "from", diags)?;
                let node = self.names.resolve(&name, diags)?;
                if !on.members.contains(&node) {
                    diags.at(
                        &name.span(),
                        format!("`{}` is not on {}", name.get_ref(), on.describe()),
                    );
                    return None;
                }
                vec![node]
            }
            None => on.members.clone(),
        };
        let fields = read_fields(table, diags);
        if fields.is_empty() {
            diags.at(
                span,
                format!(
                    "this event changes nothing: give at least one of {}",
                    IMPAIRMENT_KEYS.join(", ")
                ),
            );
            return None;
        }
        let change = change_or_report(&fields, diags)?;
        Some(TimelineAction::SetLink {
            segment,
            from,
            change,
        })
    }

    /// The node a `stop` or `start` event names; impairment keys have no place beside it.
    fn node_event(
        &self,
        table: &DeTable,
        verb: &str,
        value: &Value,
        diags: &mut Diags,
    ) -> Option<NodeId> {
        for key in table.keys() {
            let name = key.get_ref().as_ref();
            if name == "from" || IMPAIRMENT_KEYS.contains(&name) {
                diags.at(
                    &key.span(),
                    format!("`{name}` does not apply to a `{verb}` event"),
                );
            }
        }
        let name: Spanned<String> = reader::string(value, verb, diags)?;
        let node = self.names.resolve(&name, diags)?;
        let problem = match self.programs.get(node).copied().flatten() {
            Some(Program::None) => Some(format!(
                "`{}` is a plain host: nothing runs in it to {verb}",
                name.get_ref()
            )),
            // Any other role would die of SIGUSR1, its default action.
            Some(Program::Role { role, .. })
                if verb == "signal" && !SIGNALLED_ROLES.contains(&role.as_str()) =>
            {
                Some(format!(
                    "`{}` runs role `{role}`, which takes no signal (the roles that do: {})",
                    name.get_ref(),
                    SIGNALLED_ROLES.join(", ")
                ))
            }
            _ => None,
        };
        if let Some(problem) = problem {
            diags.at(&name.span(), problem);
            return None;
        }
        Some(node)
    }
}
