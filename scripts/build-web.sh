#!/usr/bin/env bash
# Builds the dashboard (web/ -> web/dist) with the locked npm packages, when
# its sources are newer than the last build. Needs node and npm.
set -euo pipefail
cd "$(dirname "$0")/../web"
if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
stamp=dist/index.html
if [[ ! -f $stamp ]] || [[ -n $(find src index.html package.json vite.config.ts tsconfig.json -newer "$stamp" -print -quit) ]]; then
  npm run build --silent
fi
