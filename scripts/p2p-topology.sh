#!/usr/bin/env bash
# Print the hybrid P2P-cloud topology with the ISPs given as PEERS:UPLOAD;
# topologies/hybrid-p2p-cloud.toml is its output for 8:1.5 6:0.8 6:0.25.
set -euo pipefail
usage() {
  cat <<'TXT'
usage: scripts/p2p-topology.sh PEERS:UPLOAD PEERS:UPLOAD [PEERS:UPLOAD…]

Prints, on stdout, the hybrid P2P-cloud CDN of papers/002 on real processes: one ISP per
argument, each a LAN of PEERS `p2p-peer` processes (iM-N) and its gateway ispM, the gateways
joined pairwise by peering links (inter-ISP traffic) and each by a transit link to the
`transit` router, behind which sit the `p2p-tracker` and the `p2p-cloud`. UPLOAD is what one
peer of the ISP uploads, in chunks per slot: the tracker's U_m, and the rate of the peer's
link onto its LAN at the default chunk size and slot (25 000 bytes per 500 ms = 400 kbit/s
per chunk per slot). 2 to 6 ISPs of 1 to 30 peers each; every other parameter is a variable
of the file (`--set dispatch=local`, …):

  scripts/p2p-topology.sh 8:1.5 6:0.8 6:0.25 > topologies/hybrid-p2p-cloud.toml
TXT
}
[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
(( $# >= 2 && $# <= 6 )) || { usage >&2; exit 2; }
peers=() uploads=()
for spec in "$@"; do
  if ! [[ $spec =~ ^([1-9][0-9]?):([0-9]+(\.[0-9]+)?)$ ]] || (( BASH_REMATCH[1] > 30 )); then
    echo "\`$spec\` is not PEERS:UPLOAD (1 to 30 peers, an upload such as 0.8)" >&2
    exit 2
  fi
  count=${BASH_REMATCH[1]} upload=${BASH_REMATCH[2]}
  if [[ $upload =~ ^0+(\.0+)?$ ]]; then
    echo "\`$spec\`: the upload must be above 0" >&2
    exit 2
  fi
  peers+=("$count")
  uploads+=("$upload")
done
isps=$#
all_peers="" peer_isp="" gateways="" upload_list=""
for ((m = 1; m <= isps; m++)); do
  gateways+="\"isp$m\", "
  upload_list+="${uploads[m-1]},"
  for ((n = 1; n <= peers[m-1]; n++)); do
    all_peers+="\"i$m-$n\", "
    peer_isp+="\"$m\", "
  done
done
all_peers=${all_peers%, } peer_isp=${peer_isp%, } gateways=${gateways%, } upload_list=${upload_list%,}
kbit() { awk -v u="$1" 'BEGIN { printf "%dkbit", u * 400 + 0.5 }'; }

cat <<TOML
# The hybrid P2P-cloud CDN (papers/002) on real processes: $isps ISPs of ${peers[*]} peers, one
# process per peer, uploading ${uploads[*]} chunks per slot each.
#
#   ISP m: LAN ispm-lan = gateway ispm + peers im-1 … (each peer's upload: its link's rate)
#   ispm ── ispn          peering links: inter-ISP traffic (\`peering_delay\`, \`peering_rate\`)
#   ispm ── transit       transit links (\`transit_delay\`, \`transit_rate\`)
#   transit ── cloud      the cloud CDN's link (\`cloud_delay\`, \`cloud_rate\`)
#   transit ── tracker
#
# Every slot (\`slot\`) a peer is idle with probability \`idle\` or plays a chunk of Zipf(\`zipf\`)
# popularity among \`chunks\`, drawn \`lookahead\` slots ahead: one its LRU cache of \`cache\`
# chunks holds is replayed, any other downloaded — from the peer the tracker names or the cloud
# — and a chunk missing when its slot starts is a stall. The tracker dispatches each download
# by \`dispatch\` (local | proportional | optimal: Theorem 2's a*) over the request rates and
# upload it measures. \`--set churn=yes\`: at \`churn_at\` half of ISP 1's peers leave.
#
# \`cdnlab run topologies/hybrid-p2p-cloud.toml --set dispatch=proportional\` (about 75 s);
# \`cdnlab p2p report RUN_DIR…\` sets runs side by side: the cloud's upload from its counters,
# inter-ISP bytes from the peering links' counters, the peers' stalls. Results:
# nodes/cloud/usage.json, nodes/tracker/ (tracker.json, dispatch.csv), each peer's
# summary.json and downloads.csv, links.json. Made by \`scripts/p2p-topology.sh $*\`.
# A peer's upload is fixed here by its link's rate; change \`upload\` (the tracker's U_m) and
# the \`upload_rateM\` together.

name = "p2p"

[vars]
dispatch = "optimal"      # local | proportional | optimal
chunks = "24"             # J
cache = "8"               # B
slot = "500ms"            # one slot plays one chunk
chunk_size = "25000"      # bytes: 400 kbit/s of playback
idle = "0.2"              # π_0
zipf = "0.8"
lookahead = "6"           # slots a download has (3 s)
duration = "60s"
upload = "$upload_list"   # U_m, chunks per slot, per ISP
TOML
for ((m = 1; m <= isps; m++)); do
  printf 'upload_rate%d = "%s"   # U_%d at 400 kbit/s per chunk per slot\n' "$m" "$(kbit "${uploads[m-1]}")" "$m"
done
cat <<TOML
lan_delay = "2ms"
peering_delay = "10ms"
peering_rate = "50mbit"
transit_delay = "10ms"
transit_rate = "100mbit"
cloud_delay = "20ms"
cloud_rate = "50mbit"
churn = "no"              # yes: half of ISP 1's peers leave at churn_at
churn_at = "30s"
seed = "1"

[nodes.tracker]
role = "p2p-tracker"
config = { peers = [$all_peers], peer_isp = [$peer_isp], upload = "\${upload}", gateways = [$gateways], dispatch = "\${dispatch}", chunks = "\${chunks}", cache = "\${cache}", slot = "\${slot}", chunk_size = "\${chunk_size}", seed = "\${seed}" }
ready = { tcp = 80 }

[nodes.cloud]
role = "p2p-cloud"
config = { chunks = "\${chunks}", chunk_size = "\${chunk_size}" }
ready = { tcp = 80 }

[nodes.transit]             # a plain router
TOML
for ((m = 1; m <= isps; m++)); do
  printf '\n[nodes.isp%d]                # ISP %d'"'"'s gateway\n' "$m" "$m"
done
for ((m = 1; m <= isps; m++)); do
  for ((n = 1; n <= peers[m-1]; n++)); do
    cat <<TOML

[nodes.i$m-$n]
role = "p2p-peer"
client = true
config = { chunks = "\${chunks}", cache = "\${cache}", slot = "\${slot}", chunk_size = "\${chunk_size}", idle = "\${idle}", zipf = "\${zipf}", lookahead = "\${lookahead}", duration = "\${duration}", seed = "\${seed}" }
TOML
  done
done
cat <<TOML

[[links]]
endpoints = ["transit", "cloud"]
delay = "\${cloud_delay}"
rate = "\${cloud_rate}"

[[links]]
endpoints = ["transit", "tracker"]
delay = "1ms"
TOML
for ((m = 1; m <= isps; m++)); do
  cat <<TOML

[[links]]                   # ISP $m's transit
endpoints = ["isp$m", "transit"]
delay = "\${transit_delay}"
rate = "\${transit_rate}"
TOML
done
for ((m = 1; m <= isps; m++)); do
  for ((n = m + 1; n <= isps; n++)); do
    cat <<TOML

[[links]]                   # peering: inter-ISP traffic
endpoints = ["isp$m", "isp$n"]
delay = "\${peering_delay}"
rate = "\${peering_rate}"
TOML
  done
done
for ((m = 1; m <= isps; m++)); do
  members="\"isp$m\""
  for ((n = 1; n <= peers[m-1]; n++)); do members+=", \"i$m-$n\""; done
  printf '\n[[lans]]\nname = "isp%d-lan"\nmembers = [%s]\ndelay = "${lan_delay}"\n' "$m" "$members"
  for ((n = 1; n <= peers[m-1]; n++)); do
    printf 'from.i%d-%d = { rate = "${upload_rate%d}" }\n' "$m" "$n" "$m"
  done
done
half=$(( (peers[0] + 1) / 2 ))
for ((n = 1; n <= half; n++)); do
  cat <<TOML

[[timeline]]                # churn: ISP 1's peer leaves
at = "\${churn_at}"
signal = "i1-$n"
only_if = ["\${churn}", "yes"]
TOML
done
