#!/usr/bin/env bash
# The HAS paper's quality breakpoints (papers/001), UpstreamRR, 100 chunks, P = 6 s.
#
# `repeats` (~20 min): 5 repeats of each point on either side of each breakpoint, for both
# client behaviours (persistent connections; a new connection per request):
#   5mbit-keepalive/           B = 5 Mbit/s, persistent connections, D = 150 and 200 ms
#   5mbit-new-connections/     B = 5 Mbit/s, new connections, D = 0 and 50 ms
#   100mbit-new-connections/   B = 100 Mbit/s, new connections, D = 100 and 150 ms
# (100 Mbit/s with persistent connections has no breakpoint up to 300 ms: RESULTS.md.)
#
# `unscaled` (~20 min): the Smooth Streaming heuristic with its 20 s buffer thresholds kept as
# they are (abr = mss-unscaled) instead of scaled by P / 20, D = 0..300 ms, one run per point:
#   unscaled/{5mbit,100mbit}-{keepalive,new-connections}/
#
# usage: scripts/has-breakpoints.sh [OUT_DIR] [repeats|unscaled|all]
#        (default results/has-breakpoints, all; a sweep is refused if OUT_DIR holds an earlier
#        one: move it or give another)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
cdnlab=$(cdnlab_bin)
out=${1:-results/has-breakpoints}
part=${2:-all}
topology=$here/../topologies/interconnected-cdn.toml
common=(--set policy=upstream-rr --set chunks=100 --set buffer=6s
  --parallel "${PARALLEL:-7}" --plot avg_quality_mbps:internet_delay
  --plot startup_delay_s:internet_delay)

case $part in
repeats | unscaled | all) ;;
*) echo "has-breakpoints.sh: unknown part '$part' (repeats, unscaled or all)" >&2; exit 2 ;;
esac

if [[ $part != unscaled ]]; then
  "$cdnlab" sweep "$topology" "${common[@]}" --repeat 5 --out "$out/5mbit-keepalive" \
    --set access_rate=5mbit --set keep_alive=true --vary internet_delay=150ms,200ms
  "$cdnlab" sweep "$topology" "${common[@]}" --repeat 5 --out "$out/5mbit-new-connections" \
    --set access_rate=5mbit --set keep_alive=false --vary internet_delay=0ms,50ms
  "$cdnlab" sweep "$topology" "${common[@]}" --repeat 5 --out "$out/100mbit-new-connections" \
    --set access_rate=100mbit --set keep_alive=false --vary internet_delay=100ms,150ms
fi

if [[ $part != repeats ]]; then
  for rate in 5mbit 100mbit; do
    for keep_alive in true false; do
      name=$rate-$([[ $keep_alive == true ]] && echo keepalive || echo new-connections)
      "$cdnlab" sweep "$topology" "${common[@]}" --out "$out/unscaled/$name" \
        --set abr=mss-unscaled --set access_rate=$rate --set keep_alive=$keep_alive \
        --vary internet_delay=0ms,50ms,100ms,150ms,200ms,250ms,300ms
    done
  done
fi
