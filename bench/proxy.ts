/**
 * The account → agent proxy, side by side with the agent itself (issue 11, "Agent … through the
 * agent directly and through the account proxy"):
 *
 * - Chat fan-out at two loads, LIGHT_CHATS (the per-event cost with CPU to spare) and CHATS
 *   concurrent chats (fan-out: throughput and RSS), each a scripted model reply of EVENTS chunks INTERVAL ms
 *   apart, stamped with the time the model wrote them (bench/lib/stream.ts); the client measures
 *   chunk → client per event. Four paths, each face directly and through the proxy:
 *     REST  `POST /chat` on the agent          vs  `POST /api/v1/agent/chat` (REST proxy, http-proxy.ts)
 *     tRPC  `chat.send` on the agent's /trpc    vs  `agent.chat.send` on the account's /trpc (router.ts)
 *   (tRPC subscriptions over SSE with the bearer client of server/account/agents/client.ts).
 *   Figures: events/s, median and p99 per event, CPU time per event and peak RSS of the agent and
 *   of the account service (CPU time is what the proxy costs even where a busy machine's
 *   scheduling noise hides its latency).
 *   The proxy's added latency per event is proxy − direct, per face and load: the median over the
 *   rounds of the difference within a round (direct and proxy run back to back, alternating
 *   which goes first), which cancels much of a shared machine's drift.
 * - Reconnect replay: a run of REPLAY events (the scripted model's chunks, no delay) finishes,
 *   then its buffer is read back by a reconnect (`Last-Event-ID: <run>-0`, within the agent's
 *   AGENT_STREAM_GRACE of 30 s), four paths, each timed from the request to `done`:
 *     REST  `GET /chat/{id}/stream` on the agent  vs  `GET /api/v1/agent/chat/{id}/stream`
 *     tRPC  `chat.stream` on the agent            vs  `agent.chat.stream` on the account
 *   Figures: time to `done`, events/s, CPU per event of both; a fresh run per round, REPLAY_ROUNDS
 *   rounds with the order alternating, medians; each replay must deliver the whole buffer.
 * - Transfers: 50 MiB upload and download, agent directly vs the REST proxy (the tRPC routers
 *   have no file transfer procedures): MB/s and the proxy/direct ratio, RSS growth of both.
 *
 * Setup as in production with `AGENT_PROVISIONER=static`: the agent and the account service run
 * as their own processes on loopback; a full user (e-mail sign-in: guests are capped at 5 MB and
 * 50 messages a day) is assigned the agent with `npm run agents -- add … --user`. The account
 * store is a fresh PostgreSQL database (127.0.0.1:5432 or TEST_DATABASE_URL, dropped afterwards)
 * when reachable, PGlite otherwise.
 *
 *   npm run bench:proxy     (BENCH_QUICK=1: fewer chats, rounds and runs)
 *   BENCH_PROXY_LIGHT_CHATS, BENCH_PROXY_CHATS, BENCH_PROXY_EVENTS, BENCH_PROXY_INTERVAL, BENCH_PROXY_ROUNDS, BENCH_PROXY_RUNS,
 *   BENCH_PROXY_REPLAY, BENCH_PROXY_REPLAY_ROUNDS
 *
 * Prints tables and writes bench/results/proxy.json. Every phase is bounded: a fixed number of
 * chats and events, and a deadline per phase (PHASE_TIMEOUT_MS) after which open streams are cut;
 * a replay that has not reached `done` after REPLAY_TIMEOUT_MS counts as an error.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MAX_UPLOAD_BYTES } from '../server/agent/files/upload.js';
import { parseEventId } from '../server/agent/chat/runs.js';
import type { AgentRouter } from '../server/agent/router.js';
import { bearerTrpcClient } from '../server/account/agents/client.js';
import type { AccountRouter } from '../server/account/router.js';
import { freePort } from '../server/common/net.js';
import { createTestDatabase, postgresReachable, type TestDatabase } from '../test/support/postgres.js';
import { startScriptedModel } from '../test/support/scripted-model.js';
import { signInByEmail, startAccountService, type RunningAccountService } from './lib/account.js';
import { cpuMsOf, median, root, runIfEntry, spawnServer, stop, table, waitForHttp } from './lib/harness.js';
import {
  benchMessage,
  chunkGrid,
  latencyOfStamp,
  round,
  sleep,
  sse,
  stampedChunk,
  streamPhase,
  timedReplay,
  type PhaseResult,
  type ReplayResult,
} from './lib/stream.js';
import { download, mb, mbps, timed, upload, withRss } from './lib/transfer.js';

const QUICK = process.env.BENCH_QUICK === '1';
const num = (name: string, full: number, quick: number) => Number(process.env[name] ?? (QUICK ? quick : full));
const LIGHT_CHATS = num('BENCH_PROXY_LIGHT_CHATS', 20, 10);
const CHATS = num('BENCH_PROXY_CHATS', 100, 50);
const EVENTS = num('BENCH_PROXY_EVENTS', 50, 30);
const INTERVAL = num('BENCH_PROXY_INTERVAL', 100, 100);
const ROUNDS = num('BENCH_PROXY_ROUNDS', 3, 1);
const RUNS = num('BENCH_PROXY_RUNS', 5, 3);
const REPLAY = num('BENCH_PROXY_REPLAY', 10_000, 10_000);
const REPLAY_ROUNDS = num('BENCH_PROXY_REPLAY_ROUNDS', 3, 3);
/** Well inside the agent's 30 s grace for a finished run, for all four replays of a round. */
const REPLAY_TIMEOUT_MS = 6_000;
/** A phase that is not over by then is cut (its open streams are counted as errors). */
const PHASE_TIMEOUT_MS = 60_000 + EVENTS * INTERVAL * 2;

