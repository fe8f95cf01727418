/**
 * A rolling restart of the account service under load (docs/deployment.md, "Stopping"): two
 * instances as real processes share PostgreSQL, Redis and their keys, and serve one user whose
 * agent runs elsewhere (AGENT_PROVISIONER=static; a scripted model streams slow replies). A
 * bounded client load — requests and chat streams, round-robin over both addresses, as a load
 * balancer would spread them — runs while A gets SIGTERM, A' starts on A's port, then B gets
 * SIGTERM.
 *
 * What a client sees: no 5xx but 503 with Retry-After; a refused connection (the instance is
 * gone) is retried on the next address; every chat stream ends, either with `done` or with the
 * `reconnect` event of a stopping instance, and a stream that got `reconnect` is followed again
 * on the other instance from its last event id until `done`, with the reply whole. Each stopping
 * instance exits within its bound.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentRegistry } from '../../server/account/agents/registry.js';
import { loadSecretBox } from '../../server/account/agents/secrets.js';
import { loadEmailCodeKey } from '../../server/account/auth/email/codes.js';
import { openAccountStore } from '../../server/account/store.js';
import { loadSigningKeys } from '../../server/account/tokens/keys.js';
import { serviceEntry } from '../support/entries.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import { createTestDatabase, postgresReachable, type TestDatabase } from '../support/postgres.js';
import { redisReachable } from '../support/redis.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { freePort, startTestAgent, tempDir, type TestAgent } from '../support/servers.js';
import { sseFrames } from '../support/sse.js';

const reachable = (await postgresReachable()) && (await redisReachable());

/** The reply every run streams: 16 chunks, 100 ms apart, so streams are open when a SIGTERM comes. */
const CHUNKS = Array.from({ length: 16 }, (_, i) => `w${i} `);
const REPLY = CHUNKS.join('');

