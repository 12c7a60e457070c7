#!/usr/bin/env bash
# Change the one-way delay of a link in a running lab: a thin wrapper over `cdnlab link set`.
set -euo pipefail
usage() {
  cat <<'TXT'
usage: scripts/set-delay.sh LAB NODE_A NODE_B DELAY [JITTER] [-- extra `cdnlab link set` flags]
       scripts/set-delay.sh --compose NETWORK DELAY [JITTER] [-- extra flags]
       scripts/set-delay.sh --swarm STACK NETWORK DELAY [JITTER] [-- extra flags]

Sets the one-way delay (tc units: 50ms, 1.5s, 500us) of the link between NODE_A and NODE_B in
lab LAB, both directions, while the lab runs. JITTER (optional) sets the delay variation too.
Flags after `--` pass through, e.g. `-- --from NODE_A` to change one direction only.

  scripts/set-delay.sh chain router server 200ms
  scripts/set-delay.sh chain router server 80ms 5ms -- --from server

With --compose, changes network NETWORK of the docker-compose testbed (docker-compose.yml):
every running container on it, so a packet crossing it gets the new delay once. Set
COMPOSE_PROJECT_NAME when several compose projects are up.

  scripts/set-delay.sh --compose dborder-uborder 200ms   # the Internet link between the CDNs

With --swarm, changes network NETWORK of the Swarm stack STACK (`cdnlab compose --swarm`) in
every container of the stack on it on this host; run it on every host of the stack.

  scripts/set-delay.sh --swarm icdn dborder-uborder 200ms

CDNLAB names the cdnlab binary (default: cdnlab on PATH, else target/release or target/debug).
TXT
}
[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
if [[ ${1:-} == --swarm ]]; then
  [[ $# -ge 4 ]] || { usage >&2; exit 2; }
  stack=$2 net=$3 args=(--delay "$4")
  shift 4
  if [[ $# -gt 0 && $1 != -- ]]; then args+=(--jitter "$1"); shift; fi
  [[ ${1:-} == -- ]] && shift
  swarm_link_set "$stack" "$net" "${args[@]}" "$@"
  exit
fi
if [[ ${1:-} == --compose ]]; then
  [[ $# -ge 3 ]] || { usage >&2; exit 2; }
  net=$2 args=(--delay "$3")
  shift 3
  if [[ $# -gt 0 && $1 != -- ]]; then args+=(--jitter "$1"); shift; fi
  [[ ${1:-} == -- ]] && shift
  compose_link_set "$net" "${args[@]}" "$@"
  exit
fi
[[ $# -ge 4 ]] || { usage >&2; exit 2; }
lab=$1 a=$2 b=$3 delay=$4
shift 4
args=(--delay "$delay")
if [[ $# -gt 0 && $1 != -- ]]; then args+=(--jitter "$1"); shift; fi
[[ ${1:-} == -- ]] && shift
exec "$(cdnlab_bin)" link set --lab "$lab" "$a" "$b" "${args[@]}" "$@"
