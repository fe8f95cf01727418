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
bash scripts/ensure-sandbox.sh
bash scripts/ensure-oathtool.sh
mkdir -p test-reports
# A suite that dies leaves no report: last run's must not be read in its place (test-summary.mjs).
rm -f test-reports/vitest.json test-reports/vitest-kube.json test-reports/playwright.json

# The type check (~45 s of one core) and lint need nothing else and nothing needs them: they run
# beside the build and the vitest run, whose workers often wait (on timers, child processes),
# and their output follows the vitest run's.
npx tsc -p tsconfig.json >test-reports/typecheck.log 2>&1 &
typecheck=$!
npm run lint --silent >test-reports/lint.log 2>&1 &
lint=$!
echo "== build (the services' compiled tree, which local agents and the CLIs run from, and the web client)"
npm run build --silent
echo "== vitest: unit and integration, security (fuzz, JWT attacks, timing, headers), reliability (concurrency, faults, slow clients)"
vitest_status=0
VITEST_SUITE=all npx vitest run --reporter=default --reporter=json --outputFile.json=test-reports/vitest.json || vitest_status=$?
checks=0
echo "== typecheck (beside the build and vitest)"
wait "$typecheck" || checks=1
cat test-reports/typecheck.log
echo "== lint (Biome: format and rules; dependency-cruiser: import rules)"
wait "$lint" || checks=1
cat test-reports/lint.log
# The Kubernetes suite runs beside Playwright (one browser worker leaves the second core mostly
# free): its control plane and pods wait on each other more than they compute.
echo "== kubernetes: the provisioner against a real control plane (etcd, kube-apiserver, controller manager) and the test kubelet, in a private network namespace (beside the browser suite; its output follows it)"
bash scripts/kube/ensure-control-plane.sh >/dev/null
bash scripts/kube/in-netns.sh env VITEST_SUITE=kube npx vitest run --reporter=default --reporter=json --outputFile.json=test-reports/vitest-kube.json >test-reports/kube.log 2>&1 &
kube=$!
echo "== browser end-to-end (playwright + chromium)"
browser=0
PLAYWRIGHT_JSON_OUTPUT_NAME=test-reports/playwright.json npx playwright test --reporter=list,json || browser=$?
echo "== kubernetes suite output"
kube_status=0
wait "$kube" || kube_status=$?
cat test-reports/kube.log
node scripts/test-summary.mjs test-reports/vitest.json test-reports/vitest-kube.json test-reports/playwright.json
# A suite that died without a report fails the run too, and so do the type check and lint.
[ "$vitest_status" -eq 0 ] && [ "$browser" -eq 0 ] && [ "$kube_status" -eq 0 ] && [ "$checks" -eq 0 ]
