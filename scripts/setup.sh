#!/usr/bin/env bash
# Installs every build and test dependency tidal needs, from Debian packages only.
# Idempotent: packages already present are skipped, so it is cheap to run each time.
set -euo pipefail

PKGS=(
  g++ cmake ninja-build ccache pkg-config
  libfmt-dev libspdlog-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  libsqlite3-dev libpqxx-dev postgresql
  libcpp-httplib-dev libssl-dev
  # tests and benchmarks of `tidal serve`: promtool (Prometheus' parser),
  # Chromium for the dashboard's browser test, wrk for the load benchmark
  prometheus chromium wrk
  # the Slurm binder's tests run a real Slurm on loopback (scripts/slurm-dev.sh)
  slurm-wlm munge
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
