#!/usr/bin/env bash
# Build the cdnlab container image FROM scratch, out of this machine's files: no registry needed.
set -euo pipefail
usage() {
  cat <<'TXT'
usage: scripts/build-image.sh [--bin-dir DIR] [--tag TAG]

Builds the release binaries (cargo build --release) unless --bin-dir names a directory that
holds them already, gathers them with the shared libraries they need and the link-emulation
tools (ip and tc from iproute2, iptables-legacy from iptables) into target/image/rootfs, and
builds the image TAG (default cdnlab:latest) from docker/Dockerfile. docker-compose.yml runs it.
TXT
}
root=$(cd "$(dirname "$0")/.." && pwd)
bin_dir="" tag=cdnlab:latest
while [[ $# -gt 0 ]]; do
  case $1 in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-image.sh: unexpected argument \`$1\`" >&2; usage >&2; exit 2 ;;
  esac
done
if [[ -z $bin_dir ]]; then
  (cd "$root" && cargo build --release --workspace)
  bin_dir=$root/target/release
fi
binaries=(cdnlab cdnlab-shaper probe has-client ucs dcs urr drr cloud fdn fog-viewers icn-router icn-border cdn-site controller icn-load farm-server farm-dispatcher farm-datacenter farm-load p2p-tracker p2p-peer p2p-cloud)
tools=(/usr/sbin/ip /usr/sbin/tc /usr/sbin/xtables-legacy-multi)
for b in "${binaries[@]}"; do
  [[ -x $bin_dir/$b ]] || { echo "build-image.sh: $bin_dir/$b is missing (cargo build --release --workspace)" >&2; exit 1; }
done
for t in "${tools[@]}"; do
  [[ -x $t ]] || { echo "build-image.sh: $t is missing (apt-get install iproute2 iptables)" >&2; exit 1; }
done
command -v docker >/dev/null || { echo "build-image.sh: docker is not installed" >&2; exit 1; }

context=$root/target/image
rootfs=$context/rootfs
rm -rf "$context"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/usr/sbin" "$rootfs/etc" "$rootfs/tmp" "$rootfs/run" "$rootfs/results" "$rootfs/certs"
chmod 1777 "$rootfs/tmp"
for b in "${binaries[@]}"; do
  # Debug info stays in target/; the image needs only the code.
  strip -o "$rootfs/usr/local/bin/$b" "$bin_dir/$b"
done
for t in "${tools[@]}"; do cp "$t" "$rootfs/usr/sbin/"; done
for name in iptables-legacy iptables-legacy-restore iptables-legacy-save; do
  ln -s xtables-legacy-multi "$rootfs/usr/sbin/$name"
done
xtables=/usr/lib/x86_64-linux-gnu/xtables
[[ -d $xtables ]] || xtables=$(dirname "$(find /usr/lib -name libxt_NFQUEUE.so -print -quit)")
mkdir -p "$rootfs$xtables"
cp "$xtables"/libxt_*.so "$xtables"/libipt_*.so "$rootfs$xtables/"
if [[ -d /usr/lib/tc ]]; then   # tc's delay distribution tables
  mkdir -p "$rootfs/usr/lib/tc" && cp /usr/lib/tc/*.dist "$rootfs/usr/lib/tc/"
fi
# Every shared library any of them loads, at the path the loader looks for it.
elves=("$rootfs"/usr/local/bin/* "$rootfs"/usr/sbin/ip "$rootfs"/usr/sbin/tc "$rootfs"/usr/sbin/xtables-legacy-multi "$rootfs$xtables"/*.so)
ldd "${elves[@]}" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' |
  sort -u | while read -r lib; do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
# Names from /etc/hosts (compose's extra_hosts) before DNS.
echo 'hosts: files dns' > "$rootfs/etc/nsswitch.conf"
echo 'root:x:0:0:root:/:/usr/local/bin/cdnlab' > "$rootfs/etc/passwd"
cp "$root/docker/Dockerfile" "$context/Dockerfile"
echo "build-image.sh: $(du -sh "$rootfs" | cut -f1) in $rootfs; building $tag"
docker build --quiet --tag "$tag" "$context"
