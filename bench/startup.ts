/**
 * `npm run bench:startup`: what a new user waits for, side by side in alternating rounds (medians
 * printed, the load average at start and end beside them): the compiled build (the agent: its
 * bundle), the baseline's build (AGENT_BASELINE, before the bundle: bench/lib/baseline.ts) and
 * the TypeScript sources through tsx.
 * - an agent's cold start, standalone (no sandbox): spawn → first `/health` answer on a fresh
 *   workspace (its store installed), COLD_SAMPLES per side and round, with the CPU time the
 *   process used until then, which a loaded machine stretches far less than the wall time (the
 *   ratio to the baseline is the figure to trust there), and its RSS. Goal: ≤ 300 ms median;
 * - a new user's first reply: the account service running, a guest signs in and sends its first
 *   message through the proxy; time from the message to the first chat event, which includes
 *   starting the user's agent, sandboxed (the scripted model answers at once). Goal: ≤ 1.5 s.
 * The account service starts its agents from the build when there is a current one: for the tsx
 * rows the bench moves dist/ aside, so those agents run from sources too.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startScriptedModel } from '../test/support/scripted-model.js';
import { freePort } from '../server/common/net.js';
import { buildIfStale } from '../scripts/build.js';
import { AGENT_BASELINE, baselineTree, shortCommit } from './lib/baseline.js';
import { agentScript, cpuMsOf, loadAverage, median, root, rssOf, stop, table, waitForHttp, writeResults } from './lib/harness.js';

const DIST = path.join(root, 'dist');
const DIST_ASIDE = path.join(root, 'dist.bench-aside');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (process.env.BENCH_QUICK === '1' ? 3 : 5));
const COLD_SAMPLES = 3;
const COLD_START_GOAL_MS = 300;
const MODES = ['baseline', 'bundle', 'tsx'] as const;
type Mode = (typeof MODES)[number];

const baselineDir = await baselineTree(AGENT_BASELINE, { build: true });
const entry = (mode: Mode, service: 'agent' | 'account') => {
  if (mode === 'tsx') return ['--import', 'tsx', path.join(root, `server/${service}/main.ts`)];
  const tree = mode === 'baseline' ? baselineDir : root;
  return [service === 'agent' ? agentScript(tree) : path.join(tree, 'dist/server/account/main.js')];
};

async function agentColdStart(mode: Mode): Promise<{ ms: number; cpuMs: number; rssMb: number }> {
  const workspace = await mkdtemp(path.join(tmpdir(), 'bench-start-'));
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, entry(mode, 'agent'), {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', AGENT_PORT: String(port), AGENT_SECRET: 'bench-secret-0123456789', AGENT_WORKSPACE: workspace, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  await waitForHttp(`http://127.0.0.1:${port}/health`, 30_000, 5);
  const ms = performance.now() - started;
  const cpuMs = await cpuMsOf(child.pid ?? 0);
  const rssMb = (await rssOf(child.pid ?? 0)) / 1024 / 1024;
  await stop(child);
  await rm(workspace, { recursive: true, force: true });
  return { ms, cpuMs, rssMb };
}

async function firstReply(mode: Mode, modelSpec: string): Promise<number> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'bench-first-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, entry(mode, 'account'), {
    cwd: mode === 'baseline' ? baselineDir : root,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      MODEL: modelSpec,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    // A new embedded store (PGlite initdb) takes a while on a loaded machine; only what follows is timed.
    await waitForHttp(`${url}/.well-known/jwks.json`, 180_000);
    const pair = (await (
      await fetch(`${url}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: crypto.randomUUID() }),
      })
    ).json()) as { access_token: string };
    const sent = performance.now();
    const answer = await fetch(`${url}/api/v1/agent/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${pair.access_token}` },
      body: JSON.stringify({ chat_id: 'first', message: 'hello' }),
    });
    const reader = answer.body?.getReader();
    if (!answer.ok || !reader) throw new Error(`first message answered ${answer.status}`);
    await reader.read();
    const ms = performance.now() - sent;
    await reader.cancel();
    return ms;
  } finally {
    await stop(child);
    await rm(dataDir, { recursive: true, force: true });
  }
}

await buildIfStale({ web: false });
const loadAtStart = loadAverage();
const model = await startScriptedModel({ responder: () => ({ text: 'hi' }) });
const samples = Object.fromEntries(
  MODES.map((mode) => [mode, { cold: [] as number[], cpu: [] as number[], rss: [] as number[], first: [] as number[] }]),
) as Record<Mode, { cold: number[]; cpu: number[]; rss: number[]; first: number[] }>;
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? MODES : [...MODES].reverse();
  for (let i = 0; i < COLD_SAMPLES; i++)
    for (const mode of order) {
      const cold = await agentColdStart(mode);
      samples[mode].cold.push(cold.ms);
      samples[mode].cpu.push(cold.cpuMs);
      samples[mode].rss.push(cold.rssMb);
    }
  for (const mode of order) {
    if (mode === 'tsx') await rename(DIST, DIST_ASIDE);
    try {
      samples[mode].first.push(await firstReply(mode, model.modelSpec));
    } finally {
      if (mode === 'tsx') await rename(DIST_ASIDE, DIST);
    }
  }
}
await model.close();
const baseline = shortCommit(AGENT_BASELINE);
const labels: Record<Mode, string> = {
  baseline: `baseline build (${baseline})`,
  bundle: 'compiled build, agent bundle (npm run build)',
  tsx: 'TypeScript through tsx',
};
const medians = (mode: Mode) => ({
  cold: median(samples[mode].cold),
  cpu: median(samples[mode].cpu),
  rss: median(samples[mode].rss),
  first: median(samples[mode].first),
});
const base = medians('baseline');
const rows = MODES.map((mode) => {
  const m = medians(mode);
  return [
    labels[mode],
    Math.round(m.cold),
    Math.round(m.cpu),
    Math.round(m.rss),
    Math.round(m.first),
    `${(m.cold / base.cold).toFixed(2)}× (CPU ${(m.cpu / base.cpu).toFixed(2)}×)`,
  ];
});
const loadAverages = { start: loadAtStart, end: loadAverage() };
console.log(
  `\nstartup, medians of ${ROUNDS} alternating rounds, ${COLD_SAMPLES} cold starts per side and round (load average ${loadAverages.start.join(' ')} → ${loadAverages.end.join(' ')})\n`,
);
console.log(table(['run', 'agent cold start ms', 'CPU to /health ms', 'agent RSS at start MB', 'first reply ms (new guest)', 'cold start / baseline'], rows));
console.log(`goal: an agent's cold start ≤ ${COLD_START_GOAL_MS} ms median (the bundle: ${Math.round(medians('bundle').cold)} ms at this load)`);
await writeResults('startup.json', { date: new Date().toISOString(), rounds: ROUNDS, coldSamples: COLD_SAMPLES, baseline, loadAverages, samples, rows });
