#!/usr/bin/env bash
# Runs one golden-output scenario: run_scenario.sh TIDAL SCENARIO_DIR OUT_DIR
# Set TIDAL_UPDATE_GOLDEN=1 to rewrite expected/ from the current output
# (then review the diff before committing it).
set -euo pipefail
TIDAL=$1 SCENARIO=$2 OUT=$3
export TIDAL SCENARIO OUT
rm -rf "$OUT" && mkdir -p "$OUT"
cd "$SCENARIO"
status=0
bash -c "$(cat command)" >"$OUT/stdout" 2>"$OUT/stderr" || status=$?
expected_status=$(cat expected_status 2>/dev/null || echo 0)
if [[ "$status" != "$expected_status" ]]; then
  echo "scenario $(basename "$SCENARIO"): exit status $status, expected $expected_status"; cat "$OUT/stderr"; exit 1
fi
fail=0
for f in expected/*; do
  name=$(basename "$f")
  if [[ "${TIDAL_UPDATE_GOLDEN:-0}" == 1 ]]; then cp "$OUT/$name" "$f"; continue; fi
  if ! diff -u "$f" "$OUT/$name"; then echo "scenario $(basename "$SCENARIO"): $name differs"; fail=1; fi
done
exit $fail
