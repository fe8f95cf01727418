/**
 * Growth (issue 11): how the hot paths move when the stores hold 10× and 100× more, so that cost
 * vs size is visible. Seeded with bulk SQL, never through the API:
 *
 * - Account store: users, each with a guest identity and a session (one `INSERT … SELECT FROM
 *   generate_series` statement per 50,000), in a database of this run's own — a fresh PostgreSQL
 *   database (127.0.0.1:5432 or TEST_DATABASE_URL) dropped afterwards, else PGlite in a temp
 *   DATA_DIR (the service steps aside while the bench writes into it: PGlite is one process's).
 *   Figures: guest sign-in (new device), refresh (each token once), GET /auth/me.
 * - Agent store (`agent.db`, SQLite): chat history, 100-entry chats plus one "hot" chat that grows
 *   with the store (one recursive-CTE `INSERT … SELECT` per step, the agent stopped meanwhile).
 *   Figures: GET /chat/{id}/history (the default last 50) of a random 100-entry chat, and of the
 *   hot chat.
 *
 * Sizes: 1× = BENCH_GROWTH_BASE users (default 2,000) and BENCH_GROWTH_CHATS chats (default 100
 * chats × 100 entries + a 1,000-entry hot chat); then 10× and 100× of each. One BENCH_SECONDS run
 * (default 5) per figure and size, 32 connections. BENCH_QUICK=1: a tenth of the base, 3 s runs.
 *
 *   npm run bench:growth    → tables on stdout, bench/results/growth.json
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import Database from 'better-sqlite3';
import type autocannon from 'autocannon';
import pg from 'pg';
import { freePort } from '../server/common/net.js';
import { createTestDatabase, postgresReachable, type TestDatabase } from '../test/support/postgres.js';
import { ourWorkload, startAccountService, type RunningAccountService } from './lib/account.js';
import { load, runIfEntry, spawnServer, stop, table, waitForHttp, type Row } from './lib/harness.js';

const QUICK = process.env.BENCH_QUICK === '1';
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 3 : 5));
const USERS_BASE = Number(process.env.BENCH_GROWTH_BASE ?? (QUICK ? 200 : 2_000));
const CHATS_BASE = Number(process.env.BENCH_GROWTH_CHATS ?? (QUICK ? 10 : 100));
const ENTRIES_PER_CHAT = 100;
const HOT_BASE = 10 * ENTRIES_PER_CHAT;
const FACTORS = [1, 10, 100];
const run = (name: string, opts: autocannon.Options) => load(name, { connections: 32, duration: SECONDS, ...opts });

export interface GrowthResults {
  date: string;
  store: 'postgres' | 'pglite';
  secondsPerRun: number;
  account: { base: number; rows: Array<{ scale: string; users: number; sessions: number; seedMs: number; signIn: Row; refresh: Row; me: Row }> };
  history: {
    base: { chats: number; entriesPerChat: number; hotEntries: number };
    rows: Array<{ scale: string; entries: number; chats: number; hotEntries: number; dbMb: number; seedMs: number; chat: Row; hot: Row }>;
  };
}

/** One SQL entry point over either store (pg's client, or PGlite opened while the service is stopped). */
interface Sql {
  query(text: string, params?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

const SEED_USERS = `WITH u AS (INSERT INTO users (id, is_guest, updated_at) SELECT gen_random_uuid(), true, now() FROM generate_series(1, $1::int) RETURNING id),
       i AS (INSERT INTO identities (id, user_id, provider, subject) SELECT gen_random_uuid(), id, 'guest', 'seed-' || id FROM u)
  INSERT INTO sessions (id, user_id, expires_at) SELECT gen_random_uuid(), id, now() + interval '30 days' FROM u`;

async function seedUsers(sql: Sql, n: number): Promise<void> {
  for (let left = n; left > 0; left -= 50_000) await sql.query(SEED_USERS, [Math.min(left, 50_000)]);
  await sql.query('ANALYZE');
}

async function accountGrowth(usePostgres: boolean, runId: string): Promise<GrowthResults['account']> {
  let database: TestDatabase | undefined;
  const env: Record<string, string> = {};
  if (usePostgres) {
    database = await createTestDatabase();
    env.DATABASE_URL = database.url;
  }
  let service: RunningAccountService | undefined;
  let client: pg.Client | undefined;
  try {
    service = await startAccountService(env);
    if (database) {
      client = new pg.Client({ connectionString: database.url });
      await client.connect();
    }
    /** Runs `work` on the store; with PGlite the service is stopped around it and started again. */
    const withStore = async <T>(work: (sql: Sql) => Promise<T>): Promise<T> => {
      if (client) return work(client as unknown as Sql);
      await stop(service!.child);
      const lite = await PGlite.create(path.join(service!.dataDir, 'account-db'));
      try {
        return await work(lite as unknown as Sql);
      } finally {
        await lite.close();
        service = await startAccountService(env, service);
      }
    };
    const rows: GrowthResults['account']['rows'] = [];
    let seeded = 0;
    for (const factor of FACTORS) {
      const target = USERS_BASE * factor;
      const started = Date.now();
      const counts = await withStore(async (sql) => {
        await seedUsers(sql, target - seeded);
        const { rows: r } = await sql.query('SELECT (SELECT count(*) FROM users)::int AS users, (SELECT count(*) FROM sessions)::int AS sessions');
        return r[0] as { users: number; sessions: number };
      });
      const seedMs = Date.now() - started;
      seeded = target;
      console.log(`account store at ${factor}×: ${counts.users} users, ${counts.sessions} sessions (seeded in ${seedMs} ms)`);
      const o = ourWorkload(service.url, `${runId}-${factor}`);
      // Warm-up (JIT, pool connections, caches after a restart), not measured; its users are not in the count shown.
      await load('warm-up', { ...ourWorkload(service.url, `${runId}-warm-${factor}`).signIn, duration: 1, quiet: true });
      const signIn = await run(`  guest sign-in at ${factor}×`, o.signIn);
      o.prepare();
      const refresh = await run(`  refresh at ${factor}×`, o.refresh);
      const me = await run(`  /auth/me at ${factor}×`, o.me);
      rows.push({ scale: `${factor}×`, users: counts.users, sessions: counts.sessions, seedMs, signIn, refresh, me });
    }
    return { base: USERS_BASE, rows };
  } finally {
    await client?.end().catch(() => undefined);
    if (service) {
      await stop(service.child);
      await rm(service.dataDir, { recursive: true, force: true });
    }
    await database?.drop();
  }
}

/** Adds `chats` chats of ENTRIES_PER_CHAT entries (interleaved, as chats happen) and `hot` entries to the hot chat. */
function seedHistory(file: string, firstChat: number, chats: number, hot: number): void {
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    const insert = db.prepare(`WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < @n)
      INSERT INTO chat_messages (chat_id, type, name, content, run_id)
      SELECT CASE WHEN @hot THEN 'hot' ELSE 'seed-' || CAST(@first + i % @chats AS INTEGER) END, 'text',
             CASE WHEN i % 2 = 0 THEN 'user' END,
             'seeded entry ' || i || ': the quick brown fox jumps over the lazy dog, again and again',
             'seed-run-' || (i / 2)
      FROM s`);
    db.transaction(() => {
      if (chats > 0) insert.run({ n: chats * ENTRIES_PER_CHAT, hot: 0, first: firstChat, chats });
      if (hot > 0) insert.run({ n: hot, hot: 1, first: 0, chats: 1 });
    })();
    db.exec('ANALYZE');
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

async function historyGrowth(): Promise<GrowthResults['history']> {
  const workspace = await mkdtemp(path.join(tmpdir(), 'bench-growth-agent-'));
  const secret = randomBytes(24).toString('hex');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const start = async () => {
    const child = spawnServer('server/agent/main.ts', [], {
      AGENT_PORT: String(port),
      HOST: '127.0.0.1',
      AGENT_SECRET: secret,
      AGENT_WORKSPACE: workspace,
      LOG_LEVEL: 'silent',
      HEARTBEAT_INTERVAL: '0',
    });
    await waitForHttp(`${url}/health`);
    return child;
  };
  // First start creates agent.db and applies the migrations.
  let agent = await start();
  try {
    const rows: GrowthResults['history']['rows'] = [];
    let chats = 0;
    let hot = 0;
    for (const factor of FACTORS) {
      await stop(agent);
      const started = Date.now();
      const file = path.join(workspace, 'agent.db');
      seedHistory(file, chats, CHATS_BASE * factor - chats, HOT_BASE * factor - hot);
      const seedMs = Date.now() - started;
      chats = CHATS_BASE * factor;
      hot = HOT_BASE * factor;
      const db = new Database(file, { readonly: true });
      const entries = (db.prepare('SELECT count(*) AS n FROM chat_messages').get() as { n: number }).n;
      const pages = db.pragma('page_count', { simple: true }) as number;
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      db.close();
      agent = await start();
      console.log(
        `agent history at ${factor}×: ${entries} entries in ${chats + 1} chats (hot chat ${hot}), ${Math.round((pages * pageSize) / 1e6)} MB (seeded in ${seedMs} ms)`,
      );
      const headers = { authorization: `Bearer ${secret}` };
      const chatRead: autocannon.Options = {
        url,
        requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, headers, path: `/chat/seed-${Math.floor(Math.random() * chats)}/history` }) }],
      };
      const hotRead: autocannon.Options = { url, requests: [{ method: 'GET', path: '/chat/hot/history?limit=50', headers }] };
      await load('warm-up', { ...chatRead, duration: 1, quiet: true });
      const chat = await run(`  history of a ${ENTRIES_PER_CHAT}-entry chat at ${factor}×`, chatRead);
      const hotRow = await run(`  history of the hot chat (${hot} entries) at ${factor}×`, hotRead);
      rows.push({ scale: `${factor}×`, entries, chats: chats + 1, hotEntries: hot, dbMb: Math.round((pages * pageSize) / 1e6), seedMs, chat, hot: hotRow });
    }
    return { base: { chats: CHATS_BASE, entriesPerChat: ENTRIES_PER_CHAT, hotEntries: HOT_BASE }, rows };
  } finally {
    await stop(agent);
    await rm(workspace, { recursive: true, force: true });
  }
}

