#!/usr/bin/env bash
# Print the adaptive-replication farm topology with SERVERS content servers;
# topologies/adaptive-replication.toml is its output for 32.
set -euo pipefail
usage() {
  cat <<'TXT'
usage: scripts/farm-topology.sh SERVERS [NAME]

Prints, on stdout, the replicating server farm of papers/004 on real processes: SERVERS
`farm-server` nodes s1…sN on one LAN with the router `edge`, the `farm-dispatcher`, the
`farm-datacenter` behind a WAN link, and the `farm-load` client. Every other parameter is a
variable of the file (`--set scheme=lrl-virtual`, `--set slots=6`, …); the server count is
fixed by the nodes, so a farm of another size is another file:

  scripts/farm-topology.sh 32 > topologies/adaptive-replication.toml
  scripts/farm-topology.sh 24 farm24 > /tmp/farm24.toml
TXT
}
[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
[[ $# -eq 1 || $# -eq 2 ]] || { usage >&2; exit 2; }
if ! [[ $1 =~ ^[1-9][0-9]{0,2}$ ]] || (( $1 > 200 )); then
  echo "SERVERS must be a whole number from 1 to 200, not \`$1\`" >&2
  exit 2
fi
servers=$1
name=${2:-replication}
if ! [[ $name =~ ^[a-z][a-z0-9-]{0,19}$ ]]; then
  echo "NAME \`$name\` is not a lab name (1 to 20 lowercase letters, digits and -, starting with a letter)" >&2
  exit 2
fi
list=$(for ((s = 1; s <= servers; s++)); do printf '"s%d", ' "$s"; done)
list=${list%, }

cat <<TOML
# Adaptive replication in a server farm (papers/004) on real processes, scaled down to run on
# two cores: $servers servers of \`slots\` contents each, serving one transfer at a time.
#
#   load ── edge ── dispatcher            (links, \`lan_delay\`)
#            ├── LAN farm: s1 … s$servers        (\`lan_delay\`, \`server_rate\` each way)
#            └── datacenter                (the WAN: \`wan_delay\`, \`wan_rate\`)
#
# The load sends Poisson requests (rate ρ·m per mean service time) for Zipf(\`alpha\`)-popular
# contents to the dispatcher, which redirects each to an idle server storing it or, when none
# is, to the data center (a loss). A transfer lasts a service time drawn i.i.d. from Exp(mean
# \`service\`), its bytes paced over it. \`scheme\` is the replication: proportional or optimized
# (static), or an adaptive scheme from proportional (random, lrl, lfl, and each with
# \`-virtual\`), whose replacements are real copies: from the data center after a loss, from a
# server after a virtual loss. At \`change_at\` the timeline signals the load, which changes the
# popularity as \`change\` says (reverse: the least popular contents become the most popular).
#
# \`cdnlab run topologies/adaptive-replication.toml\` (about 75 s); \`--set scheme=lrl-virtual\`.
# Results: nodes/dispatcher/ (farm.json, samples.csv, loss.svg, replicas.svg, datacenter.svg)
# and nodes/load/ (summary.json, requests.csv). Made by \`scripts/farm-topology.sh $*\`.

name = "$name"

[vars]
scheme = "proportional"   # proportional | optimized | random | lrl | lfl | random-virtual | lrl-virtual | lfl-virtual
contents = "50"           # n
slots = "8"               # d: contents per server (m·d ≥ n, d ≤ n)
alpha = "0.8"             # Zipf exponent
rho = "0.6"               # load Σλ_c / m, below 1
service = "250ms"         # mean service time: the model's time unit
object_size = "20000"     # bytes per content
duration = "60s"          # how long the load sends requests
change = "reverse"        # at change_at: reverse | shift:K | none
change_at = "30s"
lan_delay = "1ms"
server_rate = "100mbit"
wan_delay = "20ms"
wan_rate = "50mbit"
sample_every = "2s"
seed = "1"

[nodes.load]
role = "farm-load"
client = true
config = { dispatcher = "dispatcher", servers = "$servers", contents = "\${contents}", alpha = "\${alpha}", rho = "\${rho}", service = "\${service}", object_size = "\${object_size}", duration = "\${duration}", change = "\${change}", seed = "\${seed}" }

[nodes.edge]                # a plain router

[nodes.dispatcher]
role = "farm-dispatcher"
config = { servers = [$list], datacenter = "datacenter", slots = "\${slots}", contents = "\${contents}", alpha = "\${alpha}", rho = "\${rho}", service = "\${service}", object_size = "\${object_size}", scheme = "\${scheme}", sample_every = "\${sample_every}", seed = "\${seed}" }
ready = { tcp = 80 }        # once every server holds its initial contents
ready_timeout = "120s"

[nodes.datacenter]
role = "farm-datacenter"
config = { contents = "\${contents}", object_size = "\${object_size}" }
ready = { tcp = 80 }
TOML
for ((s = 1; s <= servers; s++)); do
  cat <<TOML

[nodes.s$s]
role = "farm-server"
config = { slots = "\${slots}", service = "\${service}", object_size = "\${object_size}", seed = "\${seed}" }
ready = { tcp = 80 }
TOML
done
members=$(for ((s = 1; s <= servers; s++)); do printf ', "s%d"' "$s"; done)
cat <<TOML

[[links]]
endpoints = ["load", "edge"]
delay = "\${lan_delay}"

[[links]]
endpoints = ["edge", "dispatcher"]
delay = "\${lan_delay}"

[[links]]                   # the WAN
endpoints = ["edge", "datacenter"]
delay = "\${wan_delay}"
rate = "\${wan_rate}"

[[lans]]
name = "farm"
members = ["edge"$members]
delay = "\${lan_delay}"
rate = "\${server_rate}"

[[timeline]]                # the popularity change
at = "\${change_at}"
signal = "load"
TOML
