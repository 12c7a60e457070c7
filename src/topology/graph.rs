//! The segment graph must be connected: a node nothing reaches could not take part in the
//! scenario, and is almost always a typo in a link.

use super::addressing::RawSegment;
use super::error::Diags;
use super::names::NodeNames;

/// Reports the nodes no path of segments joins to the first node, at the first of them.
pub(crate) fn check_connected(names: &NodeNames, segments: &[RawSegment], diags: &mut Diags) {
    let count = names.names.len();
    if count == 0 {
        return;
    }
    let mut on: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (index, segment) in segments.iter().enumerate() {
        for &member in &segment.members {
            on[member].push(index);
        }
    }
    let mut reached = vec![false; count];
    reached[0] = true;
    let mut stack = vec![0];
    while let Some(node) = stack.pop() {
        for &segment in &on[node] {
            for &next in &segments[segment].members {
                if !reached[next] {
                    reached[next] = true;
                    stack.push(next);
                }
            }
        }
    }
    let unreached: Vec<usize> = (0..count).filter(|&n| !reached[n]).collect();
    let Some(&first) = unreached.first() else {
        return;
    };
    const SHOWN: usize = 10;
    let mut listed: Vec<String> = unreached
        .iter()
        .take(SHOWN)
        .map(|&n| format!("`{}`", names.name(n)))
        .collect();
    if unreached.len() > SHOWN {
        listed.push(format!("… ({} in all)", unreached.len()));
    }
    diags.at(
        &names.span(first),
        format!(
            "the topology is not connected: no links or LANs lead from `{}` to {}",
            names.name(0),
            listed.join(", ")
        ),
    );
}
