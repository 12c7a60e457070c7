//! `cdnlab link set|show|reset`: read and change impairments while the lab runs.

use super::{load_lab, node_names, usage_error, Failure, LabFlag};
use crate::lab::{self, LabState};
use crate::topology::{self, SegmentKind};
use clap::{Args, Subcommand};

#[derive(Subcommand)]
pub enum LinkVerb {
    /// Change a link's impairments (both directions unless --from names one sender).
    Set(Box<SetArgs>),
    /// Show every direction's impairments (and the shaper's counters).
    Show {
        #[command(flatten)]
        lab: LabFlag,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove the impairments of one link (A B) or of every link.
    Reset {
        #[command(flatten)]
        lab: LabFlag,
        /// One end of the link (default: every link).
        a: Option<String>,
        /// The other end.
        b: Option<String>,
    },
}

/// The two nodes a link joins, as the link verbs and `capture` name it.
#[derive(Args)]
pub(super) struct LinkEnds {
    /// One end of the link.
    pub a: String,
    /// The other end.
    pub b: String,
}

#[derive(Args)]
pub struct SetArgs {
    #[command(flatten)]
    lab: LabFlag,
    #[command(flatten)]
    ends: LinkEnds,
    /// Change only traffic sent by this end (`--dir A-B` says the same as `--from A`).
    #[arg(long)]
    from: Option<String>,
    /// `A-B`: change only the direction from A to B.
    #[arg(long)]
    dir: Option<String>,
    #[command(flatten)]
    change: topology::ChangeFlags,
}

pub fn run(verb: LinkVerb) -> Result<(), Failure> {
    match verb {
        LinkVerb::Set(args) => set(*args),
        LinkVerb::Show { lab, json } => {
            let state = load_lab(&lab.resolve()?)?;
            super::status::print_links(&state, json)
        }
        LinkVerb::Reset { lab, a, b } => reset(&lab.resolve()?, a, b),
    }
}

pub(super) fn node_index(state: &LabState, name: &str) -> Result<usize, Failure> {
    state
        .topology
        .nodes
        .iter()
        .position(|n| n.name == name)
        .ok_or_else(|| {
            usage_error(format!(
                "lab `{}` has no node `{name}`; its nodes: {}",
                state.lab,
                node_names(state)
            ))
        })
}

/// The link segment joining nodes `a` and `b`.
pub(super) fn link_between(state: &LabState, a: &str, b: &str) -> Result<usize, Failure> {
    let (a_index, b_index) = (node_index(state, a)?, node_index(state, b)?);
    state
        .topology
        .segments
        .iter()
        .position(|s| {
            s.kind == SegmentKind::Link
                && s.members.contains(&a_index)
                && s.members.contains(&b_index)
        })
        .ok_or_else(|| {
            usage_error(format!(
                "lab `{}` has no link between {a} and {b}",
                state.lab
            ))
        })
}

fn set(args: SetArgs) -> Result<(), Failure> {
    // The flags first: a bad value is a usage error whether or not the lab is up.
    let change = args.change.to_change().map_err(usage_error)?;
    let from = match (&args.from, &args.dir) {
        (Some(_), Some(_)) => return Err(usage_error("give --from or --dir, not both")),
        (Some(from), None) => Some(from.clone()),
        (None, Some(dir)) => {
            // Compared whole, not split at a `-`: node names may hold one (`edge-1`).
            let (a, b) = (&args.ends.a, &args.ends.b);
            if *dir == format!("{a}-{b}") {
                Some(a.clone())
            } else if *dir == format!("{b}-{a}") {
                Some(b.clone())
            } else {
                return Err(usage_error(format!(
                    "--dir `{dir}`: expected {a}-{b} or {b}-{a}"
                )));
            }
        }
        (None, None) => None,
    };
    let mut state = load_lab(&args.lab.resolve()?)?;
    if change.is_empty() {
        return Err(usage_error(
            "nothing to change: give --delay, --jitter, --loss, --rate, --limit, …",
        ));
    }
    let segment = link_between(&state, &args.ends.a, &args.ends.b)?;
    let members = state.topology.segments[segment].members.clone();
    let senders = match from {
        None => members,
        Some(name) => {
            let sender = node_index(&state, &name)?;
            if !members.contains(&sender) {
                return Err(usage_error(format!(
                    "{name} is not an end of link {} ",
                    state.topology.segments[segment].name
                )));
            }
            vec![sender]
        }
    };
    lab::control::change_segment(&mut state, segment, &senders, &change)?;
    super::status::print_links(&state, false)
}

fn reset(lab: &str, a: Option<String>, b: Option<String>) -> Result<(), Failure> {
    let mut state = load_lab(lab)?;
    let segments: Vec<usize> = match (a, b) {
        (Some(a), Some(b)) => vec![link_between(&state, &a, &b)?],
        (None, None) => (0..state.topology.segments.len()).collect(),
        _ => {
            return Err(usage_error(
                "link reset takes two nodes (A B) or none for every link",
            ))
        }
    };
    lab::control::reset_segments(&mut state, &segments)?;
    super::status::print_links(&state, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        verb: LinkVerb,
    }

    /// `--dir` names a direction by both ends, whose names may hold a `-` themselves; it is
    /// checked against the link's ends before any lab is looked for.
    #[test]
    fn a_direction_between_hyphenated_names_is_understood() {
        let set = |dir: &str| {
            let args = ["link", "set", "--lab", "no-such-lab", "edge-1", "core-2"];
            let cli = Cli::try_parse_from(args.into_iter().chain(["--delay", "5ms", "--dir", dir]))
                .unwrap();
            run(cli.verb).unwrap_err()
        };
        for dir in ["edge-1-core-2", "core-2-edge-1"] {
            let failure = set(dir);
            assert!(
                !failure.message.contains("--dir"),
                "{dir}: {}",
                failure.message
            );
        }
        let failure = set("edge-core-2");
        assert_eq!(failure.status, 2, "{}", failure.message);
        assert_eq!(
            failure.message,
            "--dir `edge-core-2`: expected edge-1-core-2 or core-2-edge-1"
        );
    }

    #[test]
    fn a_limit_beyond_the_kernel_queue_is_a_usage_error() {
        let args = ["link", "set", "--lab", "no-such-lab", "a", "b"];
        let cli = Cli::try_parse_from(args.into_iter().chain(["--limit", "70000"])).unwrap();
        let failure = run(cli.verb).unwrap_err();
        assert_eq!(failure.status, 2, "{}", failure.message);
        assert_eq!(
            failure.message,
            "--limit: a queue limit of 70000 packets is above the maximum, 65536 (what the \
             kernel's NFQUEUE holds)"
        );
    }
}
