#!/usr/bin/env bash
# The HAS paper's quality breakpoints (papers/001) with replicates: UpstreamRR, 100 chunks,
# P = 6 s, 5 repeats of each point on either side of each breakpoint, for both client
# behaviours (persistent connections; a new connection per request):
#   5mbit-keepalive/           B = 5 Mbit/s, persistent connections, D = 150 and 200 ms
#   5mbit-new-connections/     B = 5 Mbit/s, new connections, D = 0 and 50 ms
#   100mbit-new-connections/   B = 100 Mbit/s, new connections, D = 100 and 150 ms
# (100 Mbit/s with persistent connections has no breakpoint up to 300 ms: RESULTS.md.)
# usage: scripts/has-breakpoints.sh [OUT_DIR]   (default results/has-breakpoints; ~20 min)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
cdnlab=$(cdnlab_bin)
out=${1:-results/has-breakpoints}
topology=$here/../topologies/interconnected-cdn.toml
common=(--set policy=upstream-rr --set chunks=100 --set buffer=6s --repeat 5
  --parallel "${PARALLEL:-7}" --plot avg_quality_mbps:internet_delay
  --plot startup_delay_s:internet_delay)

"$cdnlab" sweep "$topology" "${common[@]}" --out "$out/5mbit-keepalive" \
  --set access_rate=5mbit --set keep_alive=true --vary internet_delay=150ms,200ms
"$cdnlab" sweep "$topology" "${common[@]}" --out "$out/5mbit-new-connections" \
  --set access_rate=5mbit --set keep_alive=false --vary internet_delay=0ms,50ms
"$cdnlab" sweep "$topology" "${common[@]}" --out "$out/100mbit-new-connections" \
  --set access_rate=100mbit --set keep_alive=false --vary internet_delay=100ms,150ms
