#!/usr/bin/env bash
# The F-FDN paper's three experiments (papers/003, Section VI) on topologies/f-fdn.toml, each a
# sweep over methods with several workload traces as replicates (mean and 95% CI):
#   caching/    deadline miss rate against the caching level (Figure 4)
#   intensity/  against the workload intensity, segments per 30 s window (Figure 5)
#   latency/    against the latency between FDNs, with jitter (Figure 6)
# usage: scripts/ffdn-experiments.sh [OUT_DIR] [TRACES]   (default results/ffdn-experiments, 0,1)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
cdnlab=$(cdnlab_bin)
out=${1:-results/ffdn-experiments}
traces=${2:-0,1}
topology=$here/../topologies/f-fdn.toml
parallel=${PARALLEL:-3}
common=(--vary "trace=$traces" --replicates trace --series method --parallel "$parallel")

"$cdnlab" sweep "$topology" "${common[@]}" --out "$out/caching" \
  --vary method=f-cdn,i-fdn,deterministic-ffdn,robust-ffdn --vary caching=0%,30%,60%,90% \
  --plot deadline_miss_rate:caching
"$cdnlab" sweep "$topology" "${common[@]}" --out "$out/intensity" \
  --vary method=central-cloud,cdn,i-fdn,deterministic-ffdn,robust-ffdn --vary segments=250,350,450 \
  --plot deadline_miss_rate:segments
"$cdnlab" sweep "$topology" "${common[@]}" --out "$out/latency" --set fed_jitter=20ms \
  --vary method=cdn,i-fdn,deterministic-ffdn,robust-ffdn --vary fed_delay=20ms,100ms,200ms \
  --plot deadline_miss_rate:fed_delay
