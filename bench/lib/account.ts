/**
 * The account service as the benches drive it: started as its own process (rate limits scaled
 * away, logs at warn), the request specs of its hot paths over a shared pool of token pairs, and a
 * full (non-guest) user signed in through the real e-mail flow, reading the code from the local
 * outbox.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type autocannon from 'autocannon';
import { freePort } from '../../server/common/net.js';
import { spawnServer, waitForHttp } from './harness.js';

export interface Pair {
  access_token: string;
  refresh_token: string;
}

export const jsonHeaders = { 'content-type': 'application/json' };

export interface RunningAccountService {
  url: string;
  child: ChildProcess;
  dataDir: string;
}

/**
 * `server/account/main.ts` on a free loopback port. `again` restarts a stopped service: same
 * DATA_DIR (same keys and, for PGlite, the same database) and same port (the issuer is
 * `http://HOST:PORT`, so its tokens stay valid); otherwise a new temp folder (the caller removes it).
 * `tree` runs a baseline's service instead of this checkout's (bench/lib/baseline.ts).
 */
export async function startAccountService(env: Record<string, string>, again?: RunningAccountService, tree?: string): Promise<RunningAccountService> {
  const port = again ? Number(new URL(again.url).port) : await freePort();
  const dataDir = again?.dataDir;
  const dir = dataDir ?? (await mkdtemp(path.join(tmpdir(), 'bench-run-')));
  const child = spawnServer(
    'server/account/main.ts',
    [],
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dir,
      RATE_LIMIT_MULTIPLIER: '100000',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      ...env,
    },
    tree,
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/.well-known/jwks.json`);
  return { url, child, dataDir: dir };
}

/**
 * Waits until the service starts no agent and its warm pool holds `pooled`: a pooled start is a
 * second or so of CPU, refilled after a run of sign-ins (not during one, by design), and it must
 * land in no side's measured run. False when it did not settle in time. Read from `/metrics` in
 * JSON, which holds the account's own series only: the text form also asks every agent running
 * here for its series (≈ 2 ms of the account's CPU per agent), and with the twenty-odd agents a
 * bench:check claims, the tail of that work landed in the next measured slice: ours with its warm
 * pool against ours without, polled that way, cost ≈ 110 µs more per guest sign-in; polled in
 * JSON, nothing more (docs/performance.md).
 */
export async function agentsSettled(url: string, pooled: number, timeoutMs = 60_000): Promise<boolean> {
  type Series = Array<{ name: string; values: Array<{ value: number }> }>;
  const until = Date.now() + timeoutMs;
  const gauge = (series: Series, name: string) => series.find((s) => s.name === name)?.values[0]?.value ?? Number.NaN;
  while (Date.now() < until) {
    const series = (await (await fetch(`${url}/metrics`, { headers: { accept: 'application/json' } })).json()) as Series;
    if (gauge(series, 'agents_starting') === 0 && gauge(series, 'agents_pooled') >= pooled) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/**
 * Refresh tokens waiting to be spent, oldest first: `take()` the oldest, `put()` a new one at the
 * back, both O(1). (An array's `unshift` moves every element: with tens of thousands of pairs in
 * the pool it cost the load generator, on the same two cores, more CPU than it saved.)
 */
export class TokenQueue {
  private items: string[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  put(token: string): void {
    this.items.push(token);
  }

  take(): string | undefined {
    if (this.head >= this.items.length) return undefined;
    const token = this.items[this.head++];
    if (this.head > 65_536 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return token;
  }
}

/**
 * Sessions a refresh run rotates, each in turn. A fixed set, so that every side of a comparison
 * measures the same thing, a live session's rotation: when every sign-in's pair joined the pool, a
 * side's refreshes were mostly sessions' first ones (which also verify the sign-in token's
 * signature, ≈ 130 µs of CPU) in proportion to how many sign-ins that side had just served, and
 * the same build against itself came out 1.11–1.15× in every round.
 */
const REFRESH_SESSIONS = 1024;

/**
 * Our hot paths as autocannon request specs: guest sign-in feeds the pools refresh and /auth/me
 * draw from (`prepare()`). A session's first refresh happens in the first run after `prepare()`
 * (a warm-up, in bench/peer.ts); later runs rotate sessions that have rotated before.
 */
export function ourWorkload(url: string, runId: string) {
  const pairs: Pair[] = [];
  let device = 0;
  const signIn: autocannon.Options = {
    url,
    requests: [
      {
        method: 'POST',
        path: '/api/v1/auth/guest',
        headers: jsonHeaders,
        setupRequest: (req) => ({ ...req, body: JSON.stringify({ device_id: `bench-device-${runId}-${device++}` }) }),
        onResponse: (status, body) => {
          if (status === 200) pairs.push(JSON.parse(body) as Pair);
        },
      },
    ],
  };
  const refreshPool = new TokenQueue();
  let meTokens: string[] = [];
  let meIndex = 0;
  const meRequest = {
    method: 'GET',
    path: '/api/v1/auth/me',
    setupRequest: (req: autocannon.Request) => ({ ...req, headers: { authorization: meTokens[meIndex++ % meTokens.length]! } }),
  };
  return {
    pairs,
    signIn,
    prepare() {
      if (!meTokens.length) meTokens = pairs.slice(0, 256).map((p) => `Bearer ${p.access_token}`);
      for (const pair of pairs.slice(0, REFRESH_SESSIONS - refreshPool.size)) refreshPool.put(pair.refresh_token);
      pairs.length = 0;
    },
    refresh: {
      url,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/auth/refresh',
          headers: jsonHeaders,
          setupRequest: (req: autocannon.Request) => ({ ...req, body: JSON.stringify({ refresh_token: refreshPool.take() ?? 'pool-empty' }) }),
          onResponse: (status: number, body: string) => {
            if (status === 200) refreshPool.put((JSON.parse(body) as Pair).refresh_token);
          },
        },
      ],
    } as autocannon.Options,
    me: { url, requests: [meRequest] } as autocannon.Options,
    meRequest,
  };
}

/**
 * A full account through the real e-mail flow (guests are capped at 5 MB uploads and 50
 * messages a day): request a code, read it from the service's local outbox, verify it.
 */
export async function signInByEmail(service: RunningAccountService, email: string): Promise<Pair & { userId: string }> {
  const api = `${service.url}/api/v1`;
  const asked = await fetch(`${api}/auth/login/email`, { method: 'POST', headers: jsonHeaders, body: JSON.stringify({ email }) });
  if (!asked.ok) throw new Error(`login/email: HTTP ${asked.status}`);
  const outbox = path.join(service.dataDir, 'outbox');
  let code: string | undefined;
  for (let i = 0; i < 100 && !code; i++) {
    const names = await readdir(outbox).catch(() => [] as string[]);
    for (const name of names
      .filter((n) => n.endsWith('.json'))
      .sort()
      .reverse()) {
      const mail = JSON.parse(await readFile(path.join(outbox, name), 'utf8')) as { to: string; text: string };
      if (mail.to === email) code = /\b(\d{6})\b/.exec(mail.text)?.[1];
      if (code) break;
    }
    if (!code) await new Promise((r) => setTimeout(r, 100));
  }
  if (!code) throw new Error(`no sign-in code for ${email} in ${outbox}`);
  const verified = await fetch(`${api}/auth/verify-magic-link`, { method: 'POST', headers: jsonHeaders, body: JSON.stringify({ email, code }) });
  if (!verified.ok) throw new Error(`verify-magic-link: HTTP ${verified.status} ${await verified.text()}`);
  const pair = (await verified.json()) as Pair;
  const me = (await (await fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${pair.access_token}` } })).json()) as {
    user_id: string;
    guest: boolean;
  };
  if (me.guest) throw new Error('e-mail sign-in gave a guest');
  return { ...pair, userId: me.user_id };
}