type Face = 'REST' | 'tRPC';
type Via = 'direct' | 'proxy';
const PATHS: Array<{ face: Face; via: Via; label: string }> = [
  { face: 'REST', via: 'direct', label: 'REST POST /chat, agent directly' },
  { face: 'REST', via: 'proxy', label: 'REST POST /api/v1/agent/chat, through the account proxy' },
  { face: 'tRPC', via: 'direct', label: 'tRPC chat.send (SSE), agent directly' },
  { face: 'tRPC', via: 'proxy', label: 'tRPC agent.chat.send (SSE), through the account proxy' },
];
const REPLAY_PATHS: typeof PATHS = [
  { face: 'REST', via: 'direct', label: 'REST GET /chat/{id}/stream, agent directly' },
  { face: 'REST', via: 'proxy', label: 'REST GET /api/v1/agent/chat/{id}/stream, through the account proxy' },
  { face: 'tRPC', via: 'direct', label: 'tRPC chat.stream (SSE), agent directly' },
  { face: 'tRPC', via: 'proxy', label: 'tRPC agent.chat.stream (SSE), through the account proxy' },
];
/** Direct and proxy of one face back to back; which goes first alternates round by round. */
const inOrder = <T>(paths: T[], r: number): T[] => (r % 2 === 0 ? paths : [paths[1]!, paths[0]!, paths[3]!, paths[2]!]);

export interface ProxyResults {
  date: string;
  store: 'postgres' | 'pglite';
  params: {
    lightChats: number;
    chats: number;
    events: number;
    intervalMs: number;
    rounds: number;
    fileBytes: number;
    runs: number;
    replayEvents: number;
    replayRounds: number;
  };
  /** Per path: medians over the rounds (each round's figures in `rounds`). */
  streaming: Array<{
    chats: number;
    face: Face;
    via: Via;
    label: string;
    eventsPerSecond: number;
    agentCpuUsPerEvent: number;
    accountCpuUsPerEvent: number;
    medianMs: number;
    p99Ms: number;
    agentPeakRssMb: number;
    accountPeakRssMb: number;
    errors: number;
    rounds: PhaseResult[];
  }>;
  /** proxy − direct, per event. */
  added: Array<{ chats: number; face: Face; medianMs: number; p99Ms: number; perRound: Array<{ medianMs: number; p99Ms: number }> }>;
  /** Reconnect replay of a finished run's buffer, per path: medians over the rounds; `vsDirect`: proxy ÷ direct time within a round, median. */
  replay: Array<{
    face: Face;
    via: Via;
    label: string;
    events: number;
    msToDone: number;
    eventsPerSecond: number;
    vsDirect: number;
    agentCpuUsPerEvent: number;
    accountCpuUsPerEvent: number;
    errors: number;
    rounds: ReplayResult[];
  }>;
  transfers: Array<{
    case: string;
    directMbps: number;
    proxyMbps: number;
    ratio: number;
    agentRssGrowthMb: number;
    accountRssGrowthMb: number;
    raw: { direct: number[]; proxy: number[] };
  }>;
}

