/**
 * Account service benchmark (`npm run bench:account`).
 *
 * Starts the service as its own process on PostgreSQL (a fresh database on the local server at
 * 127.0.0.1:5432 — or TEST_DATABASE_URL — when reachable; embedded PGlite otherwise) with
 * RATE_LIMIT_MULTIPLIER high and LOG_LEVEL=warn, plus a bare express and a bare node:http server
 * as ceilings, each in its own process, and loads each with autocannon (in this process):
 * 32 connections, 10 s per run (BENCH_SECONDS to change).
 *
 * Runs (after a warm-up of a few seconds per server, not measured):
 * - guest sign-in, new device: every request a device id never seen (creates user + identity + session);
 * - guest sign-in, known device: device ids from the previous run, round robin (finds the user, new session);
 * - refresh: every request spends a refresh token never used before. The pool starts with the
 *   pairs the sign-in runs returned, and every refresh answer puts its new refresh token back,
 *   so no token is ever presented twice (a reuse would be a 401 and show up as non-2xx);
 * - GET /api/v1/auth/me with access tokens of 256 sessions, round robin (the protected call);
 * - the two ceilings: GET / answering a small JSON body, measured right before /auth/me.
 *
 * Before the load, the queries each hot path sends to PostgreSQL are counted on an in-process
 * instance (every statement through pg's Client, BEGIN/COMMIT included).
 *
 * Prints a table and writes bench/results/account.json.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { startAccount } from '../server/account/app.js';
import { loadAccountConfig } from '../server/account/config.js';
import { createLogger } from '../server/common/log.js';
import { createTestDatabase, postgresReachable } from '../test/support/postgres.js';
import { freePort } from '../test/support/servers.js';
import { load as loadRow, root, spawnServer, stop, waitForHttp, type Row } from './lib/harness.js';
import { TokenQueue } from './lib/account.js';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 32;
const load = (name: string, opts: autocannon.Options) => loadRow(name, { connections: CONNECTIONS, duration: SECONDS, ...opts });

/** Statements each hot path sends to PostgreSQL, counted on an in-process instance. */
async function countQueries(databaseUrl: string): Promise<Record<string, number>> {
  let count = 0;
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    count += 1;
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  const dataDir = await mkdtemp(path.join(tmpdir(), 'bench-count-'));
  const config = loadAccountConfig({
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    RATE_LIMIT_MULTIPLIER: '100000',
    LOG_LEVEL: 'silent',
  });
  const account = await startAccount(config, createLogger('bench', 'silent'));
  const api = `${account.url}/api/v1`;
  const post = async (p: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${api}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`${p}: ${res.status} ${await res.text()}`);
    return res.status === 204 ? undefined : ((await res.json()) as unknown);
  };
  const measure = async (fn: (i: number) => Promise<unknown>, n = 20) => {
    await fn(-1); // warm
    await account.services.mail.idle();
    count = 0;
    for (let i = 0; i < n; i++) await fn(i);
    return Math.round((count / n) * 10) / 10;
  };
  const counts: Record<string, number> = {};
  try {
    counts['guest sign-in, new device'] = await measure((i) => post('/auth/guest', { device_id: `count-new-device-${i}` }));
    counts['guest sign-in, known device'] = await measure(() => post('/auth/guest', { device_id: 'count-new-device-0' }));
    let pair = (await post('/auth/guest', { device_id: 'count-refresh-device' })) as Pair;
    counts.refresh = await measure(async () => {
      pair = (await post('/auth/refresh', { refresh_token: pair.refresh_token })) as Pair;
    });
    const sessions = await Promise.all(Array.from({ length: 21 }, (_, i) => post('/auth/guest', { device_id: `count-me-device-${i}` }) as Promise<Pair>));
    const me = (p: Pair) => fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${p.access_token}` } }).then((r) => r.json());
    counts['/auth/me, session not cached'] = await measure((i) => me(sessions[i + 1]!));
    counts['/auth/me, session cached (5 s)'] = await measure(() => me(sessions[0]!));
    counts['login/email (request)'] = await measure((i) => post('/auth/login/email', { email: `count-${i}@example.com` }));
    counts['verify-magic-link (code, new account)'] = await measure(async (i) => {
      const issued = await account.services.email.request(`verify-${i}@example.com`);
      await post('/auth/verify-magic-link', { email: `verify-${i}@example.com`, code: issued.code });
    });
  } finally {
    pg.Client.prototype.query = original;
    await account.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  // The verify row includes the one INSERT of issuing the code (done through the domain function).
  counts['verify-magic-link (code, new account)'] = Math.round((counts['verify-magic-link (code, new account)']! - 1) * 10) / 10;
  return counts;
}

async function main() {
  const usePostgres = await postgresReachable();
  const database = usePostgres ? await createTestDatabase() : undefined;
  const dataDir = await mkdtemp(path.join(tmpdir(), 'bench-account-'));
  const children: ChildProcess[] = [];
  try {
    console.log(
      `account bench: ${usePostgres ? 'PostgreSQL (fresh database)' : 'PGlite (no PostgreSQL reachable)'}, ${CONNECTIONS} connections, ${SECONDS} s per run, ${cpus().length} cores`,
    );
    const queries = database ? await countQueries(database.url) : {};
    if (database) {
      console.log('queries per request (PostgreSQL statements, BEGIN/COMMIT included):');
      for (const [name, n] of Object.entries(queries)) console.log(`  ${name}: ${n}`);
    }

    const [accountPort, expressPort, httpPort] = [await freePort(), await freePort(), await freePort()];
    const accountChild = spawnServer('server/account/main.ts', [], {
      PORT: String(accountPort),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      RATE_LIMIT_MULTIPLIER: '100000',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      ...(database ? { DATABASE_URL: database.url } : {}),
    });
    children.push(
      accountChild,
      spawnServer('bench/ceiling-server.ts', ['express', String(expressPort)], {}),
      spawnServer('bench/ceiling-server.ts', ['http', String(httpPort)], {}),
    );
    const accountUrl = `http://127.0.0.1:${accountPort}`;
    await Promise.all([
      waitForHttp(`${accountUrl}/.well-known/jwks.json`),
      waitForHttp(`http://127.0.0.1:${expressPort}/`),
      waitForHttp(`http://127.0.0.1:${httpPort}/`),
    ]);

    const rows: Row[] = [];
    const json = { 'content-type': 'application/json' };
    const pairs: Pair[] = [];
    const harvest = (status: number, body: string) => {
      if (status === 200) pairs.push(JSON.parse(body) as Pair);
    };

    let device = 0;
    const runId = Date.now().toString(36);
    // Warm-up (not measured): JIT, connection pools, caches of every process under test.
    const warmSeconds = Math.min(3, SECONDS);
    await autocannon({ url: `http://127.0.0.1:${httpPort}/`, connections: CONNECTIONS, duration: warmSeconds });
    await autocannon({ url: `http://127.0.0.1:${expressPort}/`, connections: CONNECTIONS, duration: warmSeconds });
    await autocannon({
      url: accountUrl,
      connections: CONNECTIONS,
      duration: warmSeconds,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/auth/guest',
          headers: json,
          setupRequest: (req) => ({ ...req, body: JSON.stringify({ device_id: `warm-device-${runId}-${device++}` }) }),
        },
      ],
    });
    device = 0;

    /** A POST run whose every request carries `body()` as its JSON body. */
    const postEach = (name: string, apiPath: string, body: () => unknown, onResponse?: (status: number, text: string) => void) =>
      load(name, {
        url: accountUrl,
        requests: [
          {
            method: 'POST',
            path: apiPath,
            headers: json,
            setupRequest: (req) => ({ ...req, body: JSON.stringify(body()) }),
            ...(onResponse ? { onResponse } : {}),
          },
        ],
      });

    console.log('load:');
    rows.push(await postEach('POST /auth/guest (new device)', '/api/v1/auth/guest', () => ({ device_id: `bench-device-${runId}-${device++}` }), harvest));
    const knownDevices = Math.min(device, 2000);
    let known = 0;
    rows.push(
      await postEach(
        'POST /auth/guest (known device)',
        '/api/v1/auth/guest',
        () => ({ device_id: `bench-device-${runId}-${known++ % knownDevices}` }),
        harvest,
      ),
    );

    // Access tokens for the protected call, taken before their refresh tokens are spent.
    const meTokens = pairs.slice(0, 256).map((p) => `Bearer ${p.access_token}`);
    const refreshPool = new TokenQueue();
    for (const pair of pairs) refreshPool.put(pair.refresh_token);
    let spent = 0;
    let starved = 0;
    rows.push(
      await postEach(
        'POST /auth/refresh (each token once)',
        '/api/v1/auth/refresh',
        () => {
          const token = refreshPool.take();
          if (!token) starved += 1;
          spent += 1;
          return { refresh_token: token ?? 'pool-empty' };
        },
        (status, body) => {
          if (status === 200) refreshPool.put((JSON.parse(body) as Pair).refresh_token);
        },
      ),
    );
    if (starved) console.log(`  (refresh pool ran dry ${starved} times: those requests were 401s)`);

    // The ceilings right before the protected call, so that the ratio compares like with like
    // on a machine whose load drifts, and with the very same request stream (the rotating
    // Authorization header costs autocannon time too; the ceilings ignore it).
    let meIndex = 0;
    const meRequest = {
      method: 'GET',
      path: '/api/v1/auth/me',
      setupRequest: (req: autocannon.Request) => ({ ...req, headers: { authorization: meTokens[meIndex++ % meTokens.length]! } }),
    };
    rows.push(await load('bare node:http (ceiling)', { url: `http://127.0.0.1:${httpPort}`, requests: [meRequest] }));
    rows.push(await load('bare express (ceiling)', { url: `http://127.0.0.1:${expressPort}`, requests: [meRequest] }));

    rows.push(
      await load('GET /auth/me (256 sessions)', {
        url: accountUrl,
        requests: [meRequest],
      }),
    );

    // Informational: the same procedure over tRPC directly (no REST bridge), to see what the bridge costs.
    rows.push(
      await load('GET /trpc/tokens.me (tRPC, informational)', {
        url: accountUrl,
        requests: [{ ...meRequest, path: '/trpc/tokens.me' }],
      }),
    );

    const byName = (prefix: string) => rows.find((r) => r.name.startsWith(prefix))!;
    const expressCeiling = byName('bare express').requestsPerSecond;
    const summary = {
      guestNewPerSecond: byName('POST /auth/guest (new').requestsPerSecond,
      guestKnownPerSecond: byName('POST /auth/guest (known').requestsPerSecond,
      refreshPerSecond: byName('POST /auth/refresh').requestsPerSecond,
      mePercentOfExpress: Math.round((byName('GET /auth/me').requestsPerSecond / expressCeiling) * 1000) / 10,
    };
    const targets = {
      'guest sign-in ≥ 600/s': Math.min(summary.guestNewPerSecond, summary.guestKnownPerSecond) >= 600,
      'refresh ≥ 600/s': summary.refreshPerSecond >= 600,
      '/auth/me ≥ 70% of bare express': summary.mePercentOfExpress >= 70,
    };

    console.log('');
    console.log('| run | req/s | p50 ms | p99 ms | requests | non-2xx |');
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const r of rows) console.log(`| ${r.name} | ${r.requestsPerSecond} | ${r.p50} | ${r.p99} | ${r.total} | ${r.non2xx + r.errors} |`);
    console.log('');
    console.log(`/auth/me = ${summary.mePercentOfExpress}% of bare express; refresh tokens spent: ${spent}`);
    for (const [target, met] of Object.entries(targets)) console.log(`${met ? 'met    ' : 'MISSED '} ${target}`);

    await mkdir(path.join(root, 'bench/results'), { recursive: true });
    const out = {
      date: new Date().toISOString(),
      store: usePostgres ? 'postgres' : 'pglite',
      connections: CONNECTIONS,
      secondsPerRun: SECONDS,
      cores: cpus().length,
      node: process.version,
      rows,
      summary,
      targets,
      queriesPerRequest: queries,
    };
    await writeFile(path.join(root, 'bench/results/account.json'), `${JSON.stringify(out, null, 2)}\n`);
    console.log('written: bench/results/account.json');
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    await database?.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
