/**
 * Chat streaming benchmark: the agent (a child process, as `npm start` runs it) against a bare
 * node SSE writer (bench/bare-sse.ts, also a child) relaying the same scripted model stream.
 *
 * The scripted OpenAI-compatible model runs in this process and stamps each chunk with the
 * time it is written; the clients (also here, same clock) measure chunk → client `data:` line.
 * It writes each chat's chunks on that chat's slot of a grid (`chunkGrid`), so every server gets
 * the same even load, not bursts shaped by how its runs happened to start.
 * Figures: median/p99 latency per event, events/s, peak RSS of the server, and the time to
 * replay a 10,000-event buffer (`GET /chat/{id}/stream` vs the bare writer sending 10,000).
 *
 * The servers take turns, `--rounds` times, each round in a rotated order; the figures are
 * medians over the rounds (peak RSS: the highest), and the overhead is the median of each
 * round's agent − bare writer difference. One round's p99 overhead still moves by ~1.5 ms with
 * the machine (this process, the scripted model and the clients share its cores).
 *
 *   npx tsx bench/chat.ts [--chats 500] [--events 200] [--interval 500] [--rounds 3] [--replay 10000]
 *
 * `--interval 50` (10,000 chunks/s offered at 500 chats) makes every server CPU-bound on two
 * cores: then the figures are throughput and queueing, not the cost of one event.
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
import { benchNodeOptions, median } from './lib/harness.js';
import {
  benchMessage,
  chunkGrid,
  latencyOfStamp,
  percentile,
  stampedChunk,
  round,
  sleep,
  sse,
  streamPhase,
  timedReplay,
  type PhaseResult,
} from './lib/stream.js';

const root = fileURLToPath(new URL('..', import.meta.url));

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : Number(process.env[`BENCH_${name.toUpperCase()}`] ?? fallback);
}
const CHATS = arg('chats', 500);
const EVENTS = arg('events', 200);
const INTERVAL = arg('interval', 500);
const ROUNDS = Math.max(1, arg('rounds', 3));
const REPLAY = arg('replay', 10_000);
const EDGE = 5;

type StreamingResult = PhaseResult & { steadyP99Ms: number };

/** One server's rounds as one result: medians, the highest peak RSS, every error. */
function overRounds(results: StreamingResult[]): StreamingResult {
  const mid = (pick: (r: StreamingResult) => number) => round(median(results.map(pick)));
  return {
    ...results.at(-1)!,
    seconds: mid((r) => r.seconds),
    eventsPerSecond: Math.round(median(results.map((r) => r.eventsPerSecond))),
    medianMs: mid((r) => r.medianMs),
    p99Ms: mid((r) => r.p99Ms),
    steadyP99Ms: mid((r) => r.steadyP99Ms),
    maxMs: Math.max(...results.map((r) => r.maxMs)),
    peakRssMb: Math.max(...results.map((r) => r.peakRssMb)),
    idleRssMb: mid((r) => r.idleRssMb),
    cpuUsPerEvent: Math.round(median(results.map((r) => r.cpuUsPerEvent))),
    errors: results.reduce((n, r) => n + r.errors, 0),
  };
}

