//! `[[links]]` and `[[lans]]`: which nodes each segment joins, the impairments of each member's
//! traffic onto it, and an optional explicit subnet.

use super::addressing::{RawSegment, Subnet};
use super::error::{Diags, Span};
use super::impairments::{change_or_report, read_fields, ImpairmentFields, IMPAIRMENT_KEYS};
use super::model::{NodeId, SegmentKind};
use super::names::{check_node_name, NodeNames};
use super::reader::{self, check_keys};
use netem::Impairments;
use std::collections::HashMap;
use toml::de::DeTable;
use toml::Spanned;

/// `extra` followed by the shared impairment keys.
fn keys(extra: &[&'static str]) -> Vec<&'static str> {
    extra
        .iter()
        .chain(IMPAIRMENT_KEYS.iter())
        .copied()
        .collect()
}

/// Reports a segment whose name another already has: a link is named `A-B` after its nodes,
/// so a LAN `a-b`, or links `a-b`–`c` and `a`–`b-c`, would share one; their directions,
/// networks and counters are named after it.
pub(crate) fn check_unique_names(segments: &[RawSegment], diags: &mut Diags) {
    let mut first: HashMap<&str, &RawSegment> = HashMap::new();
    for segment in segments {
        if let Some(earlier) = first.get(segment.name.as_str()) {
            diags.at(
                &segment.span,
                format!(
                    "{} has the name of {} (line {}): rename a node, or the LAN",
                    segment.describe(),
                    earlier.describe(),
                    diags.line_of(&earlier.span)
                ),
            );
        } else {
            first.insert(&segment.name, segment);
        }
    }
}

/// Every `[[links]]` entry whose endpoints resolve, in file order.
pub(crate) fn read_links(root: &DeTable, names: &NodeNames, diags: &mut Diags) -> Vec<RawSegment> {
    let Some(value) = root.get("links") else {
        return Vec::new();
    };
    let known = keys(&["endpoints", "subnet", "from"]);
    // Each pair of nodes already linked, with the position of its `endpoints`.
    let mut linked: HashMap<(NodeId, NodeId), Span> = HashMap::new();
    let mut links = Vec::new();
    for (span, table) in reader::array_of_tables(value, "links", diags) {
        check_keys(table, &known, "a link", diags);
        let Some((endpoints, a, b)) = read_endpoints(table, &span, names, diags) else {
            report_impairments(table, diags);
            continue;
        };
        let pair = (a.min(b), a.max(b));
        if let Some(first) = linked.get(&pair) {
            diags.at(
                &endpoints,
                format!(
                    "a second link between `{}` and `{}` (the first is on line {})",
                    names.name(a),
                    names.name(b),
                    diags.line_of(first)
                ),
            );
            report_impairments(table, diags);
            continue;
        }
        linked.insert(pair, endpoints);
        let members = vec![a, b];
        let name = format!("{}-{}", names.name(a), names.name(b));
        let egress = read_egress(table, &span, &members, "link", names, diags);
        let subnet = read_subnet(table, members.len(), "link", diags);
        links.push(RawSegment {
            name,
            kind: SegmentKind::Link,
            members,
            egress,
            subnet,
            span,
        });
    }
    links
}

/// A link's two distinct endpoints, with the position of its `endpoints` value.
fn read_endpoints(
    table: &DeTable,
    span: &Span,
    names: &NodeNames,
    diags: &mut Diags,
) -> Option<(Span, NodeId, NodeId)> {
    let Some(endpoints) = table.get("endpoints") else {
        diags.at(span, "a link needs `endpoints = [\"A\", \"B\"]`");
        return None;
    };
    let ends = reader::strings(endpoints, "endpoints", diags)?;
    if ends.len() != 2 {
        diags.at(
            &endpoints.span(),
            format!("`endpoints` must name two nodes, not {}", ends.len()),
        );
        return None;
    }
    let a = names.resolve(&ends[0], diags);
    let b = names.resolve(&ends[1], diags);
    let (a, b) = (a?, b?);
    if a == b {
        diags.at(
            &ends[1].span(),
            format!(
                "a link joins two different nodes, and `{}` is named twice",
                names.name(a)
            ),
        );
        return None;
    }
    Some((endpoints.span(), a, b))
}

/// Checks the shared impairment keys of a segment whose members are in error, so that their
/// mistakes are reported in the same run.
fn report_impairments(table: &DeTable, diags: &mut Diags) {
    change_or_report(&read_fields(table, diags), diags);
}

/// Every `[[lans]]` entry whose members resolve, in file order.
pub(crate) fn read_lans(root: &DeTable, names: &NodeNames, diags: &mut Diags) -> Vec<RawSegment> {
    let Some(value) = root.get("lans") else {
        return Vec::new();
    };
    let known = keys(&["name", "members", "subnet", "from"]);
    // Each LAN name so far, with where it was written.
    let mut named: HashMap<String, Span> = HashMap::new();
    let mut lans = Vec::new();
    for (span, table) in reader::array_of_tables(value, "lans", diags) {
        check_keys(table, &known, "a LAN", diags);
        let name = read_lan_name(table, &span, names, &named, diags);
        if let Some(name) = &name {
            named.insert(name.get_ref().clone(), name.span());
        }
        let (Some(name), Some(members)) = (name, read_members(table, &span, names, diags)) else {
            report_impairments(table, diags);
            continue;
        };
        let egress = read_egress(table, &span, &members, "LAN", names, diags);
        let subnet = read_subnet(table, members.len(), "LAN", diags);
        lans.push(RawSegment {
            name: name.into_inner(),
            kind: SegmentKind::Lan,
            members,
            egress,
            subnet,
            span,
        });
    }
    lans
}

fn read_lan_name(
    table: &DeTable,
    span: &Span,
    names: &NodeNames,
    named: &HashMap<String, Span>,
    diags: &mut Diags,
) -> Option<Spanned<String>> {
    let Some(value) = table.get("name") else {
        diags.at(span, "a LAN needs a `name`");
        return None;
    };
    let name = reader::string(value, "name", diags)?;
    if let Err(message) = check_node_name(name.get_ref(), "LAN") {
        diags.at(&name.span(), message);
        return None;
    }
    if let Some(node) = names.get(name.get_ref()) {
        diags.at(
            &name.span(),
            format!(
                "`{}` is already the name of a node (line {})",
                name.get_ref(),
                diags.line_of(&names.span(node))
            ),
        );
        return None;
    }
    if let Some(first) = named.get(name.get_ref()) {
        diags.at(
            &name.span(),
            format!(
                "a second LAN named `{}` (the first is on line {})",
                name.get_ref(),
                diags.line_of(first)
            ),
        );
        return None;
    }
    Some(name)
}

fn read_members(
    table: &DeTable,
    span: &Span,
    names: &NodeNames,
    diags: &mut Diags,
) -> Option<Vec<NodeId>> {
    let Some(value) = table.get("members") else {
        diags.at(span, "a LAN needs `members = [\"A\", \"B\", ...]`");
        return None;
    };
    let listed = reader::strings(value, "members", diags)?;
    if listed.len() < 2 {
        diags.at(&value.span(), "a LAN needs at least two members");
        return None;
    }
    let mut members = Vec::with_capacity(listed.len());
    let mut complete = true;
    for name in &listed {
        match names.resolve(name, diags) {
            Some(id) if members.contains(&id) => {
                diags.at(
                    &name.span(),
                    format!("`{}` is a member twice", name.get_ref()),
                );
                complete = false;
            }
            Some(id) => members.push(id),
            None => complete = false,
        }
    }
    complete.then_some(members)
}

/// Each member's egress impairments: the shared keys, with the member's `from.NODE` keys on top.
/// Bad values, and impairments no backend takes together, are reported (at `span` when no
/// key of theirs is to blame) and leave the defaults in their place. What is checked is each
/// member's own whole: shared keys that only make sense with every member's override (a
/// shared jitter table, each member's own delay) are fine.
fn read_egress(
    table: &DeTable,
    span: &Span,
    members: &[NodeId],
    what: &str,
    names: &NodeNames,
    diags: &mut Diags,
) -> Vec<Impairments> {
    let shared_fields = read_fields(table, diags);
    let shared = change_or_report(&shared_fields, diags)
        .unwrap_or_default()
        .apply_to(&Impairments::default());
    let mut egress: Vec<Option<Impairments>> = vec![None; members.len()];
    read_overrides(table, &shared, members, what, names, &mut egress, diags);
    // The members that take the shared keys as they are.
    if egress.iter().any(Option::is_none) && !checked(&shared, &shared_fields, span, diags) {
        return egress.into_iter().map(Option::unwrap_or_default).collect();
    }
    (egress.into_iter())
        .map(|own| own.unwrap_or_else(|| shared.clone()))
        .collect()
}

/// The `from.NODE` overrides on top of `shared`, into `egress` at each member's position
/// (the defaults where an override is refused).
fn read_overrides(
    table: &DeTable,
    shared: &Impairments,
    members: &[NodeId],
    what: &str,
    names: &NodeNames,
    egress: &mut [Option<Impairments>],
    diags: &mut Diags,
) {
    let Some(from) = table.get("from") else {
        return;
    };
    let Some(from) = reader::table(from, "from", diags) else {
        return;
    };
    for (key, value) in from.iter() {
        let name = Spanned::new(key.span(), key.get_ref().to_string());
        let Some(node) = names.resolve(&name, diags) else {
            continue;
        };
        let Some(position) = members.iter().position(|&m| m == node) else {
            let on: Vec<&str> = members.iter().map(|&m| names.name(m)).collect();
            diags.at(
                &key.span(),
                format!(
                    "`{}` is not on this {what}, which joins {}",
                    name.get_ref(),
                    on.join(", ")
                ),
            );
            continue;
        };
        let Some(overrides) = reader::table(value, &format!("from.{}", name.get_ref()), diags)
        else {
            continue;
        };
        check_keys(
            overrides,
            &IMPAIRMENT_KEYS,
            &format!("`from.{}`", name.get_ref()),
            diags,
        );
        let fields = read_fields(overrides, diags);
        let own = change_or_report(&fields, diags)
            .map(|change| change.apply_to(shared))
            .filter(|own| checked(own, &fields, &key.span(), diags));
        egress[position] = Some(own.unwrap_or_default());
    }
}

/// Whether `impairments` are ones every backend takes ([`Impairments::check`]); if not, says
/// why at the `distribution` or `delay` written, else at `span`.
fn checked(
    impairments: &Impairments,
    fields: &ImpairmentFields,
    span: &Span,
    diags: &mut Diags,
) -> bool {
    let Err(message) = impairments.check() else {
        return true;
    };
    let at = fields
        .distribution
        .as_ref()
        .or(fields.delay.as_ref())
        .map_or_else(|| span.clone(), |value| value.span());
    diags.at(&at, message);
    false
}

fn read_subnet(
    table: &DeTable,
    members: usize,
    what: &str,
    diags: &mut Diags,
) -> Option<Spanned<Subnet>> {
    let text = reader::string(table.get("subnet")?, "subnet", diags)?;
    let subnet = match Subnet::parse(text.get_ref()) {
        Ok(subnet) => subnet,
        Err(message) => {
            diags.at(&text.span(), message);
            return None;
        }
    };
    if subnet.hosts() < members as u64 {
        diags.at(
            &text.span(),
            format!(
                "subnet {subnet} has room for {} addresses, and this {what} has {members} members; use a /{} or shorter prefix",
                subnet.hosts(),
                Subnet::prefix_for(members)
            ),
        );
        return None;
    }
    Some(Spanned::new(text.span(), subnet))
}
