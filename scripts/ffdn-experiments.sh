#!/usr/bin/env bash
# The F-FDN paper's experiments (papers/003, Section VI) on topologies/f-fdn.toml, each a sweep
# over methods with workload traces as replicates (mean and 95% CI), at the paper's intensity
# of 3 500 segments per 3 minutes (583 in the topology's 30 s window) unless it is the axis:
#   methods/    the six methods side by side at 30% caching
#   caching/    deadline miss rate against the caching level (Figure 4)
#   intensity/  against the workload intensity: 500, 625, 750 segments per 30 s, the paper's
#               3 000, 3 750 and 4 500 per 3 minutes (Figure 5)
#   latency/    against the one-way delay between FDNs, with 20 ms jitter (Figure 6): 20 ms,
#               then 500, 1 000 and 2 000 ms (a neighbour's segment 1-4 s away, the paper's
#               axis); the cloud reaches every FDN over its own link and forwards nothing
# usage: scripts/ffdn-experiments.sh [OUT_DIR] [TRACES] [EXPERIMENTS]
#   default results/ffdn-experiments, traces 0,1,2,3,4, experiments methods,caching,intensity,latency
#   (an experiment's sweep is refused if OUT_DIR holds an earlier one: move it or give another)
# Each run takes ~40 s in real time; PARALLEL (default 3) run at once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
cdnlab=$(cdnlab_bin)
out=${1:-results/ffdn-experiments}
traces=${2:-0,1,2,3,4}
experiments=${3:-methods,caching,intensity,latency}
topology=$here/../topologies/f-fdn.toml
parallel=${PARALLEL:-3}
common=(--vary "trace=$traces" --replicates trace --series method --parallel "$parallel")

wanted() { [[ ",$experiments," == *",$1,"* ]]; }

if wanted methods; then
  "$cdnlab" sweep "$topology" "${common[@]}" --out "$out/methods" --vary caching=30% \
    --vary method=central-cloud,cdn,f-cdn,i-fdn,deterministic-ffdn,robust-ffdn \
    --plot deadline_miss_rate:caching
fi
if wanted caching; then
  "$cdnlab" sweep "$topology" "${common[@]}" --out "$out/caching" \
    --vary method=f-cdn,i-fdn,deterministic-ffdn,robust-ffdn --vary caching=0%,30%,60%,90% \
    --plot deadline_miss_rate:caching
fi
if wanted intensity; then
  "$cdnlab" sweep "$topology" "${common[@]}" --out "$out/intensity" \
    --vary method=central-cloud,cdn,i-fdn,deterministic-ffdn,robust-ffdn \
    --vary segments=500,625,750 --plot deadline_miss_rate:segments
fi
if wanted latency; then
  "$cdnlab" sweep "$topology" "${common[@]}" --out "$out/latency" --set fed_jitter=20ms \
    --vary method=cdn,i-fdn,deterministic-ffdn,robust-ffdn \
    --vary fed_delay=20ms,500ms,1000ms,2000ms --plot deadline_miss_rate:fed_delay
fi
