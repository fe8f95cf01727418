/**
 * Webhook benchmark (`npx tsx bench/webhooks.ts`): what the outbox costs a sign-up, and how soon
 * an event reaches its endpoint. The account service runs in this process on PostgreSQL (a fresh
 * database on 127.0.0.1:5432 when reachable, embedded PGlite otherwise) with a receiver on
 * loopback that verifies nothing and answers 200 at once.
 *
 * 1. Sign-up throughput: new guests (`POST /auth/guest`, a new device id each), 16 connections,
 *    BENCH_SECONDS (default 8) per run, alternating runs without any endpoint (no event is
 *    written), with one endpoint subscribed to `user.created` and the worker paused (each
 *    sign-up writes its event and delivery in the same statement: the outbox's own cost), and
 *    with the worker delivering them meanwhile in the same process; best of two each.
 * 2. Delivery lag: 300 sign-ups at 30 per second; for each, the time from the event (its body's
 *    `timestamp`) to its arrival at the receiver; p50, p99, max. WEBHOOK_POLL is its default.
 *
 * Prints the figures.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { postgresReachable } from '../test/support/postgres.js';
import { startTestAccount } from '../test/support/servers.js';
import { adminApi } from '../test/support/admin-api.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const kind = (await postgresReachable()) ? 'postgres' : 'pglite';

const arrivals: Array<{ at: number; timestamp: string; path: string }> = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = Date.now();
    arrivals.push({ at, path: req.url ?? '', timestamp: (JSON.parse(Buffer.concat(chunks).toString()) as { timestamp: string }).timestamp });
    res.end('ok');
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

const account = await startTestAccount(kind, {
  WEBHOOK_ALLOW_PRIVATE: '1',
  AGENT_PROVISIONER: 'static',
  LOG_LEVEL: 'warn',
  GUEST_SIGNUPS_PER_HOUR: '100000000',
  GUEST_SIGNUPS_PER_DAY: '1000000',
  RATE_LIMIT_MULTIPLIER: '100000',
});
const api = adminApi(account);
const key = (await api.newKey(await api.newAdmin(), ['webhooks:write'])).headers;

async function signUps(seconds: number): Promise<number> {
  const result = await autocannon({
    url: `${account.url}/api/v1/auth/guest`,
    connections: 16,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        setupRequest: (request) => ({ ...request, body: JSON.stringify({ device_id: `bench-${randomUUID()}` }) }),
      },
    ],
  });
  if (result.non2xx) throw new Error(`${result.non2xx} sign-ups failed: ${JSON.stringify((result as { statusCodeStats?: unknown }).statusCodeStats)}`);
  return result.requests.average;
}

let endpointId: string | undefined;
let endpointPath = '';
let endpoints = 0;
async function withEndpoint(on: boolean): Promise<void> {
  if (on && !endpointId) {
    endpointPath = `/hook/${++endpoints}`;
    const url = receiverUrl.replace('/hook', endpointPath);
    endpointId = (await api.json<{ id: string }>(await api.post('/admin/webhooks', { url, event_types: ['user.created'] }, key))).id;
  } else if (!on && endpointId) {
    const res = await api.del(`/admin/webhooks/${endpointId}`, key);
    if (res.status !== 204) throw new Error(`removing the endpoint answered ${res.status}`);
    endpointId = undefined;
  }
}

await signUps(3); // warm-up
type Mode = 'without' | 'outbox' | 'delivering';
const runs: Record<Mode, number[]> = { without: [], outbox: [], delivering: [] };
const worker = account.services.webhooks.worker;
for (let round = 0; round < 2; round++) {
  for (const mode of ['without', 'outbox', 'delivering'] as const) {
    await withEndpoint(mode !== 'without');
    if (mode === 'outbox') await worker.close();
    else worker.start();
    runs[mode].push(await signUps(SECONDS));
  }
}
const best = (mode: Mode) => Math.max(...runs[mode]);

// A fresh endpoint: the backlog of the runs above goes with the old one.
await withEndpoint(false);
await withEndpoint(true);
worker.start();
const LAG_SIGN_UPS = 300;
for (let i = 0; i < LAG_SIGN_UPS; i++) {
  const started = Date.now();
  await fetch(`${account.url}/api/v1/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: `lag-${randomUUID()}` }),
  });
  await new Promise((r) => setTimeout(r, Math.max(0, 1000 / 30 - (Date.now() - started))));
}
for (const deadline = Date.now() + 30_000; arrivals.filter((a) => a.path === endpointPath).length < LAG_SIGN_UPS && Date.now() < deadline; )
  await new Promise((r) => setTimeout(r, 50));
const lags = arrivals
  .filter((a) => a.path === endpointPath)
  .map((a) => a.at - Date.parse(a.timestamp))
  .sort((a, b) => a - b);
const pct = (p: number) => lags[Math.min(lags.length - 1, Math.ceil((p / 100) * lags.length) - 1)] ?? Number.NaN;

console.log(`store: ${kind}, ${SECONDS} s per run, 16 connections`);
const line = (mode: Mode, what: string) => console.log(`sign-ups/s ${what}: ${runs[mode].map((n) => n.toFixed(0)).join(', ')} (best ${best(mode).toFixed(0)})`);
line('without', 'without endpoints');
line('outbox', 'with one endpoint, worker paused (event and delivery rows written)');
line('delivering', 'with one endpoint, worker delivering in the same process');
console.log(
  `outbox cost: ${((1 - best('outbox') / best('without')) * 100).toFixed(1)} % of sign-up throughput; with delivery in the same process: ${((1 - best('delivering') / best('without')) * 100).toFixed(1)} %`,
);
console.log(`delivery lag over ${lags.length}/${LAG_SIGN_UPS} events at 30/s: p50 ${pct(50)} ms, p99 ${pct(99)} ms, max ${lags.at(-1)} ms`);

await account.stop();
receiver.close();
