/**
 * `npm run bench:startup`: what a new user waits for, from the compiled build (the agent: its
 * bundle) against the TypeScript sources through tsx, side by side (rounds alternate, medians
 * printed, the load average at start and end beside them):
 * - an agent's cold start: spawn → first `/health` answer, fresh workspace (migrations applied);
 * - a new user's first reply: the account service running, a guest signs in and sends its first
 *   message through the proxy; time from the message to the first chat event, which includes
 *   starting the user's agent (the scripted model answers at once). Goal: ≤ 1.5 s.
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
import { agentScript, loadAverage, median, root, rssOf, stop, table, waitForHttp, writeResults } from './lib/harness.js';

const DIST = path.join(root, 'dist');
const DIST_ASIDE = path.join(root, 'dist.bench-aside');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (process.env.BENCH_QUICK === '1' ? 3 : 5));
type Mode = 'compiled' | 'tsx';
const entry = (mode: Mode, service: 'agent' | 'account') => {
  if (mode === 'tsx') return ['--import', 'tsx', path.join(root, `server/${service}/main.ts`)];
  return [service === 'agent' ? agentScript(root) : path.join(root, 'dist/server/account/main.js')];
};

async function agentColdStart(mode: Mode): Promise<{ ms: number; rssMb: number }> {
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
  const rssMb = (await rssOf(child.pid ?? 0)) / 1024 / 1024;
  await stop(child);
  await rm(workspace, { recursive: true, force: true });
  return { ms, rssMb };
}

async function firstReply(mode: Mode, modelSpec: string): Promise<number> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'bench-first-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, entry(mode, 'account'), {
    cwd: root,
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
    await waitForHttp(`${url}/.well-known/jwks.json`);
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
const samples: Record<Mode, { cold: number[]; rss: number[]; first: number[] }> = {
  compiled: { cold: [], rss: [], first: [] },
  tsx: { cold: [], rss: [], first: [] },
};
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of round % 2 === 0 ? (['tsx', 'compiled'] as const) : (['compiled', 'tsx'] as const)) {
    const cold = await agentColdStart(mode);
    samples[mode].cold.push(cold.ms);
    samples[mode].rss.push(cold.rssMb);
    if (mode === 'tsx') await rename(DIST, DIST_ASIDE);
    try {
      samples[mode].first.push(await firstReply(mode, model.modelSpec));
    } finally {
      if (mode === 'tsx') await rename(DIST_ASIDE, DIST);
    }
  }
}
await model.close();
const rows = (['tsx', 'compiled'] as const).map((mode) => [
  mode === 'tsx' ? 'TypeScript through tsx (before)' : 'compiled build (npm run build)',
  Math.round(median(samples[mode].cold)),
  Math.round(median(samples[mode].rss)),
  Math.round(median(samples[mode].first)),
]);
const loadAverages = { start: loadAtStart, end: loadAverage() };
console.log(`\nstartup, medians of ${ROUNDS} alternating rounds (load average ${loadAverages.start.join(' ')} → ${loadAverages.end.join(' ')})\n`);
console.log(table(['run', 'agent cold start ms', 'agent RSS at start MB', 'first reply ms (new guest)'], rows));
await writeResults('startup.json', { date: new Date().toISOString(), rounds: ROUNDS, loadAverages, samples, rows });
