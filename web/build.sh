#!/usr/bin/env bash
# Rebuild the page bundle and the terminal's screen model from the lockfile: lint, type-check,
# build into forge/web/static and forge/workers/terminal/screen_model.cjs.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npx eslint .
npx tsc --noEmit
npx tsc --noEmit -p screen
node build.mjs
