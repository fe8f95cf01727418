/**
 * `npm run bench:sandbox`: what the agent sandbox costs, sandboxed against AGENT_SANDBOX=off side
 * by side (rounds alternate, medians printed). Both modes use the same Unix sockets and egress
 * gateway; the difference is bwrap, the namespaces and the cgroup.
 * - cold start: the launcher spawns an agent (compiled build) → its first `/health` answer; in the
 *   same rounds, the baseline's launcher its agent sandboxed (AGENT_BASELINE, before the agent
 *   bundle: its own modules, since its sandbox binds its own tree). Goal: ≤ 500 ms sandboxed;
 * - streaming: the account service running, a guest's reply of STREAM_EVENTS text events through
 *   the proxy, from the first text event to `done`, per event (the scripted model sends them as
 *   fast as it can, so this is the whole path's overhead per event).
 * Goals: ≤ 200 ms more cold start, ≤ 10 % more per streamed event. The load average at start and
 * end is printed beside the figures.
 */
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EgressGateway } from '../server/account/agents/egress/gateway.js';
import { AgentLauncher } from '../server/account/agents/provisioners/local/launcher.js';
import { agentFetch } from '../server/account/agents/transport.js';
import { loadAccountConfig } from '../server/account/config.js';
import { createLogger } from '../server/common/log.js';
import { freePort } from '../server/common/net.js';
import { buildIfStale } from '../scripts/build.js';
import { lastUserText, startScriptedModel } from '../test/support/scripted-model.js';
import { AGENT_BASELINE, baselineTree, shortCommit } from './lib/baseline.js';
import { loadAverage, median, root, spawnServer, stop, table, waitForHttp, writeResults } from './lib/harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (process.env.BENCH_QUICK === '1' ? 3 : 5));
const STREAM_EVENTS = 2_000;
const COLD_START_GOAL_MS = 500;
type Mode = 'on' | 'off';

const log = createLogger('bench', 'error');

interface LauncherModules {
  AgentLauncher: typeof AgentLauncher;
  EgressGateway: typeof EgressGateway;
  agentFetch: typeof agentFetch;
  loadAccountConfig: typeof loadAccountConfig;
}
const thisTree: LauncherModules = { AgentLauncher, EgressGateway, agentFetch, loadAccountConfig };

/** A baseline's launcher and what it needs, from its own sources (the egress gateway has moved since). */
async function launcherOf(tree: string): Promise<LauncherModules> {
  const from = async (...candidates: string[]) => import(path.join(tree, candidates.find((file) => existsSync(path.join(tree, file))) ?? candidates[0]!));
  return {
    AgentLauncher: (await from('server/account/agents/provisioners/local/launcher.ts')).AgentLauncher,
    EgressGateway: (await from('server/account/agents/egress/gateway.ts', 'server/account/agents/egress-gateway.ts')).EgressGateway,
    agentFetch: (await from('server/account/agents/transport.ts')).agentFetch,
    loadAccountConfig: (await from('server/account/config.ts')).loadAccountConfig,
  };
}

