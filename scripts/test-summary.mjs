// The end of `npm test`: the ten slowest test files of the whole run (vitest, the kube suite and
// Playwright, so the next slow file is seen at once; docs/development.md, "The test run's
// budget"), then one closing line for the whole run ("N passed, N failed, N skipped"), from
// their JSON reports.
import { readFileSync } from 'node:fs';
import path from 'node:path';

let passed = 0;
let failed = 0;
let skipped = 0;
/** [seconds, file] of every test file in every report. */
const files = [];

/** A Playwright suite's tests, its nested suites' included: the time its results took. */
function playwrightSeconds(suite) {
  let ms = 0;
  for (const spec of suite.specs ?? []) for (const test of spec.tests) for (const result of test.results) ms += result.duration;
  for (const inner of suite.suites ?? []) ms += playwrightSeconds(inner);
  return ms / 1000;
}

for (const file of process.argv.slice(2)) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  if ('numPassedTests' in report) {
    passed += report.numPassedTests;
    failed += report.numFailedTests;
    skipped += report.numPendingTests + report.numTodoTests;
    // A file's wall time in its worker, from its start to its last test's end.
    for (const result of report.testResults) files.push([(result.endTime - result.startTime) / 1000, path.relative(process.cwd(), result.name)]);
  } else if (report.stats) {
    passed += report.stats.expected + report.stats.flaky;
    failed += report.stats.unexpected;
    skipped += report.stats.skipped;
    const testDir = path.relative(process.cwd(), report.config?.rootDir ?? 'e2e');
    for (const suite of report.suites) files.push([playwrightSeconds(suite), path.join(testDir, suite.file)]);
  }
}

console.log('slowest test files (seconds):');
for (const [seconds, file] of files.sort((a, b) => b[0] - a[0]).slice(0, 10)) console.log(`${seconds.toFixed(1).padStart(8)}  ${file}`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 ? 1 : 0);