export async function growthBench(): Promise<GrowthResults> {
  const usePostgres = await postgresReachable();
  const runId = Date.now().toString(36);
  console.log(
    `growth: account store on ${usePostgres ? 'PostgreSQL (a database of its own, dropped after)' : 'PGlite'}, agent history on SQLite; 1×, 10×, 100×; one ${SECONDS} s run per figure`,
  );
  const account = await accountGrowth(usePostgres, runId);
  const history = await historyGrowth();
  return { date: new Date().toISOString(), store: usePostgres ? 'postgres' : 'pglite', secondsPerRun: SECONDS, account, history };
}

export function printGrowthTables(g: GrowthResults): void {
  console.log(
    `\nGrowth, account store (${g.store === 'postgres' ? 'PostgreSQL' : 'PGlite'}; users with an identity and a session each, seeded with SQL; one ${g.secondsPerRun} s run each):`,
  );
  console.log(
    table(
      ['store holds', 'users', 'sessions', 'guest sign-in req/s', 'refresh req/s', '/auth/me req/s', '/auth/me p99 ms'],
      g.account.rows.map((r) => [r.scale, r.users, r.sessions, r.signIn.requestsPerSecond, r.refresh.requestsPerSecond, r.me.requestsPerSecond, r.me.p99]),
    ),
  );
  console.log(`\nGrowth, agent history (SQLite agent.db; GET /chat/{id}/history, last 50 entries):`);
  console.log(
    table(
      ['store holds', 'entries', 'chats', 'agent.db MB', `${ENTRIES_PER_CHAT}-entry chat req/s`, 'p99 ms', 'hot chat entries', 'hot chat req/s', 'p99 ms'],
      g.history.rows.map((r) => [r.scale, r.entries, r.chats, r.dbMb, r.chat.requestsPerSecond, r.chat.p99, r.hotEntries, r.hot.requestsPerSecond, r.hot.p99]),
    ),
  );
}

await runIfEntry(import.meta.url, 'growth.json', growthBench, printGrowthTables);
