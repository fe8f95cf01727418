/**
 * `npm run bench:first-token` (and part of `npm run bench`): how long a person waits for the first
 * word of the first reply. Each sample is the whole path a client takes: POST /auth/guest, then
 * POST /api/v1/agent/chat, timed to the first `text` event (a scripted model on loopback answers at
 * once, so the figure is ours: sign-in, finding or starting the agent, the proxy, the agent's run).
 *
 * Side by side, on the product as `npm start` runs it (sandboxed local agents):
 *   - a brand-new guest, warm pool on (AGENT_WARM_POOL=2): the sign-in claims a pre-started agent;
 *   - a brand-new guest, pool off (AGENT_WARM_POOL=0): the first call cold-starts the agent;
 *   - a returning guest whose agent is running (signs in again, same device).
 * Between new-guest samples the pool is let refill (as between sign-ups on a quiet service).
 * Goal: a new guest's first token within 2× a running agent's. BENCH_FIRST_TOKEN_SAMPLES (10; 5
 * with BENCH_QUICK=1) samples per row; median and p90.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { startScriptedModel } from '../test/support/scripted-model.js';
import { openSse, readFrames } from '../test/support/sse.js';
import { startAccountService, type RunningAccountService } from './lib/account.js';
import { median, runIfEntry, stop, table } from './lib/harness.js';

const QUICK = process.env.BENCH_QUICK === '1';
const SAMPLES = Math.max(3, Number(process.env.BENCH_FIRST_TOKEN_SAMPLES ?? (QUICK ? 5 : 10)));
export const POOL_SIZE = 2;

type RowName = 'new guest, pool on' | 'new guest, pool off' | 'returning guest, agent running';
export interface FirstTokenResults {
  samples: number;
  rows: Array<{ name: RowName; medianMs: number; p90Ms: number; runsMs: number[] }>;
  ratios: { poolOn: number; poolOff: number };
}

export const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.9) - 1)] as number;

/** Sign-in (new or returning device) to the first text of the reply, in ms. */
async function firstToken(url: string, device: string): Promise<number> {
  const started = performance.now();
  const signIn = await fetch(`${url}/api/v1/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: device }),
  });
  if (!signIn.ok) throw new Error(`guest sign-in: ${signIn.status}`);
  const { access_token } = (await signIn.json()) as { access_token: string };
  const stream = await openSse(`${url}/api/v1/agent/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'hello', chat_id: randomUUID() }),
  });
  if (stream.status !== 200) throw new Error(`chat: ${stream.status}`);
  const frames = await readFrames(stream, (f) => f.data.type === 'text' || f.data.type === 'error');
  const elapsed = performance.now() - started;
  stream.close();
  if (frames.at(-1)?.data.type !== 'text') throw new Error('no text in the reply');
  return elapsed;
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN);
}

/** Waits (at most 60 s) until the warm pool holds POOL_SIZE agents again. */
export async function poolFull(url: string): Promise<void> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    if ((await metric(url, 'agents_pooled')) >= POOL_SIZE) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the warm pool did not refill within 60 s');
}

async function withService<T>(env: Record<string, string>, body: (service: RunningAccountService) => Promise<T>): Promise<T> {
  const service = await startAccountService({ AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0', ...env });
  try {
    return await body(service);
  } finally {
    await stop(service.child);
    await rm(service.dataDir, { recursive: true, force: true });
  }
}

export async function firstTokenBench(): Promise<FirstTokenResults> {
  const model = await startScriptedModel({ responder: () => ({ text: 'Hi.' }) });
  const run = `${Date.now().toString(36)}-`;
  try {
    const env = { MODEL: model.modelSpec };
    const runs: Record<RowName, number[]> = { 'new guest, pool on': [], 'new guest, pool off': [], 'returning guest, agent running': [] };
    await withService({ ...env, AGENT_WARM_POOL: '0' }, async ({ url }) => {
      for (let i = 0; i < SAMPLES; i++) runs['new guest, pool off'].push(await firstToken(url, `${run}off-${i}.bench-device`));
    });
    await withService({ ...env, AGENT_WARM_POOL: String(POOL_SIZE) }, async ({ url }) => {
      const returning = `${run}returning.bench-device`;
      await poolFull(url);
      await firstToken(url, returning);
      for (let i = 0; i < SAMPLES; i++) {
        await poolFull(url);
        runs['new guest, pool on'].push(await firstToken(url, `${run}on-${i}.bench-device`));
        runs['returning guest, agent running'].push(await firstToken(url, returning));
      }
    });
    const rows = (Object.keys(runs) as RowName[]).map((name) => ({ name, medianMs: median(runs[name]), p90Ms: p90(runs[name]), runsMs: runs[name] }));
    const running = median(runs['returning guest, agent running']);
    return {
      samples: SAMPLES,
      rows,
      ratios: { poolOn: median(runs['new guest, pool on']) / running, poolOff: median(runs['new guest, pool off']) / running },
    };
  } finally {
    await model.close();
  }
}

export function printFirstTokenTables(results: FirstTokenResults): void {
  console.log(`\n== first token: sign-in → first text of the reply (${results.samples} samples each)`);
  console.log(
    table(
      ['', 'median ms', 'p90 ms'],
      results.rows.map((r) => [r.name, Math.round(r.medianMs), Math.round(r.p90Ms)]),
    ),
  );
  console.log(`new guest ÷ running agent (medians): pool on ${results.ratios.poolOn.toFixed(2)}×, pool off ${results.ratios.poolOff.toFixed(2)}× (goal ≤ 2×)`);
}

await runIfEntry(import.meta.url, 'first-token.json', firstTokenBench, printFirstTokenTables);
