#!/usr/bin/env bash
# The main job on the embedded default.
#
#   scripts/run.sh            build tidal and the dashboard, then start `tidal serve`
#                             on the embedded simulated cluster (data/serve/default.yaml:
#                             1,016 H100, the Philly trace at 60x); prints the dashboard URL
#   scripts/run.sh fill [OUT] the FGD fill experiment on the openb default workload (all six
#                             policies, seeds 42-51, tune 1.3) -> out/fill/report.html
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD=${TIDAL_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target tidal
if [[ "${1:-serve}" == "fill" ]]; then
  OUT=${2:-out/fill}
  "$BUILD/tidal" sim fill \
    --nodes data/openb/node_list/openb_node_list_gpu_node.csv \
    --pods data/openb/pod_list/openb_pod_list_default.csv \
    --policy all --seeds 42-51 --tune 1.3 --out "$OUT"
  echo "open $OUT/report.html in a browser for the plots"
  exit 0
fi
if command -v npm >/dev/null; then
  scripts/build-web.sh
else
  echo "run: npm is not installed; the daemon serves the API without the dashboard" >&2
fi
exec "$BUILD/tidal" serve --listen "${TIDAL_LISTEN:-127.0.0.1:8080}" --dashboard web/dist