type Item = { id?: string; data?: { type: string; content?: string }; type?: string; content?: string };

/** A tRPC subscription until `done` (then unsubscribed), fed to `onData` event by event. */
function subscribeUntilDone(
  subscribe: (cb: { onData(v: unknown): void; onError(e: unknown): void; onComplete(): void }) => { unsubscribe(): void },
  onData: (event: { type: string; content?: string }) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let sub: { unsubscribe(): void } | undefined;
    let finished = false;
    const finish = (error?: unknown) => {
      if (finished) return;
      finished = true;
      queueMicrotask(() => sub?.unsubscribe());
      if (error) reject(error instanceof Error ? error : new Error(String(error)));
      else resolve();
    };
    sub = subscribe({
      onData(value) {
        const item = value as Item;
        const event = (item.data ?? item) as { type: string; content?: string };
        onData(event);
        if (event.type === 'done') finish();
      },
      onError: (error) => finish(error),
      onComplete: () => finish(),
    });
    if (finished) sub.unsubscribe();
  });
}

/** Resolves with `work`, or rejects after `ms` (the work itself is abandoned: its sockets close with the process). */
function bounded<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([work, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: over ${ms} ms`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

export async function proxyBench(): Promise<ProxyResults> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const children: Array<import('node:child_process').ChildProcess> = [];
  try {
    const model = await startScriptedModel();
    cleanups.push(() => model.close());
    model.respond((request) => {
      if (JSON.stringify(request.messages).includes('replay-run')) return { text: { count: REPLAY, chunk: (i) => `token ${i} ` } };
      if (JSON.stringify(request.messages).includes('warm-up')) return { text: { count: 20, chunk: (i) => `w${i}` }, delayMs: 5 };
      return { text: { count: EVENTS, chunk: () => stampedChunk() }, pauseBefore: chunkGrid(request, INTERVAL) };
    });

    // The agent, as on an agent VM.
    const scratch = await mkdtemp(path.join(tmpdir(), 'bench-proxy-'));
    cleanups.push(() => rm(scratch, { recursive: true, force: true }));
    const workspace = path.join(scratch, 'workspace');
    await mkdir(workspace);
    const secret = randomBytes(24).toString('hex');
    const agentPort = await freePort();
    const agentUrl = `http://127.0.0.1:${agentPort}`;
    const agent = spawnServer('server/agent/main.ts', [], {
      AGENT_PORT: String(agentPort),
      HOST: '127.0.0.1',
      AGENT_SECRET: secret,
      AGENT_WORKSPACE: workspace,
      MODEL: model.modelSpec,
      LOG_LEVEL: 'silent',
      HEARTBEAT_INTERVAL: '0',
      AGENT_MODEL_RETRIES: '0',
      AGENT_RUN_TIMEOUT: '600',
    });
    children.push(agent);

    // The account service, `static` provisioner; its store on PostgreSQL when reachable.
    const usePostgres = await postgresReachable();
    let database: TestDatabase | undefined;
    if (usePostgres) {
      database = await createTestDatabase();
      cleanups.push(() => database!.drop());
    }
    // One user drives every concurrent chat: the per-user stream ceiling is lifted above the fan-out.
    const accountEnv = { AGENT_PROVISIONER: 'static', AGENT_STREAMS_PER_USER: '10000', ...(database ? { DATABASE_URL: database.url } : {}) };
    let account: RunningAccountService = await startAccountService(accountEnv);
    cleanups.push(() => rm(account.dataDir, { recursive: true, force: true }));
    children.push(account.child);
    const user = await signInByEmail(account, `bench-${Date.now().toString(36)}@example.com`);
    // Register the agent for that user with the CLI, as an operator would. PGlite is one process's
    // database: the service steps aside meanwhile (same DATA_DIR again: same keys, same store).
    if (!usePostgres) await stop(account.child);
    const registered = await new Promise<number>((resolve) => {
      const cli = spawn(
        process.execPath,
        ['--import', 'tsx', path.join(root, 'scripts/agents.ts'), 'add', 'bench-agent', agentUrl, '--secret', secret, '--user', user.userId],
        {
          cwd: root,
          env: { PATH: process.env.PATH ?? '', DATA_DIR: account.dataDir, LOG_LEVEL: 'warn', ...(database ? { DATABASE_URL: database.url } : {}) },
          stdio: ['ignore', 'ignore', 'inherit'],
        },
      );
      cli.once('exit', (code) => resolve(code ?? 1));
    });
    if (registered !== 0) throw new Error('npm run agents -- add failed');
    if (!usePostgres) {
      account = await startAccountService(accountEnv, account);
      children.push(account.child);
    }
    await waitForHttp(`${agentUrl}/health`);
    const pids = { agent: agent.pid!, account: account.child.pid! };
    const access = user.access_token;
    const proxyHealth = await fetch(`${account.url}/api/v1/agent/health`, { headers: { authorization: `Bearer ${access}` } });
    if (!proxyHealth.ok) throw new Error(`proxy /health: HTTP ${proxyHealth.status}`);

    // --- chat fan-out
    const agentTrpc = bearerTrpcClient<AgentRouter>(`${agentUrl}/trpc`, () => `Bearer ${secret}`);
    const accountTrpc = bearerTrpcClient<AccountRouter>(`${account.url}/trpc`, () => `Bearer ${access}`);
    const latencies = new Float64Array(Math.max(CHATS, LIGHT_CHATS) * EVENTS + 16);
    const counter = { n: 0 };
    const record = (event: { type: string; content?: string }) => {
      if (event.type !== 'text') return;
      const ms = latencyOfStamp(event.content);
      if (ms !== undefined && counter.n < latencies.length) latencies[counter.n++] = ms;
    };
    const send = (face: Face, via: Via, chatId: string, message: string, onData: (e: { type: string; content?: string }) => void): Promise<void> => {
      if (face === 'REST') {
        const url = via === 'direct' ? `${agentUrl}/chat` : `${account.url}/api/v1/agent/chat`;
        const authorization = via === 'direct' ? `Bearer ${secret}` : `Bearer ${access}`;
        return sse(
          url,
          { method: 'POST', headers: { 'content-type': 'application/json', authorization }, body: JSON.stringify({ message, chat_id: chatId }) },
          onData,
        );
      }
      const input = { message, chat_id: chatId };
      return via === 'direct'
        ? subscribeUntilDone((cb) => agentTrpc.chat.send.subscribe(input, cb), onData)
        : subscribeUntilDone((cb) => accountTrpc.agent.chat.send.subscribe(input, cb), onData);
    };

    console.log(
      `proxy bench: ${usePostgres ? 'PostgreSQL' : 'PGlite'}; ${LIGHT_CHATS} and ${CHATS} concurrent chats × ${EVENTS} chunks every ${INTERVAL} ms, ${ROUNDS} round(s) alternating; replay of ${REPLAY} events × ${REPLAY_ROUNDS}; transfers of ${mb(MAX_UPLOAD_BYTES).toFixed(1)} MB × ${RUNS}`,
    );
    for (const p of PATHS) {
      await bounded(
        Promise.all(Array.from({ length: 10 }, (_, i) => send(p.face, p.via, `warm-${p.face}-${p.via}-${i}`, 'warm-up', () => undefined))),
        60_000,
        `warm-up ${p.label}`,
      );
    }
    const streaming: ProxyResults['streaming'] = [];
    const added: ProxyResults['added'] = [];
    for (const chats of [LIGHT_CHATS, CHATS]) {
      const perPath = new Map<string, PhaseResult[]>();
      /** CPU µs per event of [agent, account] during a phase (from /proc/<pid>/stat, 10 ms ticks). */
      const cpu = new Map<PhaseResult, number[]>();
      for (let r = 0; r < ROUNDS; r++) {
        for (const p of inOrder(PATHS, r)) {
          const post = (chat: number) =>
            bounded(send(p.face, p.via, `b-${chats}-${p.face}-${p.via}-${r}-${chat}`, benchMessage(chat, chats), record), PHASE_TIMEOUT_MS, p.label);
          const cpuBefore = [await cpuMsOf(pids.agent), await cpuMsOf(pids.account)];
          const result = await streamPhase(p.label, pids.agent, post, latencies, counter, chats, { account: pids.account });
          const cpuAfter = [await cpuMsOf(pids.agent), await cpuMsOf(pids.account)];
          cpu.set(
            result,
            cpuAfter.map((v, k) => (v - cpuBefore[k]!) * (1000 / Math.max(1, result.events))),
          );
          console.log(
            `  ${chats} chats, ${p.label}: ${result.eventsPerSecond} events/s, median ${result.medianMs} ms, p99 ${result.p99Ms} ms, RSS agent ${result.peakRssMb} MB, account ${result.otherPeakRssMb?.account} MB${result.errors ? `, errors ${result.errors}` : ''}`,
          );
          perPath.set(p.label, [...(perPath.get(p.label) ?? []), result]);
          await new Promise((res) => setTimeout(res, 300));
        }
      }
      for (const p of PATHS) {
        const rounds = perPath.get(p.label)!;
        streaming.push({
          chats,
          ...p,
          eventsPerSecond: median(rounds.map((x) => x.eventsPerSecond)),
          agentCpuUsPerEvent: Math.round(median(rounds.map((x) => cpu.get(x)![0]!))),
          accountCpuUsPerEvent: Math.round(median(rounds.map((x) => cpu.get(x)![1]!))),
          medianMs: median(rounds.map((x) => x.medianMs)),
          p99Ms: median(rounds.map((x) => x.p99Ms)),
          agentPeakRssMb: Math.max(...rounds.map((x) => x.peakRssMb)),
          accountPeakRssMb: Math.max(...rounds.map((x) => x.otherPeakRssMb?.account ?? 0)),
          errors: rounds.reduce((n, x) => n + x.errors, 0),
          rounds,
        });
      }
      for (const face of ['REST', 'tRPC'] as const) {
        const of = (via: Via) => perPath.get(PATHS.find((p) => p.face === face && p.via === via)!.label)!;
        const perRound = of('proxy').map((proxy, i) => ({
          medianMs: round(proxy.medianMs - of('direct')[i]!.medianMs),
          p99Ms: round(proxy.p99Ms - of('direct')[i]!.p99Ms),
        }));
        added.push({ chats, face, medianMs: median(perRound.map((d) => d.medianMs)), p99Ms: median(perRound.map((d) => d.p99Ms)), perRound });
      }
    }

    // --- reconnect replay: a finished run's whole buffer, read back with `Last-Event-ID: <run>-0`.
    const replayOf = (face: Face, via: Via, chatId: string, lastEventId: string, onData: (e: { type: string; content?: string }) => void): Promise<void> => {
      if (face === 'REST') {
        const url = via === 'direct' ? `${agentUrl}/chat/${chatId}/stream` : `${account.url}/api/v1/agent/chat/${chatId}/stream`;
        return sse(
          url,
          { method: 'GET', headers: { authorization: via === 'direct' ? `Bearer ${secret}` : `Bearer ${access}`, 'last-event-id': lastEventId } },
          onData,
        );
      }
      const input = { chat_id: chatId, lastEventId };
      return via === 'direct'
        ? subscribeUntilDone((cb) => agentTrpc.chat.stream.subscribe(input, cb), onData)
        : subscribeUntilDone((cb) => accountTrpc.agent.chat.stream.subscribe(input, cb), onData);
    };
    const replays = new Map<string, Array<{ result: ReplayResult; cpu: number[]; ok: boolean }>>();
    for (let r = 0; r < REPLAY_ROUNDS; r++) {
      const chatId = `replay-${r}`;
      let runId: string | undefined;
      let buffered = 0;
      await bounded(
        sse(
          `${agentUrl}/chat`,
          {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
            body: JSON.stringify({ message: 'replay-run', chat_id: chatId }),
          },
          (_event, id) => {
            if (id === undefined) return;
            buffered++;
            runId ??= parseEventId(id)?.runId;
          },
        ),
        120_000,
        'replay run',
      );
      if (!runId) throw new Error('replay run: no event id');
      await sleep(300);
      for (const p of inOrder(REPLAY_PATHS, r)) {
        const cpuBefore = [await cpuMsOf(pids.agent), await cpuMsOf(pids.account)];
        const result = await timedReplay(
          (onData) => replayOf(p.face, p.via, chatId, `${runId}-0`, onData),
          (event) => event.type === 'done',
          REPLAY_TIMEOUT_MS,
        );
        const cpuAfter = [await cpuMsOf(pids.agent), await cpuMsOf(pids.account)];
        const ok = result.complete && result.events === buffered;
        if (!ok) console.error(`  replay, ${p.label}: ${result.events} of ${buffered} events${result.error ? ` (${result.error})` : ''}`);
        replays.set(p.label, [
          ...(replays.get(p.label) ?? []),
          { result, ok, cpu: cpuAfter.map((v, k) => (v - cpuBefore[k]!) * (1000 / Math.max(1, result.events))) },
        ]);
        console.log(`  replay of ${buffered} events, ${p.label}: ${result.ms} ms to done, ${Math.round(result.events / (result.ms / 1000))} events/s`);
        await sleep(200);
      }
    }
    const replay: ProxyResults['replay'] = REPLAY_PATHS.map((p) => {
      const rounds = replays.get(p.label)!;
      const good = rounds.filter((x) => x.ok);
      const direct = replays.get(REPLAY_PATHS.find((d) => d.face === p.face && d.via === 'direct')!.label)!;
      const ratios = rounds.flatMap((x, i) => (x.ok && direct[i]!.ok ? [x.result.ms / direct[i]!.result.ms] : []));
      const of = (f: (x: (typeof rounds)[number]) => number) => (good.length ? median(good.map(f)) : NaN);
      return {
        ...p,
        events: of((x) => x.result.events),
        msToDone: round(of((x) => x.result.ms)),
        eventsPerSecond: Math.round(of((x) => x.result.events / (x.result.ms / 1000))),
        vsDirect: ratios.length ? round(median(ratios)) : NaN,
        agentCpuUsPerEvent: Math.round(of((x) => x.cpu[0]!)),
        accountCpuUsPerEvent: Math.round(of((x) => x.cpu[1]!)),
        errors: rounds.length - good.length,
        rounds: rounds.map((x) => x.result),
      };
    });

    // --- transfers: the agent directly vs the REST proxy, alternating run by run.
    const size = MAX_UPLOAD_BYTES;
    const source = path.join(scratch, 'source.bin');
    await writeFile(source, randomBytes(size));
    const bases = { direct: { base: new URL(agentUrl), token: secret }, proxy: { base: new URL(`${account.url}/api/v1/agent`), token: access } };
    await upload(bases.direct.base, bases.direct.token, source, size, 'warm.bin');
    await download(bases.proxy.base, bases.proxy.token, 'uploads/warm.bin');
    await upload(bases.proxy.base, bases.proxy.token, source, size, 'warm-proxy.bin');
    const raw = { up: { direct: [] as number[], proxy: [] as number[] }, down: { direct: [] as number[], proxy: [] as number[] } };
    const growth = { up: [0, 0], down: [0, 0] };
    const pidList = [pids.agent, pids.account];
    for (let i = 0; i < RUNS; i++) {
      for (const via of (i % 2 === 0 ? ['direct', 'proxy'] : ['proxy', 'direct']) as Via[]) {
        const { base, token } = bases[via];
        const up = await withRss(pidList, () => timed(() => bounded(upload(base, token, source, size, 'up.bin'), 120_000, 'upload')));
        raw.up[via].push(mbps(size, up.result.ms));
        await rm(path.join(workspace, 'uploads/up.bin'));
        const down = await withRss(pidList, () => timed(() => bounded(download(base, token, 'uploads/warm.bin'), 120_000, 'download')));
        if (down.result.result !== size) throw new Error(`downloaded ${down.result.result} bytes`);
        raw.down[via].push(mbps(size, down.result.ms));
        if (via === 'proxy') {
          growth.up = growth.up.map((g, k) => Math.max(g, up.growth[k]!));
          growth.down = growth.down.map((g, k) => Math.max(g, down.growth[k]!));
        }
      }
    }
    const transfer = (name: string, key: 'up' | 'down') => {
      const directMbps = Math.round(median(raw[key].direct));
      const proxyMbps = Math.round(median(raw[key].proxy));
      return {
        case: name,
        directMbps,
        proxyMbps,
        ratio: round(proxyMbps / directMbps),
        agentRssGrowthMb: round(mb(growth[key][0]!)),
        accountRssGrowthMb: round(mb(growth[key][1]!)),
        raw: { direct: raw[key].direct.map(Math.round), proxy: raw[key].proxy.map(Math.round) },
      };
    };

    return {
      date: new Date().toISOString(),
      store: usePostgres ? 'postgres' : 'pglite',
      params: {
        lightChats: LIGHT_CHATS,
        chats: CHATS,
        events: EVENTS,
        intervalMs: INTERVAL,
        rounds: ROUNDS,
        fileBytes: size,
        runs: RUNS,
        replayEvents: REPLAY,
        replayRounds: REPLAY_ROUNDS,
      },
      streaming,
      added,
      replay,
      transfers: [transfer('upload 50 MiB', 'up'), transfer('download 50 MiB', 'down')],
    };
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  }
}

