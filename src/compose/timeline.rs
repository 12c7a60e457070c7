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

/// The compose file's comment lines: `at 32s: …` (`swarm`: a stack's, whose services'
/// containers are found by their stack's labels, on the host that runs them).
pub fn commands(topology: &Topology, names: &Names, swarm: bool) -> Vec<String> {
    let steps = steps(topology, names);
    if steps.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![if swarm {
        format!(
            "Timeline (Swarm runs no schedule: `cdnlab compose --swarm … --timeline-script FILE` \
             writes a script that runs it, `FILE {}` on each host right after the deploy; by \
             hand, after the clients start, on the host of each container):",
            topology.name
        )
    } else {
        format!(
            "Timeline (compose runs no schedule: `scripts/compose-timeline.sh {}` runs it for \
             the shipped file, `cdnlab compose … --timeline-script FILE` writes one for any; by \
             hand, after the clients start):",
            topology.name
        )
    }];
    let (stop, start, signal) = if swarm {
        ("docker stop", "docker start", "docker kill -s USR1")
    } else {
        (
            "docker compose stop",
            "docker compose start",
            "docker compose kill -s USR1",
        )
    };
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
            Step::Stop(service) => format!("  at {at}: {stop} {service}"),
            Step::Start(service) => format!("  at {at}: {start} {service}"),
            Step::Signal(service) => format!("  at {at}: {signal} {service}"),
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
            Step::Stop(service) => format!("stop_service {service}\n"),
            Step::Start(service) => format!("start_service {service}\n"),
            Step::Signal(service) => format!("signal_service {service}\n"),
        };
    }
    arm += "    ;;\n";
    Some(arm)
}

/// The helpers of a compose file's script: its project's containers by compose's labels.
const COMPOSE_HELPERS: &str = r#"# usage: SCRIPT LAB, right after `up -d` returned (the clients start last): each event runs
# at its time from now, as `cdnlab run` runs it from the clients' start.
# COMPOSE_PROJECT_NAME names the project (default: this directory's name, as compose's).
set -euo pipefail
project=${COMPOSE_PROJECT_NAME:-$(basename "$PWD" | tr 'A-Z' 'a-z' | tr -cd 'a-z0-9')}
scope=(--filter "label=com.docker.compose.project=$project")
net_prefix=${project}_
# The project's containers of one service (`-a`: stopped ones too).
service() {
  local all=()
  [[ $1 == -a ]] && { all=(-a); shift; }
  local ids
  ids=$(docker ps -q "${all[@]}" "${scope[@]}" --filter "label=com.docker.compose.service=$1")
  [[ -n $ids ]] || { echo "no container of service $1 in project $project" >&2; exit 1; }
  echo "$ids"
}
stop_service() { docker stop $(service "$1"); }
start_service() { docker start $(service -a "$1"); }
signal_service() { docker kill -s USR1 $(service "$1"); }
"#;

/// The helpers of a stack's script: the stack's containers on this host by Swarm's labels (a
/// container on another host is that host's script's to change).
const SWARM_HELPERS: &str = r#"# usage: SCRIPT LAB [STACK], on every host right after `docker stack deploy` returned: each
# event runs at its time from now on this host's containers. STACK defaults to LAB.
set -euo pipefail
stack=${2:-${1:-}}
scope=(--filter "label=com.docker.stack.namespace=$stack")
net_prefix=${stack}_
# This host's containers of one service of the stack (none: another host runs it).
service() {
  docker ps -q "${scope[@]}" --filter "label=com.docker.swarm.service.name=${stack}_$1"
}
stop_service() { local ids; ids=$(service "$1"); [[ -z $ids ]] || docker stop $ids; }
signal_service() { local ids; ids=$(service "$1"); [[ -z $ids ]] || docker kill -s USR1 $ids; }
"#;

/// The whole script: one arm per topology with a timeline, `None` if none has one.
pub fn script(header: &str, arms: &[String], labs: &[String], swarm: bool) -> Option<String> {
    if arms.is_empty() {
        return None;
    }
    let helpers = if swarm {
        SWARM_HELPERS
    } else {
        COMPOSE_HELPERS
    };
    Some(format!(
        r#"#!/usr/bin/env bash
{header}
{helpers}# Changes network NET in every running container on it (each applies its side). The change
# is checked in every one first, so one a container cannot take is made in none; then it is
# made in each, going on past one that fails, which is named before the script stops.
link_set() {{
  local net=$1 c containers failed=()
  shift
  containers=$(docker ps -q "${{scope[@]}}" --filter "network=$net_prefix$net")
  for c in $containers; do
    if ! docker exec "$c" cdnlab container link set --check "$net" "$@" >/dev/null; then
      echo "container $c cannot take the change on $net: nothing was changed" >&2
      exit 1
    fi
  done
  for c in $containers; do
    docker exec "$c" cdnlab container link set "$net" "$@" || failed+=("$c")
  done
  if [[ ${{#failed[@]}} -gt 0 ]]; then
    echo "the change on $net failed in containers ${{failed[*]}}; the others have it" >&2
    exit 1
  fi
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
