#!/usr/bin/env bash
# Print a tree topology of plain hosts (a root, BRANCHES branch nodes, LEAVES leaves under each)
# for scale tests; topologies/tree100.toml and tree1000.toml are its output.
set -euo pipefail
usage() {
  cat <<'TXT'
usage: scripts/tree-topology.sh BRANCHES LEAVES [NAME]

Prints, on stdout, a topology of 1 + BRANCHES + BRANCHES × LEAVES plain hosts: `root`, branch
nodes `b1`…`bB` linked to it and leaves `bI-l1`…`bI-lL` linked to their branch, every link with
the delay `${link_delay}` (1ms; `--set link_delay=5ms` changes them all), so every direction of
every link is emulated. NAME is the lab name (default `treeN`, N the node count).

  scripts/tree-topology.sh 9 10 > topologies/tree100.toml
  scripts/tree-topology.sh 27 36 > topologies/tree1000.toml
TXT
}
[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
[[ $# -eq 2 || $# -eq 3 ]] || { usage >&2; exit 2; }
for count in "$1" "$2"; do
  if ! [[ $count =~ ^[1-9][0-9]{0,3}$ ]]; then
    echo "BRANCHES and LEAVES must be whole numbers from 1 to 9999, not \`$count\`" >&2
    exit 2
  fi
done
branches=$1 leaves=$2
nodes=$((1 + branches + branches * leaves))
name=${3:-tree$nodes}
if ! [[ $name =~ ^[a-z][a-z0-9-]{0,19}$ ]]; then
  echo "NAME \`$name\` is not a lab name (1 to 20 lowercase letters, digits and -, starting with a letter)" >&2
  exit 2
fi

cat <<TOML
# A $nodes-node tree for the scale benchmark: a root, $branches branch nodes under it and $leaves leaves
# under each branch (1 + $branches + $((branches * leaves)) = $nodes plain hosts, $((nodes - 1)) links), every link with the same delay.
# \`--set link_delay=5ms\` changes them all. Made by \`scripts/tree-topology.sh $*\`.

name = "$name"

[vars]
link_delay = "1ms"

[nodes.root]
TOML
for ((b = 1; b <= branches; b++)); do echo "[nodes.b$b]"; done
for ((b = 1; b <= branches; b++)); do
  for ((l = 1; l <= leaves; l++)); do echo "[nodes.b$b-l$l]"; done
done
link() { printf '\n[[links]]\nendpoints = ["%s", "%s"]\ndelay = "${link_delay}"\n' "$1" "$2"; }
for ((b = 1; b <= branches; b++)); do link root "b$b"; done
for ((b = 1; b <= branches; b++)); do
  for ((l = 1; l <= leaves; l++)); do link "b$b" "b$b-l$l"; done
done
