#!/usr/bin/env bash
# What the live view costs: runs the README's main job (the interconnected-CDN scenario: three
# clients, 13 links, 26 link directions) N times plain and N times watched, alternately. A
# watched run has `cdnlab web --lab` following it (the same sampler and server `run --web`
# uses, in a process of its own so its CPU can be counted) and one page's worth of feed read by
# curl. Prints a markdown table: the view's CPU (user + system) over its lifetime, the link
# samples it sent per second while the lab was up, and each client's start-up delay and played
# quality, plain against watched.
#   scripts/bench-web.sh [N]        (as root; N defaults to 3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
cdnlab=$(cdnlab_bin)
n=${1:-3}
topology=$here/../topologies/interconnected-cdn.toml
lab=bench-web
port=18080
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run; with "watched", the view follows it. Prints "cpu_s updates_per_s startup… quality…".
one() {
  local mode=$1 out=$work/$1-$2
  "$cdnlab" run "$topology" --name "$lab" --out "$out" --json >"$work/summary.json" 2>"$work/run.log" &
  local run=$!
  local cpu=- rate=-
  if [[ $mode == watched ]]; then
    until "$cdnlab" status "$lab" >/dev/null 2>&1; do sleep 0.05; done
    local started=$SECONDS
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
    rate=$(grep '"kind":"links"' "$work/feed" | sed 's/^data: //' |
      jq -s 'if length > 1 then (length - 1) / (.[-1].time_unix_s - .[0].time_unix_s) * 10 | round / 10 else 0 end')
    cpu="$cpu / ${elapsed}s"
  fi
  wait "$run"
  local startups qualities
  startups=$(jq -r '[.clients[] | .startup_delay_s] | map(. * 1000 | round | tostring + " ms") | join(", ")' "$work/summary.json")
  qualities=$(jq -r '[.clients[] | .avg_quality_mbps] | map(. * 1000 | round / 1000 | tostring) | join(", ")' "$work/summary.json")
  echo "| $mode | $cpu | $rate | $startups | $qualities |"
}

command -v jq >/dev/null || { echo "bench-web.sh needs jq" >&2; exit 1; }
echo "| run | view CPU / lifetime | link updates/s | start-up (upstream-rr, direct-rr, direct-cs) | played Mbit/s (same order) |"
echo "| --- | --- | --- | --- | --- |"
for i in $(seq "$n"); do
  one plain "$i"
  one watched "$i"
done
