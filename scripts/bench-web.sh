#!/usr/bin/env bash
# What the live view costs: runs a scenario N times plain and N times watched, alternately. A
# watched run has `cdnlab web --lab` following it (the same sampler and server `run --web`
# uses, in a process of its own so its CPU can be counted) and one page's worth of feed read by
# curl. Prints a markdown table: the view's CPU (user + system) over its lifetime, the link
# samples it sent per second while the lab was up, and the clients' own numbers, plain against
# watched. Scenarios:
#   has  the README's main job (interconnected CDNs: three clients, 13 links, 26 directions);
#        each client's start-up delay and played quality
#   icn  the ICN scenario for 30 s (four regions, 17 links, 34 directions, the controller):
#        the view also reads every request's row and the controller's periods; each region's
#        mean latency, and the ICN messages (`latency`, `controller_*`) it sent per second
#   scripts/bench-web.sh [N] [has|icn]        (as root; N defaults to 3, the scenario to has)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
cdnlab=$(cdnlab_bin)
n=${1:-3}
scenario=${2:-has}
case $scenario in
  has)
    run_args=("$here/../topologies/interconnected-cdn.toml")
    header="| run | view CPU / lifetime | link updates/s | start-up (upstream-rr, direct-rr, direct-cs) | played Mbit/s (same order) |"
    ;;
  icn)
    run_args=("$here/../topologies/icn-telco-cdn.toml" --set duration=30s)
    header="| run | view CPU / lifetime | link updates/s | ICN messages/s | mean latency, ms (r1, r2, r3, r4) | requests (same order) |"
    ;;
  *) echo "bench-web.sh: unknown scenario $scenario (has or icn)" >&2; exit 2 ;;
esac
lab=bench-web
port=18080
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Messages of `kind` (a regular expression) per second in the feed, by their own timestamps.
per_second() {
  grep -E "\"kind\":\"($1)\"" "$work/feed" | sed 's/^data: //' |
    jq -s 'if length > 1 then (length - 1) / (.[-1].time_unix_s - .[0].time_unix_s) * 10 | round / 10 else 0 end'
}

# One run; with "watched", the view follows it. Prints a row of the table.
one() {
  local mode=$1 out=$work/$1-$2
  "$cdnlab" run "${run_args[@]}" --name "$lab" --out "$out" --json >"$work/summary.json" 2>"$work/run.log" &
  local run=$!
  local cpu=- rate=- icn_rate=-
  if [[ $mode == watched ]]; then
    until "$cdnlab" status "$lab" >/dev/null 2>&1; do sleep 0.05; done
    /usr/bin/time -f '%U %S %e' -o "$work/time" \
      "$cdnlab" web --lab "$lab" --listen "127.0.0.1:$port" >/dev/null 2>&1 &
    local web=$!
    until curl -s -o /dev/null "http://127.0.0.1:$port/"; do sleep 0.05; done
    curl -sN "http://127.0.0.1:$port/feed" >"$work/feed" 2>/dev/null &
    local reader=$!
    wait "$web" || true
    kill "$reader" 2>/dev/null || true
    read -r user sys elapsed <"$work/time"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    # Link samples per second while the lab was up: from their own timestamps.
    rate=$(per_second links)
    icn_rate=$(per_second 'latency|controller_tick|controller_period')
    cpu="$cpu / ${elapsed}s"
  fi
  wait "$run"
  case $scenario in
    has)
      local startups qualities
      startups=$(jq -r '[.clients[] | .startup_delay_s] | map(. * 1000 | round | tostring + " ms") | join(", ")' "$work/summary.json")
      qualities=$(jq -r '[.clients[] | .avg_quality_mbps] | map(. * 1000 | round / 1000 | tostring) | join(", ")' "$work/summary.json")
      echo "| $mode | $cpu | $rate | $startups | $qualities |"
      ;;
    icn)
      local latencies requests
      latencies=$(jq -r '[.clients[] | .mean_latency_s] | map(. * 10000 | round / 10 | tostring) | join(", ")' "$work/summary.json")
      requests=$(jq -r '[.clients[] | .requests] | map(tostring) | join(", ")' "$work/summary.json")
      echo "| $mode | $cpu | $rate | $icn_rate | $latencies | $requests |"
      ;;
  esac
}

command -v jq >/dev/null || { echo "bench-web.sh needs jq" >&2; exit 1; }
echo "$header"
echo "| --- | --- | --- | --- | --- |$([[ $scenario == icn ]] && echo ' --- |')"
for i in $(seq "$n"); do
  one plain "$i"
  one watched "$i"
done
