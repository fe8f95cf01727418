/**
 * `npm run bench`: every figure in one run, printed as tables and written to bench/results/.
 *
 * 1. Peer, side by side (bench/peer.ts): this service vs Better Auth and vs the baseline commit
 *    (fca629c, before session bookkeeping) on the same machine and the same PostgreSQL server, runs
 *    alternating, BENCH_ROUNDS rounds (3), medians and each round's own ratio, with the bare
 *    express and node:http ceilings in the same rounds; goals in PEER_GOALS, every round.
 * 2. Scale-out: two instances sharing only PostgreSQL and Redis on loopback, load split over
 *    both vs all on one; then the rate limit checked exact across the two.
 * 3. Growth (bench/growth.ts): guest sign-in, refresh and /auth/me with 1×, 10×, 100× users and
 *    sessions seeded, and agent history reads with 1×, 10×, 100× chat entries seeded.
 * 4. Agent: workspace upload/download (bench/files.ts, run as is), and the chat figures
 *    (bench/chat.ts) when the chat runtime is present.
 * 5. Agent through the account proxy (bench/proxy.ts): chat fan-out, reconnect replay and
 *    transfers directly vs through the REST and tRPC proxies; the proxy's added latency per
 *    event, replay time to `done`, MB/s ratio.
 * 6. Idle agents (bench/agents.ts): 20 agent processes of this build and 20 of the baseline's
 *    (before the agent bundle), cold start (wall and CPU) and idle RSS (mean, max) side by side.
 * 7. First token (bench/first-token.ts): sign-in to the first word of the reply for a new guest
 *    with the warm pool on and off, and for a returning guest whose agent runs; ratios (goal ≤ 2×).
 * Without PostgreSQL everything runs on PGlite and says so; scale-out, which needs a shared
 * server, is skipped with a note. BENCH_QUICK=1 makes every part smaller (about 4 minutes).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import path from 'node:path';
import type autocannon from 'autocannon';
import { createTestDatabase, postgresReachable } from '../test/support/postgres.js';
import { redisReachable } from '../test/support/redis.js';
import { freePort } from '../server/common/net.js';
import { growthBench, printGrowthTables } from './growth.js';
import { printProxyTables, proxyBench } from './proxy.js';
import { agentsBench, printAgentsTables } from './agents.js';
import { firstTokenBench, printFirstTokenTables } from './first-token.js';
import { jsonHeaders, startAccountService } from './lib/account.js';
import { load, medianRow, root, stop, table, writeResults, type Row } from './lib/harness.js';
import { peerComparison, printPeerTables } from './peer.js';

/** BENCH_QUICK=1: 3 s runs, one round, smaller agent and growth loads (each bench reads it too). */
const QUICK = process.env.BENCH_QUICK === '1';
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 3 : 5));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const CONNECTIONS = 32;
const run = (name: string, opts: autocannon.Options) => load(name, { connections: CONNECTIONS, duration: SECONDS, ...opts });
const json = jsonHeaders;
const runId = Date.now().toString(36);
/** BENCH_ONLY=peer,scale,growth,agent,proxy,agents,first-token runs a subset (all by default). */
const only = new Set((process.env.BENCH_ONLY ?? 'peer,scale,growth,agent,proxy,agents,first-token').split(','));

const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<unknown>> = [];

async function startOurs(env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const started = await startAccountService(env);
  children.push(started.child);
  cleanups.push(() => rm(started.dataDir, { recursive: true, force: true }));
  return started;
}

