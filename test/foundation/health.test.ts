/**
 * Liveness and readiness (GET /healthz, GET /readyz) on both services: public, and readiness
 * follows the stores — a database or Redis cut between the service and the shared server (a TCP
 * proxy; the servers themselves are never stopped) turns it 503 naming the check, and it is
 * ready again by itself once they are back.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresReachable } from '../support/postgres.js';
import { redisReachable } from '../support/redis.js';
import { startTestAccount, startTestAgent } from '../support/servers.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const [pgUp, redisUp] = await Promise.all([postgresReachable(), redisReachable()]);
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function readiness(url: string): Promise<{ status: number; body: { status?: string; code?: string; detail?: string; checks: Record<string, string> } }> {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: await res.json() };
}

/** Polls until readiness answers `status` (a reconnect is not instant), at most 15 s. */
async function untilReadiness(url: string, status: number) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const answer = await readiness(url);
    if (answer.status === status || Date.now() > deadline) return answer;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('agent', () => {
  it('is alive and ready without credentials; not ready once its database is gone', async () => {
    const agent = await startTestAgent();
    cleanups.push(() => agent.stop());
    const live = await fetch(`${agent.url}/healthz`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
    expect(await readiness(agent.url)).toEqual({ status: 200, body: { status: 'ready', checks: { database: 'ok' } } });

    agent.services.store.sql.close();
    const down = await readiness(agent.url);
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ code: 'NOT_READY', checks: { database: 'failed' } });
    expect(down.body.detail).toContain('database');
  });
});

describe('account on PGlite', () => {
  it('is alive and ready', async () => {
    const account = await startTestAccount('pglite');
    cleanups.push(() => account.stop());
    expect((await fetch(`${account.url}/healthz`)).status).toBe(200);
    expect(await readiness(account.url)).toEqual({ status: 200, body: { status: 'ready', checks: { database: 'ok' } } });
  });

  it('is not ready once it begins to stop (SIGTERM), while still alive', async () => {
    const account = await startTestAccount('pglite');
    cleanups.push(() => account.stop());
    // What close() does first; the listening socket stays open here, so the answer can be read.
    account.services.beginShutdown();
    const res = await fetch(`${account.url}/readyz`);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toMatchObject({ code: 'SHUTTING_DOWN' });
    expect((await fetch(`${account.url}/healthz`)).status).toBe(200);
  });
});

describe.skipIf(!pgUp)('account on PostgreSQL', () => {
  it('is not ready while PostgreSQL is cut off, and ready again after, by itself', async () => {
    const database = await createTestDatabase();
    const url = new URL(database.url);
    const proxy = await startTcpProxy(url.hostname, Number(url.port || 5432));
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    const account = await startTestAccount('pglite', { DATABASE_URL: url.toString() });
    cleanups.push(
      () => database.drop(),
      () => proxy.close(),
      () => account.stop(),
    );

    expect((await readiness(account.url)).status).toBe(200);
    proxy.cut();
    const down = await untilReadiness(account.url, 503);
    expect(down).toMatchObject({ status: 503, body: { code: 'NOT_READY', checks: { database: 'failed' } } });
    // Liveness does not follow the store: the process is fine.
    expect((await fetch(`${account.url}/healthz`)).status).toBe(200);
    proxy.restore();
    expect(await untilReadiness(account.url, 200)).toEqual({ status: 200, body: { status: 'ready', checks: { database: 'ok' } } });
  });
});

describe.skipIf(!redisUp)('account with Redis', () => {
  it('is not ready while Redis is cut off, and ready again after', async () => {
    const proxy = await startTcpProxy('127.0.0.1', 6379);
    const account = await startTestAccount('pglite', { REDIS_URL: `redis://127.0.0.1:${proxy.port}` });
    cleanups.push(
      () => proxy.close(),
      () => account.stop(),
    );

    expect(await untilReadiness(account.url, 200)).toEqual({ status: 200, body: { status: 'ready', checks: { database: 'ok', redis: 'ok' } } });
    proxy.cut();
    expect(await untilReadiness(account.url, 503)).toMatchObject({ status: 503, body: { code: 'NOT_READY', checks: { database: 'ok', redis: 'failed' } } });
    proxy.restore();
    expect((await untilReadiness(account.url, 200)).status).toBe(200);
  });
});
