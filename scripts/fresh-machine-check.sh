#!/usr/bin/env bash
# Tries the README's two quick-start commands on a fresh Debian 12 that has only a Rust
# toolchain and root: a minimal root filesystem made by debootstrap from Debian's packages,
# imported as a Docker image, run as a container with the capabilities a lab uses (namespaces,
# links, NFQUEUE rules, raw sockets for ping, the shaper's real-time priority, a writable
# /proc/sys for forwarding) with
# this machine's stable Rust toolchain mounted read-only and a fresh clone of this repository.
# Nothing else is installed in it beforehand: the commands install what they need. There is no
# Docker engine inside, so the tests that need one are reported as skipped.
#
#   scripts/fresh-machine-check.sh [WORK_DIR]      (as root; needs debootstrap, git and Docker)
#
# WORK_DIR (default /var/lib/cdnlab-fresh) keeps the root filesystem between tries; the clone,
# the container and the image are made anew each time and removed at the end. The transcript
# goes to WORK_DIR/transcript.log. Root runs what WORK_DIR holds with the capabilities below,
# so it and every directory above it must be root's and writable by no one else (a directory
# with the sticky bit, like /tmp, excepted above it).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/var/lib/cdnlab-fresh}
toolchain=$(rustc --print sysroot)
image=cdnlab-fresh:bookworm
name=cdnlab-fresh-check

mkdir -p -m 0700 "$work"
work=$(realpath "$work")
dir=$work
while :; do
  read -r owner mode < <(stat -c '%u %a' "$dir")
  # Writable by its group or others, and (but for WORK_DIR itself) without the sticky bit.
  if [ "$owner" != 0 ] || { (( 8#$mode & 8#022 )) && { [ "$dir" = "$work" ] || ! (( 8#$mode & 8#1000 )); }; }; then
    echo "fresh-machine-check: $dir is not root's alone (owner uid $owner, mode $mode): another user could change what root runs from $work" >&2
    exit 2
  fi
  [ "$dir" = / ] && break
  dir=$(dirname "$dir")
done
if [ ! -x "$work/rootfs/bin/bash" ]; then
  debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian
fi
rm -rf "$work/cdnlab"
git clone -q "$repo" "$work/cdnlab"

cleanup() {
  docker rm -f "$name" >/dev/null 2>&1 || true
  docker rmi "$image" >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup
tar -C "$work/rootfs" -c . | docker import - "$image" >/dev/null

# The README's commands, as a new user types them; cargo's home (crates, cargo-nextest) is the
# container's own.
commands='
cd /cdnlab || exit
scripts/setup.sh && cargo build --release && ./target/release/cdnlab run topologies/interconnected-cdn.toml || exit
scripts/setup.sh --tests && cargo nextest run --workspace --release
'
# The CA certificates this machine adds to Debian's (a TLS-inspecting proxy's, say) go in too, so
# the container reaches crates.io where this machine does; ca-certificates, which setup.sh
# installs, takes them into its bundle.
local_cas=()
if [ -d /usr/local/share/ca-certificates ]; then
  local_cas=(-v /usr/local/share/ca-certificates:/usr/local/share/ca-certificates:ro)
fi
# Not --privileged: some engines (this project's CI machines among them) cannot apply all
# capabilities; these are the ones a lab needs.
docker run --name "$name" \
  --cap-add SYS_ADMIN --cap-add NET_ADMIN --cap-add NET_RAW --cap-add SYS_NICE \
  --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
  --security-opt systempaths=unconfined \
  -v "$toolchain:/opt/rust:ro" -v "$work/cdnlab:/cdnlab" "${local_cas[@]}" \
  -e PATH=/root/.cargo/bin:/opt/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  -e CARGO_HOME=/root/.cargo -e HOME=/root \
  "$image" bash -c "$commands" 2>&1 | tee "$work/transcript.log"
exit "${PIPESTATUS[0]}"