async function scaleOut(usePostgres: boolean) {
  if (!usePostgres) return { skipped: 'no PostgreSQL reachable: two instances need a shared server' };
  // A database of its own (index 9 of the local server): the scale-out's thousands of guests would
  // otherwise fill the service-wide guest counter that tests sharing this Redis read.
  let redisUrl = (await redisReachable()) ? (process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/9') : undefined;
  if (!redisUrl) {
    // A private redis-server on a free loopback port, when the binary exists.
    const port = await freePort();
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const ok = await new Promise<boolean>((resolve) => {
      child.once('error', () => resolve(false));
      setTimeout(() => resolve(child.exitCode === null), 500);
    });
    if (!ok) return { skipped: 'no Redis reachable and no redis-server binary' };
    children.push(child);
    redisUrl = `redis://127.0.0.1:${port}`;
  }
  const database = await createTestDatabase();
  cleanups.push(() => database.drop());
  // Real per-client limits (multiplier 1); the load comes from many addresses (X-Forwarded-For
  // from a trusted loopback proxy), so it is not refused, and the exactness check uses one
  // address. The service-wide cap on new guests would stop a load of new guests after 2000: lifted.
  const env = { DATABASE_URL: database.url, REDIS_URL: redisUrl, RATE_LIMIT_MULTIPLIER: '1', TRUST_PROXY: 'loopback', GUEST_SIGNUPS_PER_HOUR: '100000000' };
  const a = await startOurs(env);
  const b = await startOurs(env);
  let device = 0;
  const signIn = (url: string): autocannon.Options => ({
    url,
    requests: [
      {
        method: 'POST',
        path: '/api/v1/auth/guest',
        setupRequest: (req) => ({
          ...req,
          headers: { ...json, 'x-forwarded-for': `10.${(device >> 16) & 255}.${(device >> 8) & 255}.${device & 255}` },
          body: JSON.stringify({ device_id: `scale-device-${runId}-${device++}` }),
        }),
      },
    ],
  });
  const both = async (name: string) => {
    const [ra, rb] = await Promise.all([
      load(`${name} (instance A)`, { ...signIn(a.url), connections: CONNECTIONS / 2, duration: SECONDS, quiet: true }),
      load(`${name} (instance B)`, { ...signIn(b.url), connections: CONNECTIONS / 2, duration: SECONDS, quiet: true }),
    ]);
    const row = {
      ...ra,
      name,
      requestsPerSecond: ra.requestsPerSecond + rb.requestsPerSecond,
      total: ra.total + rb.total,
      non2xx: ra.non2xx + rb.non2xx,
      p50: Math.max(ra.p50, rb.p50),
      p99: Math.max(ra.p99, rb.p99),
    };
    console.log(`  ${name}: ${row.requestsPerSecond}/s (A ${ra.requestsPerSecond} + B ${rb.requestsPerSecond})${row.non2xx ? ` non-2xx ${row.non2xx}` : ''}`);
    return row;
  };
  await load('warm', { ...signIn(a.url), duration: 2, quiet: true });
  await load('warm', { ...signIn(b.url), duration: 2, quiet: true });
  const one: Row[] = [];
  const two: Row[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    one.push(await run('guest sign-in, one instance', signIn(a.url)));
    two.push(await both('guest sign-in, two instances'));
  }
  // Exactness: 24 sign-ins from one fresh address, alternating A and B → exactly 10 allowed.
  const ip = `192.0.2.${Math.floor(Math.random() * 250) + 1}`;
  const statuses: number[] = [];
  for (let i = 0; i < 24; i++) {
    const res = await fetch(`${(i % 2 ? b : a).url}/api/v1/auth/guest`, {
      method: 'POST',
      headers: { ...json, 'x-forwarded-for': ip },
      body: JSON.stringify({ device_id: `exact-device-${runId}-${i}` }),
    });
    statuses.push(res.status);
  }
  const allowed = statuses.filter((s) => s === 200).length;
  await Promise.all([stop(a.child), stop(b.child)]);
  const oneRow = medianRow('one instance', one);
  const twoRow = medianRow('two instances', two);
  return {
    one: oneRow,
    two: twoRow,
    ratio: Math.round((twoRow.requestsPerSecond / oneRow.requestsPerSecond) * 100) / 100,
    rateLimit: { limit: 10, attempts: 24, allowed, exact: allowed === 10 },
    redis: redisUrl.replace(/\/\/.*@/, '//'),
  };
}

async function agentFigures() {
  const out: Record<string, unknown> = {};
  const runScript = (script: string, args: string[] = []) =>
    new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, script), ...args], { cwd: root, stdio: 'inherit', env: process.env });
      children.push(child);
      child.once('exit', (code) => resolve(code ?? 1));
    });
  console.log('agent: workspace files (bench/files.ts)');
  if ((await runScript('bench/files.ts')) === 0) out.files = JSON.parse(await readFile(path.join(root, 'bench/results/files.json'), 'utf8'));
  if (existsSync(path.join(root, 'bench/chat.ts'))) {
    // bench/chat.ts (issue 6) as is, smaller than its own default run; its result file is kept.
    const own = path.join(root, 'bench/results/chat.json');
    const saved = existsSync(own) ? await readFile(own, 'utf8') : undefined;
    console.log('agent: SSE fan-out, chunk-to-client latency, RSS, reconnect replay (bench/chat.ts)');
    const args = ['--chats', process.env.BENCH_CHATS ?? '100', '--events', '50', '--interval', '100', '--replay', '10000'];
    if ((await runScript('bench/chat.ts', args)) === 0) out.chat = JSON.parse(await readFile(own, 'utf8'));
    if (saved !== undefined) await writeFile(own, saved);
  } else {
    out.chat = { skipped: 'bench/chat.ts not present (chat runtime not merged)' };
  }
  return out;
}

