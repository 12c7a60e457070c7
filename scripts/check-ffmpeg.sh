#!/usr/bin/env bash
# Are the CDN roles' manifests and redirect chains playable by a standard player? Encodes a short
# real video with ffmpeg, serves it from a lab (topologies/ffmpeg-check.toml) and plays every
# policy's manifests with ffmpeg from the client, then checks every segment byte for byte.
set -euo pipefail
usage() {
  cat <<'TXT'
usage: scripts/check-ffmpeg.sh        (as root; needs ffmpeg and curl: apt-get install -y ffmpeg curl)

1. Encodes a 10 s test video (testsrc2 + a 440 Hz tone) with ffmpeg into a media directory laid
   out as the content servers read it (MEDIA/VIDEO/Q/seg-NNNNN.ts, init.mp4, seg-NNNNN.m4s):
   `video`, MPEG-2 TS with H.264 + AAC, and `video-fmp4`, fMP4 with H.264 only; qualities 500k,
   1000k and 2000k (426x240, 640x360, 1280x720 at 0.5, 1 and 2 Mbit/s), 5 segments of 2 s.
2. Brings up topologies/ffmpeg-check.toml with that media_dir: the uCS and two dCSes serve the
   files, the uRR offloads the first 3 chunks to the downstream CDN.
3. From the client, for each policy (upstream-rr, direct-rr, direct-cs) and manifest (HLS master
   playlist; DASH MPD for fMP4), runs
     ffmpeg -xerror -i http://urr/p/POLICY/VIDEO/MANIFEST -map 0 -f null -
   (every rendition, decoded; ffmpeg follows the 302s itself) and requires exit status 0, no
   error-level message and a request for every segment (and init segment) of every rendition.
4. Fetches every segment URL of every media playlist with `curl -L` and compares it with the file.
5. Tears the lab down (also on failure or Ctrl-C) and exits non-zero if anything failed.

Environment: LAB (lab name, default ffmpeg-check), MEDIA_DIR (keep the media there instead of a
temporary directory), CDNLAB (the cdnlab binary; default cdnlab on PATH, else target/release).
TXT
}
[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
[[ $# -eq 0 ]] || { usage >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/lib.sh
source "$here/lib.sh"
cdnlab=$(cdnlab_bin)
topology="$here/../topologies/ffmpeg-check.toml"
lab=${LAB:-ffmpeg-check}
chunks=5
policies=(upstream-rr direct-rr direct-cs)
qualities=("500k 426x240 500k" "1000k 640x360 1000k" "2000k 1280x720 2000k")

[[ $(id -u) -eq 0 ]] || { echo "check-ffmpeg: needs root (cdnlab up creates namespaces)" >&2; exit 2; }
for tool in ffmpeg curl; do
  command -v "$tool" >/dev/null || {
    echo "check-ffmpeg: $tool is missing: apt-get install -y ffmpeg curl" >&2; exit 2; }
done

if [[ -n ${MEDIA_DIR:-} ]]; then
  media=$MEDIA_DIR keep_media=1
  mkdir -p "$media"
else
  media=$(mktemp -d /tmp/cdnlab-ffmpeg-media.XXXXXX) keep_media=0
fi
chmod 755 "$media"
work=$(mktemp -d /tmp/cdnlab-ffmpeg-logs.XXXXXX)
lab_up=0
cleanup() {
  local status=$?
  if [[ $lab_up -eq 1 ]]; then
    "$cdnlab" down "$lab" >/dev/null 2>&1 || "$cdnlab" clean "$lab" >/dev/null 2>&1 || true
  fi
  [[ $keep_media -eq 1 ]] || rm -rf "$media"
  if [[ $status -eq 0 ]]; then rm -rf "$work"; else echo "check-ffmpeg: logs kept in $work" >&2; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- 1. the media -------------------------------------------------------------------------
echo "check-ffmpeg: encoding the test video into $media"
duration=$((chunks * 2))
encode() { # VIDEO KIND(ts|fmp4) QUALITY SIZE BITRATE
  local video=$1 kind=$2 q=$3 size=$4 rate=$5
  local dir="$media/$video/$q" inputs=() audio=() format=()
  mkdir -p "$dir"
  inputs=(-f lavfi -i "testsrc2=size=$size:rate=25:duration=$duration,noise=alls=12:allf=t")
  if [[ $kind == ts ]]; then
    inputs+=(-f lavfi -i "sine=frequency=440:sample_rate=48000:duration=$duration")
    audio=(-c:a aac -b:a 64k)
    format=(-hls_segment_filename "$dir/seg-%05d.ts")
  else
    audio=(-an)
    # The init segment's name is relative to the playlist, so the playlist goes beside it.
    format=(-hls_segment_type fmp4 -hls_fmp4_init_filename init.mp4
            -hls_segment_filename "$dir/seg-%05d.m4s")
  fi
  # A keyframe every 2 s (50 frames at 25 fps) and no scene-cut ones: exactly 2 s segments.
  ffmpeg -hide_banner -nostdin -loglevel error -y "${inputs[@]}" \
    -c:v libx264 -profile:v main -level 3.1 -preset veryfast -pix_fmt yuv420p \
    -b:v "$rate" -maxrate "$rate" -bufsize "$rate" -g 50 -keyint_min 50 -sc_threshold 0 \
    "${audio[@]}" -f hls -hls_time 2 -hls_list_size 0 -hls_playlist_type vod "${format[@]}" \
    "$dir/encoder.m3u8"
  # The uRR writes playlists from its configuration: the files must match it.
  local segments
  segments=$(grep -c '^#EXTINF:2\.000000,' "$dir/encoder.m3u8" || true)
  if [[ $segments -ne $chunks || $(grep -c '^#EXTINF' "$dir/encoder.m3u8") -ne $chunks ]]; then
    echo "check-ffmpeg: $video/$q: the encoder made segments other than $chunks × 2 s:" >&2
    cat "$dir/encoder.m3u8" >&2
    exit 1
  fi
  rm "$dir/encoder.m3u8"
}
for spec in "${qualities[@]}"; do
  read -r q size rate <<<"$spec"
  encode video ts "$q" "$size" "$rate"
  encode video-fmp4 fmp4 "$q" "$size" "$rate"
done
chmod -R a+rX "$media"
for video in video video-fmp4; do
  for spec in "${qualities[@]}"; do
    read -r q _ rate <<<"$spec"
    bytes=$(cat "$media/$video/$q"/seg-* | wc -c)
    echo "  $video/$q: $(find "$media/$video/$q" -type f | wc -l) files, $((bytes * 8 / duration / 1000)) kbit/s (target $rate)"
  done
done

# --- 2. the lab ---------------------------------------------------------------------------
# A lab of that name that is up already is not this script's: `up` refuses it, and it is left
# alone (`cdnlab up` removes what it made if it fails).
"$cdnlab" up "$topology" --name "$lab" --set "media_dir=$media" --set "chunks=$chunks"
lab_up=1
in_client() { "$cdnlab" exec --lab "$lab" client -- "$@"; }

# --- 3. ffmpeg plays every policy -----------------------------------------------------------
failures=0
results=()
for video in video video-fmp4; do
  manifests=(master.m3u8)
  # ffmpeg's DASH demuxer reads ISO BMFF; MPEG-2 TS representations fail in it even from
  # local files, so the TS video is played as HLS only.
  [[ $video == video-fmp4 ]] && manifests+=(manifest.mpd)
  inits=0
  [[ $video == video-fmp4 ]] && inits=${#qualities[@]}
  expected=$((${#qualities[@]} * chunks + inits))
  for manifest in "${manifests[@]}"; do
    for policy in "${policies[@]}"; do
      url="http://urr/p/$policy/$video/$manifest"
      log="$work/ffmpeg-$video-$policy-$manifest.log"
      status=0
      in_client ffmpeg -hide_banner -nostdin -loglevel level+verbose -xerror \
        -i "$url" -map 0 -f null - >"$log" 2>&1 || status=$?
      # HLS logs "Opening 'URL' for reading", DASH "DASH request for url 'URL'": the URL as
      # written in the manifest, before any redirect.
      requested=$(grep -E "(Opening|DASH request for url) '[^']*/(seg-[0-9]+\.(ts|m4s)|init\.mp4)'" "$log" |
        grep -oE "'[^']+'" | sort -u | wc -l)
      # ffmpeg reuses a keep-alive connection only for the host the last answer came from, so
      # after a redirect (or a switch of server) it logs this and opens a new connection.
      reconnects=$(grep -c 'Cannot reuse HTTP connection for different host' "$log" || true)
      errors=$(grep -E '\[(error|fatal|panic)\]' "$log" |
        grep -vc 'Cannot reuse HTTP connection for different host' || true)
      verdict=ok
      if [[ $status -ne 0 || $errors -ne 0 || $requested -ne $expected ]]; then
        verdict=FAILED failures=$((failures + 1))
        echo "check-ffmpeg: $url: exit $status, $errors error(s), $requested of $expected media requests; log $log:" >&2
        grep -E '\[(error|fatal|panic)\]' "$log" | grep -v 'Cannot reuse' | head -5 >&2 || true
      fi
      results+=("| $video | $manifest | $policy | $status | $requested/$expected | $errors | $reconnects | $verdict |")
    done
  done
done

# --- 4. every segment through the redirect chain, byte for byte ------------------------------
# Runs in the client's namespace (node names resolve there); the media directory is the same
# file system. Prints "checked redirects mismatches" per video and policy.
# shellcheck disable=SC2016  # expanded by the bash that runs it in the client
verify='
set -u
media=$1 video=$2 policy=$3; shift 3
checked=0 redirects=0 bad=0
for q in "$@"; do
  playlist=$(curl -sSf "http://urr/p/$policy/$video/$q/playlist.m3u8") || { echo "0 0 1"; exit; }
  urls=$(printf "%s\n" "$playlist" | sed -n -e "s/^#EXT-X-MAP:URI=\"\(.*\)\"$/\1/p;t" -e "/^http/p")
  for url in $urls; do
    path=${url#http://*/}
    n=$(curl -sSfL -o "$TMPDIR/got" -w "%{num_redirects}" "$url") || { bad=$((bad + 1)); continue; }
    cmp -s "$TMPDIR/got" "$media/$path" || { echo "differs: $url" >&2; bad=$((bad + 1)); }
    checked=$((checked + 1)) redirects=$((redirects + n))
  done
done
echo "$checked $redirects $bad"
'
bytes_results=()
for video in video video-fmp4; do
  for policy in "${policies[@]}"; do
    q_ids=()
    for spec in "${qualities[@]}"; do read -r q _ <<<"$spec"; q_ids+=("$q"); done
    read -r checked redirects bad < <(in_client env TMPDIR="$work" bash -c "$verify" verify \
      "$media" "$video" "$policy" "${q_ids[@]}")
    verdict=ok
    if [[ $bad -ne 0 || $checked -eq 0 ]]; then verdict=FAILED failures=$((failures + 1)); fi
    bytes_results+=("| $video | $policy | $checked | $redirects | $bad | $verdict |")
  done
done

echo
echo "ffmpeg $(ffmpeg -version | head -1 | cut -d' ' -f3), lab $lab, $chunks chunks of 2 s, first 3 offloaded downstream"
echo
echo "| video | manifest | policy | ffmpeg exit | media requests | errors | new connections (host changed) | result |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${results[@]}"
echo
echo "| video | policy | media files fetched with curl -L | redirects followed | differing | result |"
echo "| --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${bytes_results[@]}"
echo
if [[ $failures -ne 0 ]]; then
  echo "check-ffmpeg: $failures check(s) FAILED" >&2
  exit 1
fi
echo "check-ffmpeg: every policy played and every segment matched"
