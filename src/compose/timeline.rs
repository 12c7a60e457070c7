//! A topology's timeline has no compose form (compose starts containers, it does not run a
//! schedule). Each event is written in the compose file as the command that does it by hand,
//! and `cdnlab compose --timeline-script FILE` writes a script that runs them at their times.

use super::service::Names;
use crate::topology::{change_entries, TimelineAction, Topology};
use netem::units::format_duration_ns;
use netem::ImpairmentsChange;

/// One timeline event as containers take it.
enum Step {
    /// `cdnlab container link set NET FLAGS` in every container on the network.
    Link {
        network: String,
        flags: String,
        /// The topology changes one direction; a container network changes as a whole.
        one_way: bool,
    },
    Stop(String),
    Start(String),
    Signal(String),
}

fn steps(topology: &Topology, names: &Names) -> Vec<(u64, Step)> {
    topology
        .timeline
        .iter()
        .map(|event| {
            let service = |node: usize| names.service(&topology.nodes[node].name);
            let step = match &event.action {
                TimelineAction::SetLink {
                    segment,
                    from,
                    change,
                } => {
                    let segment = &topology.segments[*segment];
                    Step::Link {
                        network: names.network(&segment.name),
                        flags: change_flags(change),
                        one_way: from.len() < segment.members.len(),
                    }
                }
                TimelineAction::StopNode { node } => Step::Stop(service(*node)),
                TimelineAction::StartNode { node } => Step::Start(service(*node)),
                TimelineAction::SignalNode { node } => Step::Signal(service(*node)),
            };
            (event.at_ns, step)
        })
        .collect()
}

/// The compose file's comment lines: `at 32s: …`.
pub fn commands(topology: &Topology, names: &Names) -> Vec<String> {
    let steps = steps(topology, names);
    if steps.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "Timeline (compose runs no schedule: `scripts/compose-timeline.sh {}` runs it for the \
         shipped file, `cdnlab compose … --timeline-script FILE` writes one for any; by hand, \
         after the clients start):",
        topology.name
    )];
    for (at_ns, step) in steps {
        let at = format_duration_ns(at_ns);
        lines.push(match step {
            Step::Link {
                network,
                flags,
                one_way,
            } => format!(
                "  at {at}: in every container on {network}: cdnlab container link set {network} {flags}{}",
                if one_way {
                    " (the topology changes one direction; this changes the network)"
                } else {
                    ""
                }
            ),
            Step::Stop(service) => format!("  at {at}: docker compose stop {service}"),
            Step::Start(service) => format!("  at {at}: docker compose start {service}"),
            Step::Signal(service) => format!("  at {at}: docker compose kill -s USR1 {service}"),
        });
    }
    lines
}

/// The script's `case` arm of one topology: `LAB)` and each step at its time.
pub fn script_arm(topology: &Topology, names: &Names) -> Option<String> {
    let steps = steps(topology, names);
    if steps.is_empty() {
        return None;
    }
    let mut arm = format!("  {})\n", topology.name);
    for (at_ns, step) in steps {
        let at = format!("    at {at_ns} {}; ", format_duration_ns(at_ns));
        arm += &at;
        arm += &match step {
            Step::Link { network, flags, .. } => format!("link_set {network} {flags}\n"),
            Step::Stop(service) => format!("docker stop $(service {service})\n"),
            Step::Start(service) => format!("docker start $(service -a {service})\n"),
            Step::Signal(service) => format!("docker kill -s USR1 $(service {service})\n"),
        };
    }
    arm += "    ;;\n";
    Some(arm)
}

/// The whole script: one arm per topology with a timeline, `None` if none has one.
pub fn script(header: &str, arms: &[String], labs: &[String]) -> Option<String> {
    if arms.is_empty() {
        return None;
    }
    Some(format!(
        r#"#!/usr/bin/env bash
{header}
# usage: compose-timeline.sh LAB, right after `up -d` returned (the clients start last): each
# event runs at its time from now, as `cdnlab run` runs it from the clients' start.
# COMPOSE_PROJECT_NAME names the project (default: this directory's name, as compose's).
set -euo pipefail
project=${{COMPOSE_PROJECT_NAME:-$(basename "$PWD" | tr 'A-Z' 'a-z' | tr -cd 'a-z0-9')}}
# The project's containers of one service (`-a`: stopped ones too).
service() {{
  local all=()
  [[ $1 == -a ]] && {{ all=(-a); shift; }}
  local ids
  ids=$(docker ps -q "${{all[@]}}" --filter "label=com.docker.compose.project=$project" \
    --filter "label=com.docker.compose.service=$1")
  [[ -n $ids ]] || {{ echo "no container of service $1 in project $project" >&2; exit 1; }}
  echo "$ids"
}}
# Changes network NET in every running container on it (each applies its side).
link_set() {{
  local net=$1 c
  shift
  for c in $(docker ps -q --filter "label=com.docker.compose.project=$project" \
      --filter "network=${{project}}_$net"); do
    docker exec "$c" cdnlab container link set "$net" "$@"
  done
}}
start=$(date +%s%N)
# Waits until NS nanoseconds after the start, then says which event runs.
at() {{
  local wait=$(( start + $1 - $(date +%s%N) ))
  (( wait > 0 )) && sleep "$(printf '%d.%09d' $(( wait / 1000000000 )) $(( wait % 1000000000 )))"
  echo "at $2:"
}}
case ${{1:-}} in
{arms}  *) echo "usage: $0 LAB (one of: {labs})" >&2; exit 2 ;;
esac
"#,
        arms = arms.concat(),
        labs = labs.join(", "),
    ))
}

/// The `cdnlab link set` flags of a change (`--delay 80ms --rate 1mbit`).
fn change_flags(change: &ImpairmentsChange) -> String {
    let flags: Vec<String> = change_entries(change)
        .into_iter()
        .map(|(key, text)| format!("--{} {text}", key.replace('_', "-")))
        .collect();
    flags.join(" ")
}
