#!/usr/bin/env bash
# Load benchmark of `tidal serve` on loopback (docs/server.md, "Load"):
#  1. reads: wrk, 64 connections, 4 paths, while the embedded cluster's
#     scheduling cycles run (the Philly trace at 60x) — once as fast as the
#     machine takes them (wrk and the daemon share its cores), once paced
#     (each connection pauses $TIDAL_DELAY_MS, default 4 ms, between requests:
#     about 11k requests/s);
#  2. durable submissions: wrk POST /v1/jobs, 64 connections (SQLite,
#     synchronous=FULL, group commit).
# Usage: bench/serve/run.sh [BUILD_DIR] [SECONDS] [CONFIG]   (prints one JSON line per phase)
# CONFIG: the daemon's config (default: the embedded default, a full cluster
# with a queue; bench/serve/natural.yaml: the same trace from an empty cluster).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
SECS=${2:-10}
CONFIG=${3:-data/serve/default.yaml}
command -v wrk >/dev/null || { echo "wrk is not installed (scripts/setup.sh installs it)"; exit 2; }
dir=$(mktemp -d /tmp/tidal-load.XXXXXX)
pid=""
cleanup() { if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$dir"; }
trap cleanup EXIT
"$BUILD/tidal" serve --config "$CONFIG" --store "sqlite:$dir/t.db" --listen 127.0.0.1:0 --admin-token-file "$dir/tok" --dashboard "$dir/none" \
  >"$dir/out" 2>"$dir/err" &
pid=$!
url=""
for _ in $(seq 1 300); do
  url=$(sed -n 's/^tidal serve: listening on \(http:[^ ]*\)$/\1/p' "$dir/out" | head -1)
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { cat "$dir/err"; exit 1; }
export TIDAL_TOKEN; TIDAL_TOKEN=$(cat "$dir/tok")
export TIDAL_TENANT; TIDAL_TENANT=$(curl -s -H "Authorization: Bearer $TIDAL_TOKEN" "$url/v1/tenants" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tenants"][0]["name"])')
export TIDAL_JOB; TIDAL_JOB=$(curl -s -H "Authorization: Bearer $TIDAL_TOKEN" -H 'Content-Type: application/json' \
  -d "{\"tenant\": \"$TIDAL_TENANT\", \"gpus\": 1, \"estimated_runtime_s\": 600}" "$url/v1/jobs" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
parse() {  # wrk --latency output -> JSON
  python3 -c '
import re, sys, json
t = sys.stdin.read()
def lat(p):
    m = re.search(r"^\s+" + p + r"%\s+([\d.]+)(us|ms|s)\s*$", t, re.M)
    v, u = float(m.group(1)), m.group(2)
    return v / 1000 if u == "us" else v * 1000 if u == "s" else v
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
extra = {}
m = re.search(r"non-200: (\d+)", t)
if m: extra["non_200"] = int(m.group(1))
m = re.search(r"statuses:(.*)", t)
if m: extra["statuses"] = m.group(1).strip()
m = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
if m: extra["non_2xx"] = int(m.group(1))
print(json.dumps(dict(phase=sys.argv[1], requests_per_s=rps, p50_ms=lat("50"), p99_ms=lat("99"), **extra)))
' "$1"
}
TIDAL_DELAY_MS=0 wrk -t2 -c64 -d"${SECS}s" --latency -s bench/serve/read.lua "$url" | parse reads-saturated
TIDAL_DELAY_MS=${TIDAL_DELAY_MS:-4} wrk -t2 -c64 -d"${SECS}s" --latency -s bench/serve/read.lua "$url" | parse reads-paced
wrk -t2 -c64 -d"${SECS}s" --latency -s bench/serve/submit.lua "$url" | parse submissions
curl -s "$url/metrics" | grep -E '^tidal_(scheduling_batches_total|jobs_submitted_total) '
