#!/usr/bin/env bash
# `npm test`: installs what is missing, then type-checks and runs every suite.
# PostgreSQL (TEST_DATABASE_URL, or 127.0.0.1:5432) and Redis (127.0.0.1:6379) are used when
# they are reachable, in addition to the embedded stores.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci
fi
bash scripts/ensure-chromium.sh

echo "== typecheck"
npx tsc -p tsconfig.json
echo "== unit and integration (vitest)"
npx vitest run
echo "== browser end-to-end (playwright + chromium)"
npx playwright test