async function main() {
  const usePostgres = await postgresReachable();
  const store = usePostgres
    ? 'PostgreSQL (127.0.0.1:5432 or TEST_DATABASE_URL; a fresh database per server)'
    : 'PGlite (no PostgreSQL reachable): both services on embedded PGlite';
  console.log(
    `npm run bench: ${store}; ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} alternating rounds, medians; ${cpus().length} cores, Node ${process.version}`,
  );
  console.log('The machine may be shared: compare rows of one run, not runs.\n');
  const started = Date.now();
  const results: Record<string, unknown> = {
    date: new Date().toISOString(),
    store: usePostgres ? 'postgres' : 'pglite',
    connections: CONNECTIONS,
    secondsPerRun: SECONDS,
    rounds: ROUNDS,
    cores: cpus().length,
    node: process.version,
  };
  try {
    console.log('== peer: this service vs Better Auth');
    const peer = only.has('peer') ? await peerComparison({ seconds: SECONDS, rounds: ROUNDS, usePostgres, ceilings: true, runId }) : undefined;
    results.peer = peer;
    console.log('\n== scale-out');
    const scale = only.has('scale') ? await scaleOut(usePostgres) : { skipped: 'not selected (BENCH_ONLY)' };
    results.scaleOut = scale;
    console.log('\n== growth');
    const grow = only.has('growth') ? await growthBench() : undefined;
    results.growth = grow ?? { skipped: 'not selected (BENCH_ONLY)' };
    if (grow) await writeResults('growth.json', grow);
    console.log('\n== agent');
    results.agent = only.has('agent') ? await agentFigures() : { skipped: 'not selected (BENCH_ONLY)' };
    console.log('\n== agent through the account proxy (bench/proxy.ts)');
    const proxy = only.has('proxy') ? await proxyBench() : undefined;
    results.proxy = proxy ?? { skipped: 'not selected (BENCH_ONLY)' };
    if (proxy) await writeResults('proxy.json', proxy);
    console.log('\n== idle agents, this build vs the baseline (bench/agents.ts)');
    const agents = only.has('agents') ? await agentsBench() : undefined;
    results.agents = agents
      ? { rows: agents.rows, ratios: agents.ratios, count: agents.count, idleSeconds: agents.idleSeconds, baseline: agents.baseline }
      : { skipped: 'not selected (BENCH_ONLY)' };
    if (agents) await writeResults('agents.json', agents);
    console.log('\n== first token, warm pool on and off (bench/first-token.ts)');
    const firstToken = only.has('first-token') ? await firstTokenBench() : undefined;
    results.firstToken = firstToken ? { rows: firstToken.rows, ratios: firstToken.ratios } : { skipped: 'not selected (BENCH_ONLY)' };
    if (firstToken) await writeResults('first-token.json', firstToken);

    // The tables.
    console.log('\n');
    if (peer) printPeerTables(peer, { seconds: SECONDS, rounds: ROUNDS, usePostgres });
    if ('skipped' in scale) console.log(`\nScale-out: skipped (${scale.skipped})`);
    else {
      console.log(`\nScale-out (guest sign-in, medians of ${ROUNDS}; PostgreSQL + Redis shared, nothing else):`);
      console.log(
        table(
          ['setup', 'req/s', 'p99 ms'],
          [
            ['one instance', scale.one.requestsPerSecond, scale.one.p99],
            ['two instances', scale.two.requestsPerSecond, scale.two.p99],
          ],
        ),
      );
      console.log(
        `two/one = ${scale.ratio}×; rate limit across both: ${scale.rateLimit.allowed} of ${scale.rateLimit.attempts} allowed for a limit of 10 → ${scale.rateLimit.exact ? 'exact' : 'NOT EXACT'}`,
      );
    }
    if (grow) printGrowthTables(grow);
    else console.log('\nGrowth: skipped (not selected)');
    const files = (results.agent as { files?: { transfers?: Array<{ case: string; mbps: number; rssGrowthMB: number; ceilingMbps: number }> } }).files;
    if (files?.transfers) {
      console.log('\nAgent workspace files (bench/files.ts, agent directly, medians of 5):');
      console.log(
        table(
          ['transfer', 'MB/s', 'RSS growth MB', 'fs copy ceiling MB/s'],
          files.transfers.map((t) => [t.case, Math.round(t.mbps), t.rssGrowthMB.toFixed(1), Math.round(t.ceilingMbps)]),
        ),
      );
    }
    const chat = (
      results.agent as { chat?: { skipped?: string; streaming?: Array<Record<string, number | string>>; replay?: Array<Record<string, number | string>> } }
    ).chat;
    if (chat?.skipped) console.log(`Agent chat: skipped (${chat.skipped})`);
    else if (chat?.streaming) {
      console.log('\nAgent chat streaming (bench/chat.ts; chunk → client data: line):');
      console.log(
        table(
          ['server', 'chats', 'events/s', 'median ms', 'p99 ms', 'peak RSS MB'],
          chat.streaming.map((r) => [r.server!, r.chats!, r.eventsPerSecond!, r.medianMs!, r.p99Ms!, r.peakRssMb!]),
        ),
      );
      if (chat.replay)
        console.log(
          table(
            ['reconnect replay', 'events', 'ms'],
            chat.replay.map((r) => [r.server!, r.events!, r.ms!]),
          ),
        );
    }
    if (proxy) printProxyTables(proxy);
    if (agents) printAgentsTables(agents);
    if (firstToken) printFirstTokenTables(firstToken);
    console.log(`\ntotal ${Math.round((Date.now() - started) / 1000)} s`);
    await mkdir(path.join(root, 'bench/results'), { recursive: true });
    await writeFile(path.join(root, 'bench/results/run.json'), `${JSON.stringify(results, null, 2)}\n`);
    console.log('written: bench/results/run.json');
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  }
}

await main();
