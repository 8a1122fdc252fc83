#!/usr/bin/env bash
# Builds tidal and runs every test (unit, property, reader, scenario, fidelity).
# Usage: scripts/test.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD=${TIDAL_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=${TIDAL_BUILD_TYPE:-Release} >/dev/null
cmake --build "$BUILD" -j "$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" "$@"
