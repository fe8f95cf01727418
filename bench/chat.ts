/**
 * Chat streaming benchmark: the agent (a child process, as `npm start` runs it) against a bare
 * node SSE writer (bench/bare-sse.ts, also a child) relaying the same scripted model stream.
 *
 * The scripted OpenAI-compatible model runs in this process and stamps each chunk with the
 * time it is written; the clients (also here, same clock) measure chunk → client `data:` line.
 * Figures: median/p99 latency per event, events/s, peak RSS of the server, and the time to
 * replay a 10,000-event buffer (`GET /chat/{id}/stream` vs the bare writer sending 10,000).
 *
 *   npx tsx bench/chat.ts [--chats 500] [--events 200] [--interval 50] [--replay 10000]
 *
 * Prints a table and writes bench/results/chat.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { freePort } from '../server/common/net.js';
import { startScriptedModel, type ScriptedModel } from '../test/support/scripted-model.js';
import { benchNodeOptions } from './lib/harness.js';
import { round, sleep, sse, streamPhase, timedReplay } from './lib/stream.js';

const root = fileURLToPath(new URL('..', import.meta.url));

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : Number(process.env[`BENCH_${name.toUpperCase()}`] ?? fallback);
}
const CHATS = arg('chats', 500);
const EVENTS = arg('events', 200);
const INTERVAL = arg('interval', 50);
const REPLAY = arg('replay', 10_000);


async function startChild(script: string, env: Record<string, string>, ready: (child: ChildProcess) => Promise<string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [...benchNodeOptions(), '--import', 'tsx', script], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await ready(child);
  return { child, url };
}

async function waitHealthy(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // starting
    }
    await sleep(100);
  }
  throw new Error('agent did not start');
}

async function main(): Promise<void> {
  const model: ScriptedModel = await startScriptedModel();
  // Each chunk carries the time it was written; the client subtracts it on arrival.
  model.respond((request) => {
    const replay = JSON.stringify(request.messages).includes('replay-run');
    if (replay) return { text: { count: REPLAY, chunk: (i) => `token ${i} ` }, hang: true };
    if (JSON.stringify(request.messages).includes('warm-up')) return { text: { count: 50, chunk: (i) => `w${i}` }, delayMs: 5 };
    return { text: { count: EVENTS, chunk: () => `t=${performance.now().toFixed(3)};` }, delayMs: INTERVAL };
  });

  const workspace = await mkdtemp(path.join(tmpdir(), 'bench-chat-'));
  const secret = randomBytes(24).toString('hex');
  const auth = { authorization: `Bearer ${secret}` };
  const agentPort = await freePort();
  const agent = await startChild(
    'server/agent/main.ts',
    { AGENT_PORT: String(agentPort), AGENT_SECRET: secret, AGENT_WORKSPACE: workspace, MODEL: model.modelSpec, LOG_LEVEL: 'silent', HEARTBEAT_INTERVAL: '0', AGENT_MODEL_RETRIES: '0', AGENT_RUN_TIMEOUT: '3600' },
    async () => `http://127.0.0.1:${agentPort}`,
  );
  await waitHealthy(agent.url);
  const startBare = (relay: string) =>
    startChild('bench/bare-sse.ts', { MODEL_BASE_URL: model.baseUrl, PORT: '0', RELAY: relay }, (child) =>
      new Promise((resolve) => child.stdout!.once('data', (chunk: Buffer) => resolve(`http://127.0.0.1:${(JSON.parse(chunk.toString()) as { port: number }).port}`))),
    );
  const bare = await startBare('plain');
  const provider = await startBare('provider');

  const latencies = new Float64Array(CHATS * EVENTS + 16);
  const counter = { n: 0 };
  const onData = (data: { type: string; content?: string }) => {
    if (data.type === 'text' && data.content?.startsWith('t=')) latencies[counter.n++] = performance.now() - Number(data.content.slice(2, -1));
  };
  const postTo = (url: string, headers: Record<string, string>) => (chat: number) =>
    sse(`${url}/chat`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ message: `bench ${chat}`, chat_id: `bench-${chat}` }) }, onData);

  console.log(`chat bench: ${CHATS} concurrent chats × ${EVENTS} model chunks every ${INTERVAL} ms; replay of ${REPLAY} events`);
  // Warm-up (JIT, connection setup, first migrations) on a few chats, not measured.
  const warmUp = (url: string, headers: Record<string, string>) =>
    Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        sse(`${url}/chat`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ message: 'warm-up', chat_id: `warm-up-${i}` }) }, () => undefined),
      ),
    );
  await warmUp(agent.url, auth);
  await warmUp(bare.url, {});
  await warmUp(provider.url, {});

  const bareResult = await streamPhase('bare node SSE writer', bare.child.pid!, postTo(bare.url, {}), latencies, counter, CHATS);
  await sleep(500);
  const providerResult = await streamPhase('bare writer reading the model via the agent\'s model client', provider.child.pid!, postTo(provider.url, {}), latencies, counter, CHATS);
  await sleep(500);
  const agentResult = await streamPhase('agent (provider → run buffer → tRPC → SSE)', agent.child.pid!, postTo(agent.url, auth), latencies, counter, CHATS);

  // Replay: a run that has buffered REPLAY events (and stays active), read back by GET /stream.
  const replayStream = sse(`${agent.url}/chat`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify({ message: 'replay-run', chat_id: 'replay' }) }, () => undefined);
  for (let i = 0; i < 600; i++) {
    await sleep(100);
    // The run is buffered once the model's stream has been fully sent and the run still hangs.
    if (model.openStreams() === 1 && model.requests.at(-1) && JSON.stringify(model.requests.at(-1)!.messages).includes('replay-run')) {
      const probe = await fetch(`${agent.url}/chat/replay/active`, { headers: auth }).then((r) => r.json() as Promise<{ active: boolean }>);
      if (probe.active) break;
    }
  }
  await sleep(1_000);
  let replayed = 0;
  let reader: Promise<void> = Promise.resolve();
  const agentReplay = await timedReplay((onData) => (reader = sse(`${agent.url}/chat/replay/stream`, { method: 'GET', headers: auth }, onData)), (data) => data.type === 'text' && ++replayed === REPLAY, 60_000);
  const agentReplayMs = agentReplay.complete ? agentReplay.ms : NaN;
  await fetch(`${agent.url}/chat/replay`, { method: 'DELETE', headers: auth });
  await Promise.allSettled([reader, replayStream]);

  let bareReplayed = 0;
  const bareStart = performance.now();
  await sse(`${bare.url}/replay?n=${REPLAY}`, { method: 'GET' }, (data) => {
    if (data.type === 'text') bareReplayed++;
  });
  const bareReplayMs = performance.now() - bareStart;

  const results = {
    date: new Date().toISOString(),
    machine: { cpus: (await import('node:os')).cpus().length, node: process.version },
    params: { chats: CHATS, events: EVENTS, intervalMs: INTERVAL, replay: REPLAY },
    streaming: [bareResult, providerResult, agentResult],
    overhead: { medianMs: round(agentResult.medianMs - bareResult.medianMs), p99Ms: round(agentResult.p99Ms - bareResult.p99Ms) },
    /** The agent's own stack (model loop, run buffer, tRPC, SSE bridge, history) beyond the provider. */
    overheadBeyondProvider: { medianMs: round(agentResult.medianMs - providerResult.medianMs), p99Ms: round(agentResult.p99Ms - providerResult.p99Ms) },
    replay: [
      { server: 'bare node SSE writer', events: bareReplayed, ms: round(bareReplayMs) },
      { server: 'agent GET /chat/{id}/stream', events: replayed, ms: round(agentReplayMs) },
    ],
    targets: { overheadP99Ms: 2, rssMb: 300 },
  };

  console.log('');
  console.table(results.streaming.map((r) => ({ server: r.server, chats: r.chats, events: r.events, 's': r.seconds, 'events/s': r.eventsPerSecond, 'median ms': r.medianMs, 'p99 ms': r.p99Ms, 'max ms': r.maxMs, 'peak RSS MB': r.peakRssMb, 'idle RSS MB': r.idleRssMb, 'CPU µs/event': r.cpuUsPerEvent, errors: r.errors })));
  console.log(`overhead of the agent over the bare writer: median ${results.overhead.medianMs} ms, p99 ${results.overhead.p99Ms} ms per event (target ≤ 2 ms p99)`);
  console.log(`of which beyond the model client (agent vs bare writer via the model client): median ${results.overheadBeyondProvider.medianMs} ms, p99 ${results.overheadBeyondProvider.p99Ms} ms`);
  console.log(`agent peak RSS with ${CHATS} streams: ${agentResult.peakRssMb} MB (target < 300 MB); RSS each second: ${agentResult.rssTimelineMb.join(' ')}`);
  console.table(results.replay.map((r) => ({ server: r.server, events: r.events, ms: r.ms, 'events/s': Math.round(r.events / (r.ms / 1000)) })));

  await mkdir(path.join(root, 'bench/results'), { recursive: true });
  await writeFile(path.join(root, 'bench/results/chat.json'), `${JSON.stringify(results, null, 2)}\n`);
  console.log('written to bench/results/chat.json');

  for (const c of [agent.child, bare.child, provider.child]) c.kill('SIGTERM');
  await Promise.all([agent.child, bare.child, provider.child].map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
  await model.close();
  await rm(workspace, { recursive: true, force: true });
}

await main();
