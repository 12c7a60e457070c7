#!/usr/bin/env bash
# Runs the README's test command N times back to back and reports each run's wall time and
# result: the evidence that the suite passes every time, not just once.
#
#   scripts/soak-tests.sh [N] [--hog]
#
# N defaults to 5. --hog keeps one core busy with a spinning shell for the whole soak, as a
# second job on a shared 2-core machine would. Each run's output goes to
# target/soak/run-K.log; the summary (one line a run, then a total) is printed and written to
# target/soak/summary.txt. Exits non-zero if any run failed. Needs what the tests need (root,
# Docker for the compose test); run it as CI would: CI=true scripts/soak-tests.sh 5
set -uo pipefail
cd "$(dirname "$0")/.."

runs=5
hog=false
for arg in "$@"; do
  case "$arg" in
    --hog) hog=true ;;
    ''|*[!0-9]*) echo "usage: $0 [N] [--hog]" >&2; exit 2 ;;
    *) runs=$arg ;;
  esac
done
[ "$runs" -ge 1 ] || { echo "$0: N must be at least 1" >&2; exit 2; }

out=target/soak
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"

hog_pid=
stop_hog() { [ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null; hog_pid=; }
trap stop_hog EXIT
trap 'exit 130' INT TERM HUP
if $hog; then
  sh -c 'while :; do :; done' &
  hog_pid=$!
  echo "CPU hog: pid $hog_pid spins on one core for the whole soak" | tee -a "$summary"
fi

# Build first, so every run's wall time is the tests' alone.
cargo nextest run --workspace --release --no-run >/dev/null 2>&1 || {
  echo "$0: the build failed; see: cargo nextest run --workspace --release --no-run" >&2
  exit 1
}

failed=0
for k in $(seq 1 "$runs"); do
  log="$out/run-$k.log"
  start=$(date +%s)
  # The README's test command.
  cargo nextest run --workspace --release >"$log" 2>&1
  status=$?
  seconds=$(( $(date +%s) - start ))
  # nextest's closing line: "Summary [ 512.3s] 457 tests run: 457 passed, 1 skipped".
  counts=$(grep -E '^ *Summary \[' "$log" | tail -n 1 | sed -E 's/^ *Summary \[ *[0-9.]+s\] *//')
  result=pass
  [ "$status" -eq 0 ] || { result="FAIL (exit $status)"; failed=$((failed + 1)); }
  line="run $k/$runs: $result, ${seconds}s wall, ${counts:-no summary line}"
  echo "$line" | tee -a "$summary"
  if [ "$status" -ne 0 ]; then
    grep -E '^ *(FAIL|SIGSEGV|SIGABRT|TIMEOUT) ' "$log" | sed 's/^/    /' | tee -a "$summary"
  fi
done
echo "$((runs - failed)) passed, $failed failed" | tee -a "$summary"
[ "$failed" -eq 0 ]
