# Shared by the scripts: which cdnlab binary to run.
cdnlab_bin() {
  if [[ -n ${CDNLAB:-} ]]; then echo "$CDNLAB"; return; fi
  if command -v cdnlab >/dev/null 2>&1; then command -v cdnlab; return; fi
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  for profile in release debug; do
    if [[ -x $root/target/$profile/cdnlab ]]; then echo "$root/target/$profile/cdnlab"; return; fi
  done
  echo "cdnlab is not built: run cargo build --release (or set CDNLAB)" >&2
  exit 1
}

# The running containers on compose network NET: of project $COMPOSE_PROJECT_NAME when set,
# else of the only project that has such a network.
compose_containers() {
  local net=$1 ids
  local filter=(--filter "label=com.docker.compose.network=$net")
  if [[ -n ${COMPOSE_PROJECT_NAME:-} ]]; then
    filter+=(--filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME")
  fi
  mapfile -t ids < <(docker network ls -q "${filter[@]}")
  if [[ ${#ids[@]} -eq 0 ]]; then
    echo "no compose network \`$net\`${COMPOSE_PROJECT_NAME:+ in project $COMPOSE_PROJECT_NAME} (is the testbed up?)" >&2
    return 1
  fi
  if [[ ${#ids[@]} -gt 1 ]]; then
    echo "several compose projects have a network \`$net\`: set COMPOSE_PROJECT_NAME to one" >&2
    return 1
  fi
  docker network inspect -f '{{range .Containers}}{{.Name}} {{end}}' "${ids[0]}"
}

# Runs `cdnlab container link set NET FLAGS...` in each container of CONTAINERS (names or
# ids, space-separated). The change is checked in every container first, so a bad flag or a
# container that cannot take it changes nothing anywhere; then it is made in every container,
# going on past one that fails, and those are named at the end (exit status 1).
link_set_in() {
  local net=$1 containers=$2 c name failed=()
  shift 2
  for c in $containers; do
    if ! docker exec "$c" cdnlab container link set --check "$net" "$@" >/dev/null; then
      echo "$(container_name "$c") cannot take the change: nothing was changed" >&2
      exit 1
    fi
  done
  for c in $containers; do
    name=$(container_name "$c")
    printf '%s: ' "$name"
    docker exec "$c" cdnlab container link set "$net" "$@" || failed+=("$name")
  done
  if [[ ${#failed[@]} -gt 0 ]]; then
    echo "the change failed in ${failed[*]}; the other containers on \`$net\` have it" >&2
    exit 1
  fi
}

# A container's name, from its name or id.
container_name() {
  docker inspect -f '{{.Name}}' "$1" | sed 's,^/,,'
}

# Changes compose network NET in every container on it (each applies its side), e.g.
# `compose_link_set internet --delay 200ms`.
compose_link_set() {
  local net=$1 containers
  shift
  containers=$(compose_containers "$net") || exit 1
  [[ -n $containers ]] || { echo "no running container is on network \`$net\`" >&2; exit 1; }
  link_set_in "$net" "$containers" "$@"
}

# The running containers of Swarm stack STACK on its network NET, on this host (a container on
# another host is changed by running the same command there).
swarm_containers() {
  local stack=$1 net=$2
  if ! docker network inspect "${stack}_$net" >/dev/null 2>&1; then
    echo "no network \`$net\` of stack $stack on this host (is the stack deployed?)" >&2
    return 1
  fi
  docker ps -q --filter "label=com.docker.stack.namespace=$stack" --filter "network=${stack}_$net"
}

# Changes network NET of stack STACK in every container on it on this host, e.g.
# `swarm_link_set icdn internet --delay 200ms`.
swarm_link_set() {
  local stack=$1 net=$2 containers
  shift 2
  containers=$(swarm_containers "$stack" "$net") || exit 1
  [[ -n $containers ]] || { echo "no running container of stack $stack is on network \`$net\` on this host" >&2; exit 1; }
  link_set_in "$net" "$containers" "$@"
}
