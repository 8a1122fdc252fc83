#!/usr/bin/env bash
# The main job on the embedded default: the FGD fill experiment on the openb
# default workload, all six policies, seeds 42-51, tune 1.3. Prints a summary
# table and writes CSVs, report.json and report.html to out/fill (or $1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD=${TIDAL_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target tidal
OUT=${1:-out/fill}
"$BUILD/tidal" sim fill \
  --nodes data/openb/node_list/openb_node_list_gpu_node.csv \
  --pods data/openb/pod_list/openb_pod_list_default.csv \
  --policy all --seeds 42-51 --tune 1.3 --out "$OUT"
echo "open $OUT/report.html in a browser for the plots"
