/**
 * The web client's answer to 503 AGENT_CAPACITY (client/web/src/busy.ts), over real HTTP: it
 * says the service is busy, waits the Retry-After and tries again; other 503s are not retried.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { onBusy, retryingWhenBusy } from '../../client/web/src/busy.js';

let base: string;
let refusals = 0;
const server = createServer((req, res) => {
  if (req.url === '/busy' && refusals > 0) {
    refusals--;
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    return res.end(JSON.stringify({ detail: 'busy', code: 'AGENT_CAPACITY' }));
  }
  if (req.url === '/down') {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    return res.end(JSON.stringify({ detail: 'down', code: 'AGENT_UNAVAILABLE' }));
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ ok: true }));
});
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

it('waits and retries while the service is at capacity, telling the person so', async () => {
  const seen: Array<number | null> = [];
  const off = onBusy((s) => seen.push(s));
  refusals = 2;
  let calls = 0;
  const fetchCounting: typeof fetch = (input, init) => {
    calls++;
    return fetch(input, init);
  };
  const res = await retryingWhenBusy(fetchCounting)(`${base}/busy`, { method: 'POST', body: '{"a":1}' });
  off();
  expect(res.status).toBe(200);
  expect(calls).toBe(3);
  expect(seen).toEqual([1, 1, null]);
});

it('leaves other 503s to the caller', async () => {
  const res = await retryingWhenBusy(fetch)(`${base}/down`);
  expect(res.status).toBe(503);
  expect(await res.json()).toMatchObject({ code: 'AGENT_UNAVAILABLE' });
});