export function printProxyTables(r: ProxyResults): void {
  console.log(
    `\nChat, agent directly vs through the account proxy (${r.params.events} chunks per chat, ${r.params.intervalMs} ms apart; medians of ${r.params.rounds} round(s); chunk → client per event):`,
  );
  console.log(
    table(
      ['chats', 'path', 'events/s', 'median ms', 'p99 ms', 'CPU µs/event agent', 'CPU µs/event account', 'agent peak RSS MB', 'account peak RSS MB', 'errors'],
      r.streaming.map((s) => [
        s.chats,
        s.label,
        s.eventsPerSecond,
        s.medianMs,
        s.p99Ms,
        s.agentCpuUsPerEvent,
        s.accountCpuUsPerEvent,
        s.agentPeakRssMb,
        s.accountPeakRssMb,
        s.errors,
      ]),
    ),
  );
  console.log(`\nThe proxy's added latency per event (proxy − direct within a round, median over ${r.params.rounds} round(s)):`);
  console.log(
    table(
      ['chats', 'face', 'median ms', 'p99 ms', 'per round (median / p99)'],
      r.added.map((a) => [a.chats, a.face, a.medianMs, a.p99Ms, a.perRound.map((d) => `${d.medianMs} / ${d.p99Ms}`).join(', ')]),
    ),
  );
  console.log(
    `\nReconnect replay of a finished run (${r.params.replayEvents} model chunks, then done) with Last-Event-ID <run>-0, timed to done (medians of ${r.params.replayRounds} round(s), a fresh run per round, alternating):`,
  );
  console.log(
    table(
      ['path', 'events', 'ms to done', 'events/s', 'time × direct', 'CPU µs/event agent', 'CPU µs/event account', 'errors'],
      r.replay.map((x) => [x.label, x.events, x.msToDone, x.eventsPerSecond, `${x.vsDirect}×`, x.agentCpuUsPerEvent, x.accountCpuUsPerEvent, x.errors]),
    ),
  );
  console.log(
    `\nTransfers, agent directly vs the REST proxy /api/v1/agent/files (medians of ${r.params.runs}, alternating; RSS growth during the proxy runs):`,
  );
  console.log(
    table(
      ['transfer', 'direct MB/s', 'proxy MB/s', 'proxy / direct', 'agent RSS growth MB', 'account RSS growth MB'],
      r.transfers.map((t) => [t.case, t.directMbps, t.proxyMbps, `${t.ratio}×`, t.agentRssGrowthMb, t.accountRssGrowthMb]),
    ),
  );
}

await runIfEntry(import.meta.url, 'proxy.json', proxyBench, printProxyTables);
