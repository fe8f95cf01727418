// The end of `npm test`: the ten slowest test files of the whole run (vitest, the kube suite and
// Playwright, so the next slow file is seen at once; docs/development.md, "The test run's
// budget"), then each failed test by file and name, then one closing line for the whole run
// ("N passed, N failed, N skipped"), from their JSON reports. The failures come last because a
// CI log is often read from its tail: the test that broke a run is named there, whichever suite
// printed it thousands of lines earlier. A report that is missing or unreadable (its suite died)
// is a failure of its own.
import { readFileSync } from 'node:fs';
import path from 'node:path';

let passed = 0;
let failed = 0;
let skipped = 0;
/** [seconds, file] of every test file in every report. */
const files = [];
/** `file › test` of every failed test, and every report that could not be read. */
const failures = [];

/** A Playwright suite's tests, its nested suites' included: the time its results took. */
function playwrightSeconds(suite) {
  let ms = 0;
  for (const spec of suite.specs ?? []) for (const test of spec.tests) for (const result of test.results) ms += result.duration;
  for (const inner of suite.suites ?? []) ms += playwrightSeconds(inner);
  return ms / 1000;
}

/** A Playwright suite's failed tests (retries included: the last result decides). */
function playwrightFailures(suite, file) {
  for (const spec of suite.specs ?? [])
    for (const test of spec.tests)
      if (test.status === 'unexpected') failures.push(`${file}:${spec.line} › ${spec.title}${test.projectName ? ` [${test.projectName}]` : ''}`);
  for (const inner of suite.suites ?? []) playwrightFailures(inner, file);
}

for (const file of process.argv.slice(2)) {
  let report;
  try {
    report = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    failures.push(`${file}: no report (${error.code ?? error.message}): its suite did not finish`);
    continue;
  }
  if ('numPassedTests' in report) {
    passed += report.numPassedTests;
    failed += report.numFailedTests;
    skipped += report.numPendingTests + report.numTodoTests;
    // A file's wall time in its worker, from its start to its last test's end.
    for (const result of report.testResults) {
      const name = path.relative(process.cwd(), result.name);
      files.push([(result.endTime - result.startTime) / 1000, name]);
      for (const test of result.assertionResults) if (test.status === 'failed') failures.push(`${name} › ${test.fullName}`);
      // A file that failed outside any test (an import error, a hook) has no failed test to name.
      if (result.status === 'failed' && !result.assertionResults.some((test) => test.status === 'failed'))
        failures.push(`${name}: ${result.message.split('\n')[0] || 'failed outside its tests'}`);
    }
  } else if (report.stats) {
    passed += report.stats.expected + report.stats.flaky;
    failed += report.stats.unexpected;
    skipped += report.stats.skipped;
    const testDir = path.relative(process.cwd(), report.config?.rootDir ?? 'e2e');
    // Errors outside any test (global setup, the config) fail the run with no test to name.
    for (const error of report.errors ?? []) failures.push(`${testDir}: ${(error.message ?? 'an error outside the tests').split('\n')[0]}`);
    for (const suite of report.suites) {
      files.push([playwrightSeconds(suite), path.join(testDir, suite.file)]);
      playwrightFailures(suite, path.join(testDir, suite.file));
    }
  }
}

console.log('slowest test files (seconds):');
for (const [seconds, file] of files.sort((a, b) => b[0] - a[0]).slice(0, 10)) console.log(`${seconds.toFixed(1).padStart(8)}  ${file}`);
if (failures.length) console.log(`failed:\n${failures.map((f) => `  ${f}`).join('\n')}`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || failures.length > 0 ? 1 : 0);