interface Instance {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

describe.skipIf(!reachable)('rolling restart of the account service under load', () => {
  let database: TestDatabase;
  let model: ScriptedModel;
  let agent: TestAgent;
  let dataDir: string;
  const instances: Instance[] = [];

  async function startInstance(port: number): Promise<Instance> {
    const child = spawn(process.execPath, serviceEntry('account'), {
      env: {
        PATH: process.env.PATH ?? '',
        HOST: '127.0.0.1',
        PORT: String(port),
        // One public address for the tokens' issuer, as behind a load balancer.
        BASE_URL: 'http://127.0.0.1:1',
        DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
        AGENT_PROVISIONER: 'static',
        RATE_LIMIT_MULTIPLIER: '1000',
        LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = `http://127.0.0.1:${port}`;
    for (const deadline = Date.now() + 20_000; ; ) {
      if (child.exitCode !== null) throw new Error(`account instance exited with ${child.exitCode}`);
      const ready = await fetch(`${url}/readyz`).then(
        (r) => (r.ok ? 'ready' : r.text()),
        (error: Error) => error.message,
      );
      if (ready === 'ready') break;
      if (Date.now() > deadline) throw new Error(`account instance did not become ready: ${ready}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const instance = { child, url, exited };
    instances.push(instance);
    return instance;
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    dataDir = await tempDir('rolling');
    model = await startScriptedModel({ responder: () => ({ text: CHUNKS, delayMs: 100 }) });
    agent = await startTestAgent({ MODEL: model.modelSpec });
  }, 30_000);
  afterAll(async () => {
    for (const { child } of instances) if (child.exitCode === null) child.kill('SIGKILL');
    await Promise.all(instances.map((i) => i.exited));
    await agent?.stop();
    await model?.close();
    await database?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('loses no request a client would not retry and leaves no stream hanging', async () => {
    // The shared keys and schema, as a deployment provides them before its instances start.
    await (await openAccountStore({ databaseUrl: database.url, dataDir })).close();
    await loadSecretBox(undefined, dataDir);
    await loadSigningKeys(path.join(dataDir, 'signing-keys.json'));
    await loadEmailCodeKey(path.join(dataDir, 'email-code-key'));
    const [portA, portB] = [await freePort(), await freePort()];
    const [a, b] = await Promise.all([startInstance(portA), startInstance(portB)]);
    const signIn = await fetch(`${a.url}/api/v1/auth/guest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: `rolling-${randomUUID()}` }),
    });
    const { access_token: token } = (await signIn.json()) as TokenPair;
    const auth = { authorization: `Bearer ${token}` };
    const me = (await (await fetch(`${b.url}/api/v1/auth/me`, { headers: auth })).json()) as { user_id: string };
    // The user's agent, registered as `npm run agents -- add` does.
    const store = await openAccountStore({ databaseUrl: database.url, dataDir });
    try {
      await new AgentRegistry(store.db, await loadSecretBox(undefined, dataDir)).add({
        name: 'rolling-agent',
        url: agent.url,
        secret: agent.secret,
        kind: 'static',
        userId: me.user_id,
      });
    } finally {
      await store.close();
    }

    // ----- the client side: round-robin over both addresses, retrying refused connections -----
    const addresses = [a.url, b.url];
    let turn = 0;
    const bad: string[] = [];
    const counts = { requests: 0, retried: 0, streams: 0, reconnects: 0 };
    /** One HTTP exchange as a client with retries makes it: a connection error goes to the next address. */
    async function exchange(pathAndQuery: string, init: RequestInit = {}): Promise<Response> {
      for (let attempt = 0; ; attempt++) {
        if (attempt > 100) throw new Error(`${pathAndQuery}: no instance answered`);
        const base = addresses[turn++ % addresses.length]!;
        try {
          const res = await fetch(`${base}/api/v1${pathAndQuery}`, { ...init, signal: AbortSignal.timeout(10_000) });
          if (res.status === 503 && res.headers.get('retry-after')) {
            counts.retried++;
            await res.arrayBuffer();
            continue;
          }
          if (res.status >= 500) bad.push(`${res.status} ${pathAndQuery}: ${await res.text()}`);
          return res;
        } catch (error) {
          if ((error as Error).name === 'TimeoutError') throw new Error(`${pathAndQuery} hung on ${base}`);
          counts.retried++;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    }

    /** One chat: sends, reads, and after `reconnect` (or a cut connection) follows on from the last id. */
    async function chat(): Promise<void> {
      const chatId = `rolling-${randomUUID()}`;
      let text = '';
      let last: string | undefined;
      const seen = new Set<string>();
      for (let leg = 0; leg < 10; leg++) {
        const res = last
          ? await exchange(`/agent/chat/${chatId}/stream`, { headers: { ...auth, 'last-event-id': last } })
          : await exchange('/agent/chat', {
              method: 'POST',
              headers: { ...auth, 'content-type': 'application/json' },
              body: JSON.stringify({ message: 'hi', chat_id: chatId }),
            });
        if (res.status !== 200) {
          bad.push(`chat ${chatId}: ${res.status} ${await res.text()}`);
          return;
        }
        // A cut connection ends the frames: the loop sees no `done` nor `reconnect` and counts it.
        const frames = sseFrames(res, () => true);
        let ended: 'done' | 'reconnect' | 'cut' = 'cut';
        const deadline = setTimeout(() => void res.body?.cancel(), 15_000);
        try {
          for await (const frame of frames) {
            if (frame.id) {
              if (seen.has(frame.id)) bad.push(`event ${frame.id} delivered twice`);
              seen.add(frame.id);
              last = frame.id;
            }
            if (frame.data.type === 'text') text += String(frame.data.content);
            if (frame.data.type === 'done' || frame.data.type === 'reconnect') {
              ended = frame.data.type;
              break;
            }
          }
        } finally {
          clearTimeout(deadline);
        }
        if (ended === 'done') {
          counts.streams++;
          if (text !== REPLY) bad.push(`chat ${chatId} ended with ${JSON.stringify(text)}`);
          return;
        }
        if (ended === 'reconnect') counts.reconnects++;
        else bad.push(`chat ${chatId}: a stream ended without done or reconnect`);
      }
      bad.push(`chat ${chatId} never finished`);
    }

    let running = true;
    const requestWorkers = Array.from({ length: 2 }, async () => {
      while (running) {
        const res = await exchange(counts.requests % 2 ? '/auth/me' : '/agent/chats', { headers: auth });
        counts.requests++;
        if (res.status !== 200) bad.push(`${res.status} ${await res.text()}`);
        else await res.arrayBuffer();
      }
    });
    const chatWorkers = Array.from({ length: 3 }, async () => {
      while (running) await chat();
    });

    /** SIGTERM once the instance relays a chat stream (its /metrics says so); resolves on its exit with the time it took. */
    const stop = async (instance: Instance) => {
      const relaying = async () => /^sse_streams_open\{[^}]*\} [1-9]/m.test(await (await fetch(`${instance.url}/metrics`)).text());
      for (const deadline = Date.now() + 10_000; !(await relaying()) && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
      const started = Date.now();
      instance.child.kill('SIGTERM');
      await instance.exited;
      return Date.now() - started;
    };
    const aStopped = await stop(a);
    const a2 = await startInstance(portA);
    const bStopped = await stop(b);
    await new Promise((r) => setTimeout(r, 500));
    running = false;
    await Promise.all([...requestWorkers, ...chatWorkers]);

    expect(bad).toEqual([]);
    expect(a.child.exitCode).toBe(0);
    expect(b.child.exitCode).toBe(0);
    // Streams were open at each SIGTERM: they ended with `reconnect` and were followed elsewhere.
    expect(counts.reconnects).toBeGreaterThanOrEqual(2);
    expect(counts.streams).toBeGreaterThan(counts.reconnects / 3);
    expect(counts.requests).toBeGreaterThan(10);
    // The load did meet a stopped instance (refused connections, retried elsewhere).
    expect(counts.retried).toBeGreaterThan(0);
    // Nothing in flight keeps a stopping instance: it exits well within its bound.
    expect(aStopped).toBeLessThan(5_000);
    expect(bStopped).toBeLessThan(5_000);
    expect((await fetch(`${a2.url}/readyz`)).status).toBe(200);
  }, 60_000);
});
