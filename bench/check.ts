/**
 * `npm run bench:check`: the guard against the next regression on the hot paths. The peer rounds of
 * `npm run bench` (bench/peer.ts: this service, Better Auth and the baseline commit side by side)
 * at a smaller size — 3 s per side, path and round (three 1 s turns), 3 rounds, no ceilings:
 * about 2–3 minutes — and a non-zero exit
 * when any round misses a goal of PEER_GOALS. Run it before merging a change that touches a hot
 * path (docs/performance.md). Timings do not belong in `npm test`, so it is not part of it; its
 * latest result, with the machine's load during each run, is written to bench/results/check.json.
 * BENCH_SECONDS and BENCH_ROUNDS change the size.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { postgresReachable } from '../test/support/postgres.js';
import { root, writeResults } from './lib/harness.js';
import { missedGoals, peerComparison, printPeerTables } from './peer.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const started = performance.now();
const usePostgres = await postgresReachable();
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
console.log(
  `npm run bench:check at ${commit}: ${ROUNDS} rounds of ${SECONDS} s runs on ${usePostgres ? 'PostgreSQL' : 'PGlite'}, load average ${loadavg()[0]!.toFixed(1)}`,
);
const loadBefore = loadavg()[0]!;
const peer = await peerComparison({ seconds: SECONDS, rounds: ROUNDS, usePostgres, ceilings: false, runId: Date.now().toString(36) });
printPeerTables(peer, { seconds: SECONDS, rounds: ROUNDS, usePostgres });
const missed = missedGoals(peer);
const seconds = Math.round((performance.now() - started) / 1000);
await writeResults('check.json', {
  date: new Date().toISOString(),
  commit,
  passed: missed.length === 0,
  missed,
  store: usePostgres ? 'postgres' : 'pglite',
  secondsPerRun: SECONDS,
  rounds: ROUNDS,
  cores: cpus().length,
  node: process.version,
  loadAverage: { before: Math.round(loadBefore * 10) / 10, after: Math.round(loadavg()[0]! * 10) / 10 },
  tookSeconds: seconds,
  peer,
});
console.log(`\n${missed.length ? `MISSED:\n  ${missed.join('\n  ')}` : 'every goal met in every round'} (${seconds} s; written: bench/results/check.json)`);
process.exit(missed.length ? 1 : 0);
