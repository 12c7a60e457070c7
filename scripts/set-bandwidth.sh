#!/usr/bin/env bash
# Change the bandwidth (rate) of a link in a running lab: a thin wrapper over `cdnlab link set`.
set -euo pipefail
usage() {
  cat <<'TXT'
usage: scripts/set-bandwidth.sh LAB NODE_A NODE_B RATE [-- extra `cdnlab link set` flags]
       scripts/set-bandwidth.sh --compose NETWORK RATE [-- extra flags]
       scripts/set-bandwidth.sh --swarm STACK NETWORK RATE [-- extra flags]

Sets the rate (tc units: 5mbit, 100mbit, 1gbit; `unlimited` removes the limit) of the link
between NODE_A and NODE_B in lab LAB, both directions, while the lab runs. Flags after `--` pass
through, e.g. `-- --from NODE_A --limit 200`.

  scripts/set-bandwidth.sh chain client router 5mbit
  scripts/set-bandwidth.sh chain client router 1mbit -- --from client

With --compose, changes network NETWORK of the docker-compose testbed (docker-compose.yml) in
every running container on it. Set COMPOSE_PROJECT_NAME when several compose projects are up.

  scripts/set-bandwidth.sh --compose c-direct-rr-acc 1mbit   # one client's access link

With --swarm, changes network NETWORK of the Swarm stack STACK (`cdnlab compose --swarm`) in
every container of the stack on it on this host; run it on every host of the stack.

  scripts/set-bandwidth.sh --swarm icdn dborder-uborder 1mbit

CDNLAB names the cdnlab binary (default: cdnlab on PATH, else target/release or target/debug).
TXT
}
[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
if [[ ${1:-} == --swarm ]]; then
  [[ $# -ge 4 ]] || { usage >&2; exit 2; }
  stack=$2 net=$3 rate=$4
  shift 4
  [[ ${1:-} == -- ]] && shift
  swarm_link_set "$stack" "$net" --rate "$rate" "$@"
  exit
fi
if [[ ${1:-} == --compose ]]; then
  [[ $# -ge 3 ]] || { usage >&2; exit 2; }
  net=$2 rate=$3
  shift 3
  [[ ${1:-} == -- ]] && shift
  compose_link_set "$net" --rate "$rate" "$@"
  exit
fi
[[ $# -ge 4 ]] || { usage >&2; exit 2; }
lab=$1 a=$2 b=$3 rate=$4
shift 4
[[ ${1:-} == -- ]] && shift
exec "$(cdnlab_bin)" link set --lab "$lab" "$a" "$b" --rate "$rate" "$@"
