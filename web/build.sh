#!/usr/bin/env bash
# Rebuild the page bundle from the lockfile: lint, type-check, build into forge/web/static.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npx eslint .
npx tsc --noEmit
node build.mjs