async function startChild(
  script: string,
  env: Record<string, string>,
  ready: (child: ChildProcess) => Promise<string>,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [...benchNodeOptions(), '--import', 'tsx', script], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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
    return { text: { count: EVENTS, chunk: stampedChunk }, pauseBefore: chunkGrid(request, INTERVAL) };
  });

  const workspace = await mkdtemp(path.join(tmpdir(), 'bench-chat-'));
  const secret = randomBytes(24).toString('hex');
  const auth = { authorization: `Bearer ${secret}` };
  const agentPort = await freePort();
  const agent = await startChild(
    'server/agent/main.ts',
    {
      AGENT_PORT: String(agentPort),
      AGENT_SECRET: secret,
      AGENT_WORKSPACE: workspace,
      MODEL: model.modelSpec,
      LOG_LEVEL: 'silent',
      HEARTBEAT_INTERVAL: '0',
      AGENT_MODEL_RETRIES: '0',
      AGENT_RUN_TIMEOUT: '3600',
    },
    async () => `http://127.0.0.1:${agentPort}`,
  );
  await waitHealthy(agent.url);
  const startBare = (relay: string) =>
    startChild(
      'bench/bare-sse.ts',
      { MODEL_BASE_URL: model.baseUrl, PORT: '0', RELAY: relay },
      (child) =>
        new Promise((resolve) =>
          child.stdout!.once('data', (chunk: Buffer) => resolve(`http://127.0.0.1:${(JSON.parse(chunk.toString()) as { port: number }).port}`)),
        ),
    );
  const bare = await startBare('plain');
  const provider = await startBare('provider');

  const latencies = new Float64Array(CHATS * EVENTS + 16);
  const counter = { n: 0 };
  // The same latencies without each run's first and last EDGE events, where run starts and ends
  // (hundreds at once in this bench) compete with other runs' chunks: the steady-state share.
  const steady = new Float64Array(CHATS * EVENTS + 16);
  const steadyCounter = { n: 0 };
  const postTo = (url: string, headers: Record<string, string>, round: number) => (chat: number) => {
    let seen = 0;
    return sse(
      `${url}/chat`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ message: benchMessage(chat, CHATS), chat_id: `bench-${round}-${chat}` }),
      },
      (data) => {
        const ms = latencyOfStamp(data.type === 'text' ? data.content : undefined);
        if (ms === undefined) return;
        latencies[counter.n++] = ms;
        const at = seen++;
        if (at >= EDGE && at < EVENTS - EDGE) steady[steadyCounter.n++] = ms;
      },
    );
  };

  console.log(`chat bench: ${CHATS} concurrent chats × ${EVENTS} model chunks every ${INTERVAL} ms, ${ROUNDS} round(s); replay of ${REPLAY} events`);
  // Warm-up (JIT, connection setup, first migrations) on a few chats, not measured.
  const warmUp = (url: string, headers: Record<string, string>) =>
    Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        sse(
          `${url}/chat`,
          {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...headers },
            body: JSON.stringify({ message: 'warm-up', chat_id: `warm-up-${i}` }),
          },
          () => undefined,
        ),
      ),
    );
  await warmUp(agent.url, auth);
  await warmUp(bare.url, {});
  await warmUp(provider.url, {});

  const servers = [
    { name: 'bare node SSE writer', pid: bare.child.pid!, url: bare.url, headers: {} },
    { name: "bare writer reading the model via the agent's model client", pid: provider.child.pid!, url: provider.url, headers: {} },
    { name: 'agent (provider → run buffer → tRPC → SSE)', pid: agent.child.pid!, url: agent.url, headers: auth },
  ];
  const rounds: StreamingResult[][] = servers.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < servers.length; k++) {
      const i = (k + r) % servers.length;
      const server = servers[i]!;
      steadyCounter.n = 0;
      const result = await streamPhase(server.name, server.pid, postTo(server.url, server.headers, r), latencies, counter, CHATS);
      rounds[i]!.push({ ...result, steadyP99Ms: round(percentile(steady.slice(0, steadyCounter.n).sort(), 99)) });
      console.log(`round ${r + 1}: ${server.name}: median ${result.medianMs} ms, p99 ${result.p99Ms} ms, peak RSS ${result.peakRssMb} MB`);
      await sleep(500);
    }
  }
  const [bareRounds, providerRounds, agentRounds] = rounds as [StreamingResult[], StreamingResult[], StreamingResult[]];
  const [bareResult, providerResult, agentResult] = [bareRounds, providerRounds, agentRounds].map(overRounds) as [
    StreamingResult,
    StreamingResult,
    StreamingResult,
  ];
  const overheadOf = (base: StreamingResult[]) => ({
    medianMs: round(median(agentRounds.map((a, r) => a.medianMs - base[r]!.medianMs))),
    p99Ms: round(median(agentRounds.map((a, r) => a.p99Ms - base[r]!.p99Ms))),
    p99ByRoundMs: agentRounds.map((a, r) => round(a.p99Ms - base[r]!.p99Ms)),
  });

  // Replay: a run that has buffered REPLAY events (and stays active), read back by GET /stream.
  const replayStream = sse(
    `${agent.url}/chat`,
    { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify({ message: 'replay-run', chat_id: 'replay' }) },
    () => undefined,
  );
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
  const agentReplay = await timedReplay(
    (onData) => (reader = sse(`${agent.url}/chat/replay/stream`, { method: 'GET', headers: auth }, onData)),
    (data) => data.type === 'text' && ++replayed === REPLAY,
    60_000,
  );
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
    params: { chats: CHATS, events: EVENTS, intervalMs: INTERVAL, rounds: ROUNDS, replay: REPLAY },
    /** Medians over the rounds (peak RSS: the highest, errors: all). */
    streaming: [bareResult, providerResult, agentResult],
    rounds,
    overhead: overheadOf(bareRounds),
    /** The agent's own stack (model loop, run buffer, tRPC, SSE bridge, history) beyond the model client. */
    overheadBeyondProvider: overheadOf(providerRounds),
    replay: [
      { server: 'bare node SSE writer', events: bareReplayed, ms: round(bareReplayMs) },
      { server: 'agent GET /chat/{id}/stream', events: replayed, ms: round(agentReplayMs) },
    ],
    targets: { overheadP99Ms: 2, rssMb: 300 },
  };

  console.log('');
  console.table(
    results.streaming.map((r) => ({
      server: r.server,
      chats: r.chats,
      events: r.events,
      s: r.seconds,
      'events/s': r.eventsPerSecond,
      'median ms': r.medianMs,
      'p99 ms': r.p99Ms,
      [`p99 w/o first+last ${EDGE}`]: r.steadyP99Ms,
      'max ms': r.maxMs,
      'peak RSS MB': r.peakRssMb,
      'idle RSS MB': r.idleRssMb,
      'CPU µs/event': r.cpuUsPerEvent,
      errors: r.errors,
    })),
  );
  console.log(
    `overhead of the agent over the bare writer (median of the rounds): median ${results.overhead.medianMs} ms, p99 ${results.overhead.p99Ms} ms per event (target ≤ 2 ms p99); p99 by round: ${results.overhead.p99ByRoundMs.join(', ')} ms`,
  );
  console.log(
    `of which beyond the model client (agent vs bare writer via the model client): median ${results.overheadBeyondProvider.medianMs} ms, p99 ${results.overheadBeyondProvider.p99Ms} ms; p99 by round: ${results.overheadBeyondProvider.p99ByRoundMs.join(', ')} ms`,
  );
  console.log(
    `agent peak RSS with ${CHATS} streams: ${agentResult.peakRssMb} MB, highest of the rounds (target < 300 MB); RSS each second of the last round: ${agentRounds.at(-1)!.rssTimelineMb.join(' ')}`,
  );
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
