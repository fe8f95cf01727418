/**
 * `npm run bench`: every figure in one run, printed as tables and written to bench/results/.
 *
 * 1. Peer, side by side: this service vs Better Auth (bench/peers/better-auth.ts, anonymous
 *    plugin) on the same machine and the same PostgreSQL server (a fresh database each), same
 *    autocannon settings (32 connections, BENCH_SECONDS per run, default 5), runs alternating
 *    ours/peer, 3 rounds, medians; ratios printed (goal ≥ 2×):
 *      guest sign-in (new device)  vs  anonymous sign-in
 *      refresh (each token once)   vs  session read (GET /api/auth/get-session)
 *      protected GET /auth/me      vs  session-checked GET /me (auth.api.getSession)
 *    With the ceilings in the same rounds: bare express and bare node:http fed the /auth/me
 *    request stream, and a baseline: this service as it was before session bookkeeping
 *    (BENCH_TOKENS_BASELINE, bench/lib/baseline.ts), whose three paths this build must stay within
 *    10 % of. Each round's own ratio is printed beside the medians' (the goal holds in every round).
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
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import type autocannon from 'autocannon';
import { createTestDatabase, postgresReachable, postgresServerUrl, type TestDatabase } from '../test/support/postgres.js';
import { redisReachable } from '../test/support/redis.js';
import { freePort } from '../server/common/net.js';
import { growthBench, printGrowthTables } from './growth.js';
import { printProxyTables, proxyBench } from './proxy.js';
import { agentsBench, printAgentsTables } from './agents.js';
import { firstTokenBench, printFirstTokenTables } from './first-token.js';
import { jsonHeaders, ourWorkload as ourAccountWorkload, startAccountService } from './lib/account.js';
import { baselineTree, shortCommit } from './lib/baseline.js';
import { type Conditions, conditionsProbe } from './lib/conditions.js';
import { load, medianRow, root, spawnServer, stop, table, waitForHttp, writeResults, type Row } from './lib/harness.js';

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

/**
 * The account service before session bookkeeping (sessions' last use, the activity log): main
 * just before account self-service was merged. This build's refresh and /auth/me run beside it in
 * the peer rounds and must stay within 10 % of it.
 */
const TOKENS_BASELINE = process.env.BENCH_TOKENS_BASELINE ?? 'fca629c';
type Side = 'ours' | 'baseline' | 'peer';
const SIDES: Side[] = ['ours', 'peer', 'baseline'];
type Path = 'signin' | 'refresh' | 'me';
const PATHS: Path[] = ['signin', 'refresh', 'me'];
const PATH_LABELS: Record<Path, string> = { signin: 'POST /auth/guest (new device)', refresh: 'POST /auth/refresh', me: 'GET /auth/me' };
const PATH_NAMES: Record<Path, string> = {
  signin: 'sign-in: guest (new device) vs anonymous',
  refresh: 'refresh vs session read',
  me: 'protected call vs session-checked call',
};

const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<unknown>> = [];

async function startOurs(env: Record<string, string>, tree?: string): Promise<{ url: string; child: ChildProcess }> {
  const started = await startAccountService(env, undefined, tree);
  children.push(started.child);
  cleanups.push(() => rm(started.dataDir, { recursive: true, force: true }));
  return started;
}

/** Our side of each comparison: request specs over a shared pool of pairs. */
const ourWorkload = (url: string) => ourAccountWorkload(url, runId);

function peerWorkload(url: string) {
  const cookies: string[] = [];
  let i = 0;
  const withCookie = (p: string) => ({
    method: 'GET',
    path: p,
    setupRequest: (req: autocannon.Request) => ({ ...req, headers: { cookie: cookies[i++ % cookies.length]! } }),
  });
  return {
    cookies,
    signIn: {
      url,
      requests: [
        {
          method: 'POST',
          path: '/api/auth/sign-in/anonymous',
          headers: { ...json, origin: url },
          body: '{}',
          onResponse: (status: number, _body: string, _ctx: unknown, headers: Record<string, string>) => {
            const setCookie = headers['set-cookie'];
            if (status === 200 && setCookie && cookies.length < 256) cookies.push(String(setCookie).split(';')[0]!);
          },
        },
      ],
    } as autocannon.Options,
    sessionRead: { url, requests: [withCookie('/api/auth/get-session')] } as autocannon.Options,
    me: { url, requests: [withCookie('/me')] } as autocannon.Options,
  };
}

