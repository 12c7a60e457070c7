#!/usr/bin/env bash
# Shows that `docker stack deploy` accepts a topology's stack file, as tests/swarm.rs does for
# every shipped topology but the 1 000-node tree (too slow for the test suite): writes the
# stack file, deploys it with an image that does not exist (so no task runs: what is checked is
# the stack — services, overlay networks, secrets), counts what the Swarm made, removes the
# stack and waits until nothing of it is left. Prints how long each step took.
#
#   scripts/swarm-accepts.sh [TOPOLOGY]      (as root; default topologies/tree1000.toml)
#
# The machine is made a single-node Swarm if it is not one, and left as it was found (with the
# docker_gwbridge network that `swarm init` makes, if there was none).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
cdnlab=$(cdnlab_bin)
topology=${1:-$here/../topologies/tree1000.toml}
stack=cdnlabaccepts
work=$(mktemp -d /var/tmp/cdnlab-swarm-accepts.XXXXXX)

initialized=false
had_gwbridge=true
docker network inspect docker_gwbridge >/dev/null 2>&1 || had_gwbridge=false
state=$(docker info --format '{{.Swarm.LocalNodeState}}')
case $state in
  active) ;;
  inactive) docker swarm init --advertise-addr 127.0.0.1 >/dev/null; initialized=true ;;
  *) echo "this engine's Swarm is \`$state\`: neither active nor inactive" >&2; exit 1 ;;
esac

left() {
  local label=label=com.docker.stack.namespace=$stack
  { docker service ls -q --filter "$label"; docker network ls -q --filter "$label"
    docker secret ls -q --filter "$label"; docker ps -aq --filter "$label"; } | wc -l
}
cleanup() {
  docker stack rm "$stack" >/dev/null 2>&1 || true
  for _ in $(seq 600); do [[ $(left) -eq 0 ]] && break; sleep 1; done
  if $initialized; then
    docker swarm leave --force >/dev/null
    if ! $had_gwbridge; then
      for _ in $(seq 20); do docker network rm docker_gwbridge >/dev/null 2>&1 && break; sleep 0.5; done
    fi
  fi
  rm -rf "$work"
}
trap cleanup EXIT

seconds() { date +%s.%N; }
t0=$(seconds)
"$cdnlab" compose "$topology" --swarm --out "$work/stack.yml"
t1=$(seconds)
CDNLAB_IMAGE=cdnlab-test:absent CDNLAB_RESULTS=$work \
  docker stack deploy --detach=true --resolve-image never -c "$work/stack.yml" "$stack" >/dev/null
t2=$(seconds)
label=label=com.docker.stack.namespace=$stack
services=$(docker service ls -q --filter "$label" | wc -l)
networks=$(docker network ls -q --filter "$label" | wc -l)
secrets=$(docker secret ls -q --filter "$label" | wc -l)
docker stack rm "$stack" >/dev/null
for _ in $(seq 1200); do [[ $(left) -eq 0 ]] && break; sleep 1; done
t3=$(seconds)
remaining=$(left)

printf '| topology | stack file (s) | deploy (s) | services | networks | secrets | remove until nothing is left (s) | left |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- |\n'
awk -v name="$(basename "$topology")" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" \
  -v s="$services" -v n="$networks" -v k="$secrets" -v r="$remaining" \
  'BEGIN { printf "| %s | %.1f | %.1f | %d | %d | %d | %.1f | %d |\n", name, t1 - t0, t2 - t1, s, n, k, t3 - t2, r }'
[[ $remaining -eq 0 ]]
