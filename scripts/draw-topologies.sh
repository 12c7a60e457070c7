#!/bin/sh
# Redraws topologies/pictures/NAME.svg from every topologies/NAME.toml with `cdnlab graph`
# (tests/cli.rs fails when a picture differs from what graph draws today).
#
#   scripts/draw-topologies.sh [CDNLAB]     (default: target/release/cdnlab)
set -eu
cd "$(dirname "$0")/.."
cdnlab=${1:-target/release/cdnlab}
mkdir -p topologies/pictures
for topology in topologies/*.toml; do
    name=$(basename "$topology" .toml)
    "$cdnlab" graph "$topology" --out "topologies/pictures/$name.svg"
    echo "topologies/pictures/$name.svg"
done
