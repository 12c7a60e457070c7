#!/usr/bin/env bash
# Run topologies/hybrid-p2p-cloud.toml once per dispatch policy and set the runs side by side.
set -euo pipefail
usage() {
  cat <<'TXT'
usage: scripts/p2p-compare.sh OUT [--set K=V]…

Runs topologies/hybrid-p2p-cloud.toml with dispatch=local, proportional and optimal, one
after another (each about 75 s; the same seed, so the peers play the same chunks), into
OUT/local, OUT/proportional and OUT/optimal, then prints `cdnlab p2p report` of the three
(also written to OUT/report.md and OUT/report.json); a run never writes into an earlier
run's directory, so OUT must not hold one. Other --set options go to every run:

  scripts/p2p-compare.sh results/p2p-lab
  scripts/p2p-compare.sh results/p2p-churn --set churn=yes
TXT
}
[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
(( $# >= 1 )) || { usage >&2; exit 2; }
out=$1
shift
here=$(cd "$(dirname "$0")/.." && pwd)
cdnlab=${CDNLAB:-$here/target/release/cdnlab}
mkdir -p "$out"
runs=()
for policy in local proportional optimal; do
  "$cdnlab" run "$here/topologies/hybrid-p2p-cloud.toml" --out "$out/$policy" \
    --set "dispatch=$policy" "$@" > "$out/$policy.txt"
  runs+=("$out/$policy")
done
"$cdnlab" p2p report "${runs[@]}" | tee "$out/report.md"
"$cdnlab" p2p report --json "${runs[@]}" > "$out/report.json"
