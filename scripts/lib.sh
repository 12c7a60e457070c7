# Shared by the scripts: which cdnlab binary to run.
cdnlab_bin() {
  if [[ -n ${CDNLAB:-} ]]; then echo "$CDNLAB"; return; fi
  if command -v cdnlab >/dev/null 2>&1; then command -v cdnlab; return; fi
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  for profile in release debug; do
    if [[ -x $root/target/$profile/cdnlab ]]; then echo "$root/target/$profile/cdnlab"; return; fi
  done
  echo "cdnlab is not built: run cargo build --release (or set CDNLAB)" >&2
  exit 1
}