async function coldStart(mode: Mode, { AgentLauncher, EgressGateway, agentFetch, loadAccountConfig }: LauncherModules = thisTree): Promise<number> {
  const workspace = await mkdtemp(path.join(tmpdir(), 'bench-sandbox-'));
  const launcher = new AgentLauncher(
    { ...loadAccountConfig({}).agentLauncher, sandbox: mode },
    new EgressGateway([], log, { limits: loadAccountConfig({}).egressLimits }),
    log,
  );
  const started = performance.now();
  const { child, url } = await launcher.launch(`bench-${randomUUID()}`, workspace, {
    PATH: process.env.PATH ?? '',
    AGENT_SECRET: 'bench-secret-0123456789',
    LOG_LEVEL: 'warn',
  });
  const agent = agentFetch(url);
  for (const deadline = Date.now() + 30_000; ; ) {
    if (
      await agent.fetch(`${agent.base}/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) throw new Error('agent did not start');
    await new Promise((r) => setTimeout(r, 5));
  }
  const ms = performance.now() - started;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  launcher.terminate(child);
  await exited;
  await launcher.close();
  await rm(workspace, { recursive: true, force: true });
  return ms;
}

async function streamPerEvent(mode: Mode, modelSpec: string): Promise<number> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'bench-sandbox-account-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawnServer('dist/server/account/main.js', [], {
    PORT: String(port),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    MODEL: modelSpec,
    AGENT_SANDBOX: mode,
  });
  try {
    await waitForHttp(`${url}/.well-known/jwks.json`);
    const pair = (await (
      await fetch(`${url}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: randomUUID() }),
      })
    ).json()) as { access_token: string };
    const chat = (message: string) =>
      fetch(`${url}/api/v1/agent/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${pair.access_token}` },
        body: JSON.stringify({ chat_id: `c-${randomUUID()}`, message }),
      });
    await (await chat('warm up')).text();
    const answer = await chat('stream');
    let first = 0;
    let events = 0;
    const decoder = new TextDecoder();
    for await (const chunk of answer.body as unknown as AsyncIterable<Uint8Array>) {
      const text = decoder.decode(chunk, { stream: true });
      const texts = text.split('"type":"text"').length - 1;
      if (texts && !first) first = performance.now();
      events += texts;
    }
    if (events < STREAM_EVENTS / 2) throw new Error(`only ${events} text events arrived`);
    return ((performance.now() - first) * 1000) / events;
  } finally {
    await stop(child);
    await rm(dataDir, { recursive: true, force: true });
  }
}

await buildIfStale({ web: false });
const baseline = await launcherOf(await baselineTree(AGENT_BASELINE, { build: true }));
const loadAtStart = loadAverage();
const model = await startScriptedModel({
  responder: (request) => (lastUserText(request) === 'stream' ? { text: { count: STREAM_EVENTS, chunk: (i) => `w${i} ` } } : { text: 'ok' }),
});
const samples: Record<Mode, { coldMs: number[]; perEventUs: number[] }> = { off: { coldMs: [], perEventUs: [] }, on: { coldMs: [], perEventUs: [] } };
const baselineColdMs: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
    samples[mode].coldMs.push(await coldStart(mode));
    samples[mode].perEventUs.push(await streamPerEvent(mode, model.modelSpec));
  }
  baselineColdMs.push(await coldStart('on', baseline));
}
await model.close();
const cold = { off: median(samples.off.coldMs), on: median(samples.on.coldMs), baseline: median(baselineColdMs) };
const perEvent = { off: median(samples.off.perEventUs), on: median(samples.on.perEventUs) };
const loadAverages = { start: loadAtStart, end: loadAverage() };
const rows = [
  ['AGENT_SANDBOX=off', Math.round(cold.off), perEvent.off.toFixed(1)],
  ['sandboxed (default)', Math.round(cold.on), perEvent.on.toFixed(1)],
  ['difference', `${Math.round(cold.on - cold.off)} ms`, `${(((perEvent.on - perEvent.off) / perEvent.off) * 100).toFixed(1)} %`],
  [`baseline ${shortCommit(AGENT_BASELINE)} sandboxed`, Math.round(cold.baseline), ''],
  ['sandboxed / baseline', `${(cold.on / cold.baseline).toFixed(2)}×`, ''],
];
console.log(
  `\nsandbox cost, medians of ${ROUNDS} alternating rounds (root: ${root}; load average ${loadAverages.start.join(' ')} → ${loadAverages.end.join(' ')})\n`,
);
console.log(table(['agents', 'cold start ms (spawn → /health)', `µs per streamed event (${STREAM_EVENTS} events)`], rows));
console.log(`goal: sandboxed cold start ≤ ${COLD_START_GOAL_MS} ms: ${cold.on <= COLD_START_GOAL_MS ? 'met' : 'MISSED'} on this machine at this load`);
await writeResults('sandbox.json', {
  date: new Date().toISOString(),
  rounds: ROUNDS,
  baseline: shortCommit(AGENT_BASELINE),
  loadAverages,
  samples: { ...samples, baseline: { coldMs: baselineColdMs } },
  rows,
});
