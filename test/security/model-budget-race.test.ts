/**
 * The daily model budget against calls in flight (server/account/agents/egress/model-usage.ts, reserved
 * by the egress gateway): usage is known only when an answer ends, so calls started together used
 * to pass the ceiling by all of them (four parallel 601-token calls recorded 2,415 tokens against
 * a limit of 1,000). Each call now holds its output ceiling plus its prompt's size until it
 * settles. Driven as a hostile tenant would: a real gateway on a Unix socket, the budget on a real
 * account store (PGlite), a model host on loopback that holds its answers until all calls arrived.
 */
import { gzipSync } from 'node:zlib';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { clearOfMidnightUtc, MIDNIGHT_MARGIN_MS } from '../support/clock.js';
import { EgressGateway, type OpenGateway } from '../../server/account/agents/egress/gateway.js';
import { ModelBudget } from '../../server/account/agents/egress/model-usage.js';
import { openAccountStore, type AccountStore } from '../../server/account/store.js';

const LIMIT = 1000;
/** What each answer of the model host reports: 1 prompt token and 600 completion tokens. */
const USAGE = { prompt_tokens: 1, completion_tokens: 600 };

const dir = mkdtempSync(path.join(os.tmpdir(), 'budget-race-'));
let store: AccountStore;
let model: http.Server;
let modelHost: string;
/** Bodies the model host received, parsed. */
const received: Array<Record<string, unknown>> = [];
/** Answers held until this many calls arrived (or 300 ms passed), so that the calls overlap. */
let together = 1;
const held: Array<() => void> = [];
/** How the model host answers: with usage (default), an SSE stream without usage. */
let answerWith: 'usage' | 'stream-without-usage' = 'usage';

// Opening a PGlite store and migrating it takes seconds, far more on a loaded machine.
beforeAll(async () => {
  store = await openAccountStore({ dataDir: dir });
  model = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push(JSON.parse(Buffer.concat(chunks).toString() || '{}') as Record<string, unknown>);
      const answer = () => {
        if (answerWith === 'usage') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ message: { content: 'x' } }], usage: USAGE }));
        } else {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end('data: {"choices":[{"delta":{"content":"free?"}}]}\n\ndata: [DONE]\n\n');
        }
      };
      held.push(answer);
      if (held.length >= together) for (const release of held.splice(0)) release();
      else
        setTimeout(() => {
          const waiting = held.indexOf(answer);
          if (waiting < 0) return;
          held.splice(waiting, 1);
          answer();
        }, 300);
    });
  });
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
  modelHost = `127.0.0.1:${(model.address() as AddressInfo).port}`;
}, 180_000);
afterAll(async () => {
  model.closeAllConnections();
  await new Promise<void>((resolve) => model.close(() => resolve()));
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

let open: OpenGateway | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
  received.length = 0;
  together = 1;
  answerWith = 'usage';
});

/** A gateway to the model host whose calls count against a fresh user's budget of LIMIT tokens. */
async function gatewayFor(userId: string): Promise<{ socket: string; budget: ModelBudget }> {
  const budget = new ModelBudget(store.sql, { account: LIMIT, guest: LIMIT, guestsTotal: 0 }, async () => ({ guest: false }));
  const gateway = new EgressGateway([{ origin: new URL(`http://${modelHost}`), credentials: {}, model: true }], pino({ level: 'silent' }), {
    limits: { maxConnections: 32, idleTimeoutMs: 10_000, maxDurationMs: 60_000, maxBodyBytes: 1024 * 1024 },
    meter: budget,
    modelCallMaxTokens: 600,
  });
  const socket = path.join(dir, `${userId}.sock`);
  open = await gateway.open({ agent: socket }, { agentId: `agent-${userId}`, userId });
  return { socket, budget };
}

function call(socketPath: string, body: Buffer | Record<string, unknown>, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      { socketPath, method: 'POST', path: '/v1/chat/completions', headers: { host: modelHost, 'content-type': 'application/json', ...headers }, agent: false },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(bytes);
  });
}

/** Usage is recorded as each answer closes, a moment after the client read it. */
async function settled(budget: ModelBudget, userId: string, atLeast: number): Promise<number> {
  for (const deadline = Date.now() + 5_000; ; await new Promise((r) => setTimeout(r, 20))) {
    const { used } = await budget.status(userId);
    if (used >= atLeast || Date.now() > deadline) return used;
  }
}

const chatRequest = { model: 'm', max_tokens: 600, messages: [{ role: 'user', content: 'hi' }] };

// Daily figures are filled and read back: no test straddles midnight UTC (support/clock.ts).
beforeEach(() => clearOfMidnightUtc(), MIDNIGHT_MARGIN_MS + 5_000);
describe('calls in flight against the daily budget', () => {
  it('four parallel 601-token calls against a 1,000-token budget pass it by at most one call; the rest get 429 with a short Retry-After', async () => {
    const { socket, budget } = await gatewayFor('racer');
    together = 4;
    const answers = await Promise.all([1, 2, 3, 4].map(() => call(socket, chatRequest)));
    const served = answers.filter((a) => a.status === 200).length;
    const refused = answers.filter((a) => a.status === 429);
    expect(served).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const answer of refused) expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'BUDGET_EXCEEDED' } });
    const used = await settled(budget, 'racer', 601 * served);
    expect(used).toBe(601 * served);
    expect(used).toBeLessThanOrEqual(LIMIT + 601);
    // Once the calls settled, the budget left is usable again, and a spent one refuses until midnight.
    expect((await call(socket, chatRequest)).status).toBe(used < LIMIT ? 200 : 429);
  });

  it('a call that names no max_tokens gets the ceiling written into it, so it cannot produce more than it reserved', async () => {
    const { socket } = await gatewayFor('no-ceiling');
    const answer = await call(socket, { model: 'm', messages: [{ role: 'user', content: 'write forever' }] });
    expect(answer.status).toBe(200);
    expect(received.at(-1)).toMatchObject({ max_tokens: 600, messages: [{ content: 'write forever' }] });
  });

  it('an answer that reports no usage (a stream without include_usage) is charged its estimate, not nothing', async () => {
    const { socket, budget } = await gatewayFor('no-usage');
    answerWith = 'stream-without-usage';
    const answer = await call(socket, { ...chatRequest, stream: true });
    expect(answer.status).toBe(200);
    expect(await settled(budget, 'no-usage', 600)).toBeGreaterThanOrEqual(600);
  });

  it('a generation request the gateway cannot read (compressed, or not a JSON object) is refused, not forwarded unmetered', async () => {
    const { socket } = await gatewayFor('unreadable');
    const gzipped = await call(socket, gzipSync(JSON.stringify(chatRequest)), { 'content-encoding': 'gzip' });
    expect(gzipped.status).toBe(403);
    const notJson = await call(socket, Buffer.from('max_tokens=1'));
    expect(notJson.status).toBe(403);
    expect(received).toHaveLength(0);
  });
});