async function peerComparison(usePostgres: boolean) {
  const databases: TestDatabase[] = [];
  const db = async () => {
    const d = await createTestDatabase();
    databases.push(d);
    cleanups.push(() => d.drop());
    return d.url;
  };
  const ours = await startOurs(usePostgres ? { DATABASE_URL: await db() } : {});
  const base = await startOurs(usePostgres ? { DATABASE_URL: await db() } : {}, await baselineTree(TOKENS_BASELINE, { build: false }));
  const peerPort = await freePort();
  const peerDir = await mkdtemp(path.join(tmpdir(), 'bench-peer-'));
  cleanups.push(() => rm(peerDir, { recursive: true, force: true }));
  const peerChild = spawnServer('bench/peers/better-auth.ts', [String(peerPort)], usePostgres ? { DATABASE_URL: await db() } : { PGLITE_DIR: peerDir });
  children.push(peerChild);
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const [expressPort, httpPort] = [await freePort(), await freePort()];
  children.push(
    spawnServer('bench/ceiling-server.ts', ['express', String(expressPort)], {}),
    spawnServer('bench/ceiling-server.ts', ['http', String(httpPort)], {}),
  );
  await Promise.all([waitForHttp(`${peerUrl}/health`), waitForHttp(`http://127.0.0.1:${expressPort}/`), waitForHttp(`http://127.0.0.1:${httpPort}/`)]);

  const o = ourWorkload(ours.url);
  const b = ourWorkload(base.url);
  const p = peerWorkload(peerUrl);
  const workloads: Record<Side, { signIn: autocannon.Options; refresh: autocannon.Options; me: autocannon.Options }> = {
    ours: o,
    baseline: b,
    peer: { signIn: p.signIn, refresh: p.sessionRead, me: p.me },
  };
  const names: Record<Side, Record<Path, string>> = {
    ours: { signin: 'ours POST /auth/guest (new device)', refresh: 'ours POST /auth/refresh', me: 'ours GET /auth/me' },
    baseline: { signin: 'baseline POST /auth/guest (new device)', refresh: 'baseline POST /auth/refresh', me: 'baseline GET /auth/me' },
    peer: { signin: 'peer POST /api/auth/sign-in/anonymous', refresh: 'peer GET /api/auth/get-session', me: 'peer GET /me (getSession)' },
  };
  const options = (side: Side, what: Path) => workloads[side][what === 'signin' ? 'signIn' : what];
  // Warm-up (not measured), every side alike.
  const warm = Math.min(2, SECONDS);
  for (const what of ['signin', 'me', 'refresh'] as const) {
    for (const side of SIDES) await load(`warm-up ${names[side][what]}`, { ...options(side, what), connections: CONNECTIONS, duration: warm, quiet: true });
    if (what === 'signin') for (const w of [o, b]) w.prepare();
  }

  const raw: Record<string, Array<Row & Partial<Conditions>>> = {};
  const add = (key: string, row: Row & Partial<Conditions>) => (raw[key] ??= []).push(row);
  const probe = await conditionsProbe(usePostgres ? postgresServerUrl() : undefined);
  cleanups.push(async () => probe.close());
  const ceilingStream = (port: number) => ({ url: `http://127.0.0.1:${port}`, requests: [o.meRequest] });
  for (let round = 0; round < ROUNDS; round++) {
    console.log(`round ${round + 1}/${ROUNDS}`);
    // Each side goes first, second and last in turn, so what one leaves behind (a vacuum, a
    // checkpoint, a warm cache) is not always charged to the same side.
    const order = SIDES.map((_, i) => SIDES[(i + round) % SIDES.length]!);
    const measure = async (what: Path) => {
      for (const side of order) add(`${what}:${side}`, await probe.around(() => run(names[side][what], options(side, what))));
    };
    await measure('signin');
    for (const w of [o, b]) w.prepare();
    await measure('refresh');
    add('ceiling:http', await run('bare node:http', ceilingStream(httpPort)));
    add('ceiling:express', await run('bare express', ceilingStream(expressPort)));
    await measure('me');
  }
  const m = (k: string, name: string) => medianRow(name, raw[k]!);
  const ratio = (a: number, b: number) => Math.round((a / Math.max(1, b)) * 100) / 100;
  const compare = (what: Path, other: Side) => {
    const [ourRow, otherRow] = [m(`${what}:ours`, 'ours'), m(`${what}:${other}`, other)];
    // Rounds are where the noise shows: each round's own ratio, not only the medians'.
    const rounds = ourRow.runs.map((r, i) => ratio(r, otherRow.runs[i]!));
    return { ours: ourRow, [other]: otherRow, ratio: ratio(ourRow.requestsPerSecond, otherRow.requestsPerSecond), rounds };
  };
  const comparisons = PATHS.map((what) => ({ what: PATH_NAMES[what], ...compare(what, 'peer') })) as Array<{
    what: string;
    ours: Row & { runs: number[] };
    peer: Row & { runs: number[] };
    ratio: number;
    rounds: number[];
  }>;
  const sinceBaseline = {
    commit: shortCommit(TOKENS_BASELINE),
    rows: PATHS.map((what) => ({ what: PATH_LABELS[what], ...compare(what, 'baseline') })) as Array<{
      what: string;
      ours: Row & { runs: number[] };
      baseline: Row & { runs: number[] };
      ratio: number;
      rounds: number[];
    }>,
  };
  const ceilings = { http: m('ceiling:http', 'bare node:http'), express: m('ceiling:express', 'bare express') };
  // Each round of refresh vs session read beside what the machine was doing then.
  const refreshRounds = raw['refresh:ours']!.map((ourRow, i) => {
    const peerRow = raw['refresh:peer']![i]!;
    return {
      round: i + 1,
      ours: ourRow.requestsPerSecond,
      peer: peerRow.requestsPerSecond,
      ratio: ratio(ourRow.requestsPerSecond, peerRow.requestsPerSecond),
      loadAverage: [ourRow.loadAverage, peerRow.loadAverage],
      checkpoint: [ourRow.checkpoint, peerRow.checkpoint],
    };
  });
  const mePercentOfExpress = Math.round((comparisons[2]!.ours.requestsPerSecond / ceilings.express.requestsPerSecond) * 1000) / 10;
  await stop(peerChild);
  await Promise.all([stop(ours.child), stop(base.child)]);
  return { comparisons, sinceBaseline, refreshRounds, ceilings, mePercentOfExpress };
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
    const peer = only.has('peer') ? await peerComparison(usePostgres) : undefined;
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
    if (peer) {
      console.log(`Peer (medians of ${ROUNDS} alternating ${SECONDS} s runs, ${CONNECTIONS} connections; ${usePostgres ? 'PostgreSQL' : 'PGlite'}):`);
      console.log(
        table(
          ['comparison', 'ours req/s', 'ours p99 ms', 'Better Auth req/s', 'Better Auth p99 ms', 'ratio', 'each round', '≥ 2× every round'],
          peer.comparisons.map((c) => [
            c.what,
            c.ours.requestsPerSecond,
            c.ours.p99,
            c.peer.requestsPerSecond,
            c.peer.p99,
            `${c.ratio}×`,
            c.rounds.map((r) => `${r}×`).join(' '),
            Math.min(...c.rounds) >= 2 ? 'met' : 'MISSED',
          ]),
        ),
      );
      console.log('\nRefresh vs session read, round by round, with what the machine was doing (1-min load average; a PostgreSQL checkpoint during the run):');
      console.log(
        table(
          ['round', 'ours req/s', 'Better Auth req/s', 'ratio', 'load ours / peer', 'checkpoint ours / peer'],
          peer.refreshRounds.map((r) => [
            r.round,
            r.ours,
            r.peer,
            `${r.ratio}×`,
            r.loadAverage.join(' / '),
            r.checkpoint.map((c) => (c ? 'yes' : 'no')).join(' / '),
          ]),
        ),
      );
      console.log(`\nThis build vs before session bookkeeping (${peer.sinceBaseline.commit}), same rounds:`);
      console.log(
        table(
          ['path', 'this build req/s', 'baseline req/s', 'ratio', 'each round', 'within 10 %'],
          peer.sinceBaseline.rows.map((r) => [
            r.what,
            r.ours.requestsPerSecond,
            r.baseline.requestsPerSecond,
            `${r.ratio}×`,
            r.rounds.map((x) => `${x}×`).join(' '),
            r.ratio >= 0.9 ? 'yes' : 'NO',
          ]),
        ),
      );
      console.log(
        table(
          ['ceiling (same /auth/me request stream)', 'req/s', 'p99 ms'],
          [
            ['bare node:http', peer.ceilings.http.requestsPerSecond, peer.ceilings.http.p99],
            ['bare express', peer.ceilings.express.requestsPerSecond, peer.ceilings.express.p99],
          ],
        ),
      );
      console.log(`GET /auth/me = ${peer.mePercentOfExpress}% of bare express (target ≥ 70%: ${peer.mePercentOfExpress >= 70 ? 'met' : 'MISSED'})`);
    }
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
