/**
 * The peer the benchmark compares against: Better Auth (npm `better-auth`, a devDependency of
 * the bench only) with its anonymous plugin, on a bare node:http server, on the same PostgreSQL
 * as the service (or on PGlite through a minimal one-connection Kysely pool when no PostgreSQL is
 * reachable). Its own rate limiter is off, as ours is scaled out of the way.
 *
 *   node --import tsx bench/peers/better-auth.ts PORT (DATABASE_URL | PGLITE_DIR in the environment)
 *
 * Routes: Better Auth's own handler at /api/auth/* (POST /api/auth/sign-in/anonymous,
 * GET /api/auth/get-session) and GET /me, a session-checked call (auth.api.getSession), the
 * counterpart of our protected GET /api/v1/auth/me.
 */
import { createServer } from 'node:http';
import { betterAuth } from 'better-auth';
import { getMigrations } from 'better-auth/db/migration';
import { fromNodeHeaders, toNodeHandler } from 'better-auth/node';
import { anonymous } from 'better-auth/plugins';
import pg from 'pg';

const port = Number(process.argv[2]);
const baseURL = `http://127.0.0.1:${port}`;

async function database(): Promise<unknown> {
  if (process.env.DATABASE_URL) {
    const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
    pool.on('error', () => undefined);
    return pool;
  }
  // PGlite: one connection, handed out one borrower at a time (it is single-threaded anyway).
  const { PGlite } = await import('@electric-sql/pglite');
  const { PostgresDialect } = await import('kysely');
  const db = await PGlite.create(process.env.PGLITE_DIR);
  let queue = Promise.resolve();
  const client = {
    async query(sql: string, params?: unknown[]) {
      const r = await db.query<Record<string, unknown>>(sql, params as never[]);
      return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length, command: sql.trim().split(/\s+/)[0]!.toUpperCase() };
    },
    release: () => undefined,
  };
  const pool = {
    connect() {
      let release!: () => void;
      const next = new Promise<void>((r) => (release = r));
      const ready = queue.then(() => ({ ...client, release }));
      queue = queue.then(() => next);
      return ready;
    },
    end: () => db.close(),
  };
  return { dialect: new PostgresDialect({ pool: pool as never }), type: 'postgres' };
}

const auth = betterAuth({
  baseURL,
  secret: process.env.BETTER_AUTH_SECRET ?? 'bench-secret-bench-secret-bench-secret-0123',
  database: (await database()) as never,
  plugins: [anonymous()],
  rateLimit: { enabled: false },
  telemetry: { enabled: false },
  logger: { disabled: true },
});

const { runMigrations } = await getMigrations(auth.options);
await runMigrations();

const handler = toNodeHandler(auth);
createServer((req, res) => {
  if (req.url === '/me') {
    auth.api.getSession({ headers: fromNodeHeaders(req.headers) }).then(
      (session) => {
        const body = session
          ? JSON.stringify({ user_id: session.user.id, session_id: session.session.id, guest: true })
          : JSON.stringify({ detail: 'Unauthorized', code: 'UNAUTHORIZED' });
        res.writeHead(session ? 200 : 401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      },
      () => {
        res.writeHead(500).end();
      },
    );
    return;
  }
  if (req.url === '/health') {
    res.writeHead(200).end('ok');
    return;
  }
  void handler(req, res);
}).listen(port, '127.0.0.1', () => process.send?.('ready'));
