#!/usr/bin/env bash
# The dashboard in a real browser against a live daemon: builds web/ if
# needed, starts `tidal serve` (the embedded default, a throwaway store, any
# free port), runs web/tests/dashboard.mjs (Playwright with Debian's
# Chromium) and stops the daemon. Screenshots go to $TIDAL_ARTIFACTS.
# Usage: scripts/browser-test.sh TIDAL_BINARY ARTIFACTS_DIR
# Exit 77 (skipped) without node, npm or /usr/bin/chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
TIDAL=${1:?usage: browser-test.sh TIDAL_BINARY ARTIFACTS_DIR}
ART=${2:?usage: browser-test.sh TIDAL_BINARY ARTIFACTS_DIR}
for need in node npm; do
  command -v "$need" >/dev/null || { echo "skip: $need is not installed"; exit 77; }
done
[[ -x /usr/bin/chromium ]] || { echo "skip: /usr/bin/chromium (Debian's chromium) is not installed"; exit 77; }
scripts/build-web.sh
dir=$(mktemp -d /tmp/tidal-browser.XXXXXX)
pid=""
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
"$TIDAL" serve --store "sqlite:$dir/t.db" --listen 127.0.0.1:0 --admin-token-file "$dir/admin-token" \
  --dashboard web/dist >"$dir/out" 2>"$dir/err" &
pid=$!
url=""
for _ in $(seq 1 300); do
  url=$(sed -n 's/^tidal serve: listening on \(http:[^ ]*\)$/\1/p' "$dir/out" | head -1)
  [[ -n "$url" ]] && break
  kill -0 "$pid" 2>/dev/null || { echo "tidal serve exited:"; cat "$dir/err"; exit 1; }
  sleep 0.1
done
[[ -n "$url" ]] || { echo "tidal serve did not start within 30 s"; cat "$dir/err"; exit 1; }
mkdir -p "$ART"
TIDAL_URL="$url" TIDAL_TOKEN="$(cat "$dir/admin-token")" TIDAL_ARTIFACTS="$ART" node web/tests/dashboard.mjs
