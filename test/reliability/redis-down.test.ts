/**
 * Redis down with REDIS_URL set (decision in docs/api.md, "Rate limits in detail": neither fail-open nor
 * fail-closed — each instance falls back to its own in-memory counters). A private
 * `redis-server` on a free loopback port is started and killed here (the machine's shared Redis
 * is never touched); skipped when the binary is missing.
 *
 * Two instances share it: with Redis up the limit is exact across both (10 guest sign-ins a
 * minute per IP in total); with Redis killed each instance enforces 10 on its own (so 20 in
 * total, and never unlimited, never all refused), with no 5xx and no hang; with Redis back the
 * limit is shared and exact again.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startTestAccount, type TestAccount } from '../support/servers.js';

const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;

async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const { Redis } = await import('ioredis');
  for (let i = 0; i < 50; i++) {
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return child;
    } catch {
      // not up yet
    } finally {
      client.disconnect();
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not start');
}

const killed = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });

describe.runIf(hasRedisServer)('rate limits with Redis going down and coming back', () => {
  let port: number;
  let redis: ChildProcess;
  let a: TestAccount;
  let b: TestAccount;

  const guestSignIns = async (target: TestAccount, n: number, ip: string) => {
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) {
      const started = Date.now();
      const res = await fetch(`${target.url}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
        body: JSON.stringify({ device_id: `redis-down-${randomBytes(4).toString('hex')}` }),
      });
      await res.arrayBuffer();
      expect(Date.now() - started).toBeLessThan(3_000); // no hang while Redis is away
      statuses.push(res.status);
    }
    return statuses;
  };
  // A fresh /64 each time: clients are counted per /64.
  const freshIp = () => `2001:db8:${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}::1`;
  const count = (xs: number[], s: number) => xs.filter((x) => x === s).length;

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis(port);
    const env = { RATE_LIMIT_MULTIPLIER: '1', TRUST_PROXY: 'loopback', REDIS_URL: `redis://127.0.0.1:${port}` };
    [a, b] = await Promise.all([startTestAccount('pglite', env), startTestAccount('pglite', env)]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    if (redis) await killed(redis);
  });

  it('shared and exact while Redis is up', async () => {
    const ip = freshIp();
    const all = [...(await guestSignIns(a, 6, ip)), ...(await guestSignIns(b, 6, ip))];
    expect(count(all, 200)).toBe(10);
    expect(count(all, 429)).toBe(2);
  });

  it('per instance while Redis is down: each enforces its own 10, no 5xx, no hang', async () => {
    await killed(redis);
    const ip = freshIp();
    const fromA = await guestSignIns(a, 12, ip);
    const fromB = await guestSignIns(b, 12, ip);
    for (const statuses of [fromA, fromB]) {
      expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
      expect(count(statuses, 200)).toBe(10);
      expect(count(statuses, 429)).toBe(2);
    }
  });

  it('shared and exact again once Redis is back', async () => {
    redis = await startRedis(port);
    // ioredis reconnects by itself; give it a moment. Each instance in turn must be seen writing to
    // the new Redis: a probe from a fresh client adds that client's keys there (counting keys
    // alone once let one instance's probe stand for both, while the other still counted in memory).
    const { Redis } = await import('ioredis');
    const store = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
    const writesToRedis = async (account: TestAccount) => {
      const before = (await store.keys('*')).length;
      const [status] = await guestSignIns(account, 1, freshIp());
      return status === 200 && (await store.keys('*')).length > before;
    };
    try {
      for (const account of [a, b]) {
        for (let attempt = 0; attempt < 30 && !(await writesToRedis(account)); attempt++) await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      store.disconnect();
    }
    const ip = freshIp();
    const all = [...(await guestSignIns(a, 6, ip)), ...(await guestSignIns(b, 6, ip))];
    expect(count(all, 200)).toBe(10);
    expect(count(all, 429)).toBe(2);
  });
});
