#!/usr/bin/env bash
# Installs what cdnlab needs on Debian or Ubuntu, and only what is missing, so it can run before
# every build (the README's quick start does): CA certificates (cargo fetches crates over
# HTTPS), a C compiler and libc headers (the `ring` crate compiles C), iproute2 (ip, tc),
# iptables (iptables-legacy: the userspace link backend's NFQUEUE rules) and procps. With
# --tests, also what the tests use: iputils-ping, util-linux (setpriv), binutils (strip, for the
# container image), tcpdump (reads `cdnlab capture`'s files), chromium and chromium-driver (the
# live view's browser test; Debian's packages) and cargo-nextest (built from crates.io). Rust itself comes from rustup (https://rustup.rs) and must be there already.
# Docker is not installed: the tests that need it are reported as skipped without an engine.
#
#   scripts/setup.sh [--tests]          (as root)
set -euo pipefail

tests=no
case "${1:-}" in
  "") ;;
  --tests) tests=yes ;;
  *) echo "usage: scripts/setup.sh [--tests]" >&2; exit 2 ;;
esac

if [ "$(id -u)" != 0 ]; then
  echo "scripts/setup.sh: run it as root (cdnlab makes network namespaces, and this installs packages)" >&2
  exit 1
fi
if ! command -v cargo >/dev/null; then
  echo "scripts/setup.sh: no cargo on PATH; install Rust with rustup (https://rustup.rs) first" >&2
  exit 1
fi

packages=(ca-certificates gcc libc6-dev iproute2 iptables procps)
if [ "$tests" = yes ]; then
  packages+=(iputils-ping util-linux binutils tcpdump chromium chromium-driver)
fi
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$tests" = yes ] && ! cargo nextest --version >/dev/null 2>&1; then
  echo "installing: cargo-nextest (from crates.io; a few minutes)" >&2
  cargo install --locked cargo-nextest
fi
