/**
 * The admin users list at scale (issue 35): pages of 50 through `GET /api/v1/admin/users` with
 * 100,000 users on PostgreSQL (127.0.0.1:5432 or TEST_DATABASE_URL, a database of this run's own,
 * dropped afterwards). Users are seeded with one bulk `INSERT … SELECT FROM generate_series`
 * (never through the API), with spread creation and activity times and a verified address each.
 * Figures, sequential calls over real HTTP to an in-process service, after a warm-up:
 * walking 40 pages by cursor (newest first, by created and by last active), a filtered page
 * (banned) and an e-mail prefix search. Target: under 50 ms a page.
 *
 *   npm run bench:admin      (BENCH_ADMIN_USERS to change the 100,000)
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { bearer } from '../test/support/account-api.js';
import { adminApi } from '../test/support/admin-api.js';
import { postgresReachable } from '../test/support/postgres.js';
import { startTestAccount } from '../test/support/servers.js';

const USERS = Number(process.env.BENCH_ADMIN_USERS ?? 100_000);
const PAGES = 40;

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0;
const summary = (name: string, ms: number[]) => ({
  figure: name,
  calls: ms.length,
  'mean ms': Number((ms.reduce((a, b) => a + b, 0) / ms.length).toFixed(1)),
  'p50 ms': Number(percentile(ms, 0.5).toFixed(1)),
  'p95 ms': Number(percentile(ms, 0.95).toFixed(1)),
  'max ms': Number(Math.max(...ms).toFixed(1)),
});

if (!(await postgresReachable())) {
  console.log('PostgreSQL is not reachable (127.0.0.1:5432 or TEST_DATABASE_URL): nothing measured.');
  process.exit(0);
}

const account = await startTestAccount('postgres', { RATE_LIMIT_MULTIPLIER: '100000' });
try {
  const seed = new pg.Client({ connectionString: account.services.config.databaseUrl });
  await seed.connect();
  const started = performance.now();
  await seed.query(
    `INSERT INTO users (id, tier, email, created_at, updated_at, last_active_at, banned_at, ban_reason)
     SELECT gen_random_uuid(), (CASE WHEN i % 3 = 0 THEN 'guest' ELSE 'full' END)::account_tier, CASE WHEN i % 3 = 0 THEN NULL ELSE 'user' || i || '@bench.example' END,
            now() - make_interval(secs => i * 30), now(), now() - make_interval(secs => (i * 7919) % 2592000),
            CASE WHEN i % 500 = 0 THEN now() END, CASE WHEN i % 500 = 0 THEN 'bench' END
       FROM generate_series(1, $1::int) AS i`,
    [USERS],
  );
  await seed.query('ANALYZE users');
  await seed.end();
  console.log(`seeded ${USERS.toLocaleString('en')} users in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const api = adminApi(account);
  const admin = await api.newAdmin('bench-admin');
  const headers = bearer(admin.pair);
  const timed = async (path: string) => {
    const t0 = performance.now();
    const res = await api.get(path, headers);
    const body = (await res.json()) as { users: unknown[]; next_cursor: string | null };
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${JSON.stringify(body)}`);
    return { ms, body };
  };
  const walk = async (sort: string) => {
    const ms: number[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < PAGES; i++) {
      const page = await timed(`/admin/users?limit=50&sort=${sort}${cursor ? `&cursor=${cursor}` : ''}`);
      ms.push(page.ms);
      cursor = page.body.next_cursor;
    }
    return ms;
  };
  const repeat = async (times: number, path: (i: number) => string) => {
    const ms: number[] = [];
    for (let i = 0; i < times; i++) ms.push((await timed(path(i))).ms);
    return ms;
  };
  await walk('created'); // warm-up: plans, connections, JIT
  const rows = [
    summary('page of 50, newest created, by cursor', await walk('created')),
    summary('page of 50, last active, by cursor', await walk('last_active')),
    summary('page of 50, filter=banned', await repeat(20, () => '/admin/users?limit=50&filter=banned')),
    summary('search by e-mail prefix', await repeat(20, (i) => `/admin/users?limit=50&query=user${1000 + i * 37}@`)),
  ];
  console.table(rows);
  const worst = Math.max(...rows.map((r) => r['p95 ms']));
  console.log(`target: under 50 ms a page → p95 worst ${worst} ms: ${worst < 50 ? 'met' : 'NOT met'}`);
} finally {
  await account.stop();
}
