/**
 * With AGENT_EXEC_NETWORK=allowlist, exec commands reach the allow-listed hosts through the egress
 * gateway as their HTTP proxy. A CONNECT tunnel is opaque to the gateway, so model calls sent
 * through one were never metered: three tunnelled `/v1/chat/completions` calls cost the user
 * nothing. The gateway now opens no tunnel to the model host; the plain (proxy-form) path, where
 * usage is read and the budget holds, is the only way to it. A real gateway on Unix sockets, the
 * budget on a real account store (PGlite), a model host on loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressGateway, type OpenGateway } from '../../server/account/agents/egress/gateway.js';
import { ModelBudget } from '../../server/account/agents/egress/model-usage.js';
import { openAccountStore, type AccountStore } from '../../server/account/store.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'model-tunnel-'));
const sockets = { agent: path.join(dir, 'egress.sock'), exec: path.join(dir, 'exec-egress.sock') };
const USER = 'tunneller';
let store: AccountStore;
let model: http.Server;
let modelHost: string;
let budget: ModelBudget;
let open: OpenGateway;
let modelCalls = 0;

// Opening a PGlite store and migrating it takes seconds, far more on a loaded machine.
beforeAll(async () => {
  store = await openAccountStore({ dataDir: dir });
  model = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      modelCalls++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ message: { content: 'paid?' } }], usage: { prompt_tokens: 50, completion_tokens: 50 } }));
    });
  });
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
  modelHost = `127.0.0.1:${(model.address() as AddressInfo).port}`;
  budget = new ModelBudget(store.sql, { account: 1_000_000, guest: 1_000_000, guestsTotal: 0 }, async () => ({ guest: false }));
  const gateway = new EgressGateway(
    [{ origin: new URL(`http://${modelHost}`), credentials: { authorization: 'Bearer operator' }, model: true }],
    pino({ level: 'silent' }),
    {
      limits: { maxConnections: 32, idleTimeoutMs: 10_000, maxDurationMs: 60_000, maxBodyBytes: 1024 * 1024 },
      meter: budget,
    },
  );
  open = await gateway.open(sockets, { agentId: 'agent-tunnel', userId: USER });
}, 180_000);
afterAll(async () => {
  await open?.close();
  model.closeAllConnections();
  await new Promise<void>((resolve) => model.close(() => resolve()));
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const completion = JSON.stringify({ model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });

/**
 * What `curl --proxytunnel` does: CONNECT to the model host, then three chat completions inside
 * the tunnel. Resolves with the CONNECT status and how many answers came back through it.
 */
function tunnelledCalls(socketPath: string): Promise<{ status: number; answers: number }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    let buffer = '';
    let status = 0;
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('latin1');
      if (!status && buffer.includes('\r\n\r\n')) {
        status = Number(buffer.split(' ')[1]);
        buffer = buffer.slice(buffer.indexOf('\r\n\r\n') + 4);
        if (status !== 200) return;
        const request = `POST /v1/chat/completions HTTP/1.1\r\nhost: ${modelHost}\r\ncontent-type: application/json\r\ncontent-length: ${completion.length}\r\n\r\n${completion}`;
        socket.write(request.repeat(3));
      }
      if (status === 200 && (buffer.match(/HTTP\/1\.1 200/g) ?? []).length === 3) socket.end();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ status, answers: (buffer.match(/"paid\?"/g) ?? []).length }));
    socket.write(`CONNECT ${modelHost} HTTP/1.1\r\nhost: ${modelHost}\r\n\r\n`);
  });
}

describe('exec commands and the model host', () => {
  it('tunnelled /v1/chat/completions calls cannot cost the user nothing: no CONNECT to the model host, on either socket', async () => {
    for (const socketPath of [sockets.exec, sockets.agent]) {
      const before = modelCalls;
      const tunnel = await tunnelledCalls(socketPath);
      expect(tunnel).toEqual({ status: 403, answers: 0 });
      expect(modelCalls).toBe(before);
    }
    expect((await budget.status(USER)).used).toBe(0);
  });

  it('the plain proxy path reaches the model host, and every call on it is metered', async () => {
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          socketPath: sockets.exec,
          method: 'POST',
          path: `http://${modelHost}/v1/chat/completions`,
          headers: { host: modelHost, 'content-type': 'application/json' },
          agent: false,
        },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end(completion);
    });
    expect(answer.status).toBe(200);
    for (const deadline = Date.now() + 5_000; (await budget.status(USER)).used < 100 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
    expect((await budget.status(USER)).used).toBe(100);
  });
});
