/**
 * The peer rounds, side by side: this service vs Better Auth (bench/peers/better-auth.ts, anonymous
 * plugin) and vs this service at an earlier commit (the baseline, bench/lib/baseline.ts), each on
 * a database of its own on the same PostgreSQL server (or PGlite), the same machine, the same
 * autocannon settings; runs alternate, each side first, second and last in turn:
 *   guest sign-in (new device)  vs  anonymous sign-in
 *   refresh (each token once)   vs  session read (GET /api/auth/get-session)
 *   protected GET /auth/me      vs  session-checked GET /me (auth.api.getSession)
 * Optionally with ceilings in the same rounds: bare express and bare node:http fed the /auth/me
 * request stream. Each round's own ratios and the machine's 1-minute load average during each run
 * are kept beside the medians: the goals (PEER_GOALS) hold in every round, not on average.
 *
 * Our service runs with its warm pool (AGENT_WARM_POOL=POOL_SIZE, the default on a machine with
 * memory to spare): a new guest's sign-in claims a pooled agent and the pool refills after a run of
 * sign-ups. Every run waits until no agent is starting and the pool is full, so that a pooled
 * start (a second or so of CPU) falls in no side's measured run. The agents those sign-ins claim
 * are never used, and stop after AGENT_IDLE_SECONDS instead of the default half hour: left
 * running, the twenty-odd of them idled on and gave back their start-up heaps in the later runs of
 * every side (bench/lib/conditions.ts), 20–460 ms of CPU per side and round; stopped, 0–170 ms.
 *
 * Used by `npm run bench` (bench/run.ts) and `npm run bench:check` (bench/check.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type autocannon from 'autocannon';
import { createTestDatabase, postgresServerUrl, type TestDatabase } from '../test/support/postgres.js';
import { buildIfStale } from '../scripts/build.js';
import { freePort } from '../server/common/net.js';
import { agentsSettled, jsonHeaders, ourWorkload, startAccountService } from './lib/account.js';
import { baselineTree, shortCommit } from './lib/baseline.js';
import { type Conditions, conditionsProbe, type MeasuredServer } from './lib/conditions.js';
import { load, median, medianRow, printRow, spawnServer, stop, table, waitForHttp, type Row } from './lib/harness.js';

/** The account service before session bookkeeping (sessions' last use, the activity log): main just before account self-service was merged. */
export const BASELINE_COMMIT = process.env.BENCH_TOKENS_BASELINE ?? 'fca629c';
/** Our warm pool in the rounds. */
const POOL_SIZE = 2;
/** How long the agents our sign-ins claim (and never use) keep running: see above. */
const AGENT_IDLE_SECONDS = 2;
const CONNECTIONS = 32;
/** Turns per side and round (see the rounds below). */
const SLICES = 3;

export type Side = 'ours' | 'peer' | 'baseline';
const SIDES: Side[] = ['ours', 'peer', 'baseline'];
export type Path = 'signin' | 'refresh' | 'me';
export const PATHS: Path[] = ['signin', 'refresh', 'me'];
const PATH_LABELS: Record<Path, string> = { signin: 'POST /auth/guest (new device)', refresh: 'POST /auth/refresh', me: 'GET /auth/me' };
const PATH_NAMES: Record<Path, string> = {
  signin: 'sign-in: guest (new device) vs anonymous',
  refresh: 'refresh vs session read',
  me: 'protected call vs session-checked call',
};
const RUN_NAMES: Record<Side, Record<Path, string>> = {
  ours: { signin: 'ours POST /auth/guest (new device)', refresh: 'ours POST /auth/refresh', me: 'ours GET /auth/me' },
  baseline: { signin: 'baseline POST /auth/guest (new device)', refresh: 'baseline POST /auth/refresh', me: 'baseline GET /auth/me' },
  peer: { signin: 'peer POST /api/auth/sign-in/anonymous', refresh: 'peer GET /api/auth/get-session', me: 'peer GET /me (getSession)' },
};

/** What every round must reach (issue 42): ours ÷ Better Auth, and ours ÷ the baseline where set. */
export const PEER_GOALS: Record<Path, { peer: number; baseline?: number }> = {
  signin: { peer: 2.5, baseline: 0.95 },
  refresh: { peer: 2 },
  me: { peer: 4 },
};

export interface PeerOptions {
  seconds: number;
  rounds: number;
  usePostgres: boolean;
  /** Bare express and node:http in the same rounds (npm run bench; the check leaves them out). */
  ceilings: boolean;
  runId: string;
}

type Measured = Row & Partial<Conditions> & { slices?: number[] };
type Compared = { ours: Row & { runs: number[] }; ratio: number; rounds: number[] };

/** One path's runs in one round, per side. */
export interface PathRound {
  round: number;
  reqPerSec: Record<Side, number>;
  loadAverage: Record<Side, number>;
  checkpoint: Record<Side, boolean>;
  /** CPU µs per request: the side's process and the PostgreSQL backends of its database. */
  cpuUs: Record<Side, number>;
  /** Requests in each of the side's slices, in the order they ran (reqPerSec is the median slice's rate). */
  slices: Record<Side, number[]>;
  /** CPU ms our local agents spent during the side's slices (bench/lib/conditions.ts says why they do). */
  agentsCpuMs: Record<Side, number>;
}

export interface PeerResults {
  goals: typeof PEER_GOALS;
  comparisons: Array<Compared & { what: string; peer: Row & { runs: number[] } }>;
  sinceBaseline: { commit: string; rows: Array<Compared & { what: string; baseline: Row & { runs: number[] } }> };
  /** Each path's runs round by round, req/s per side, with the load average during each run. */
  roundsByPath: Record<Path, PathRound[]>;
  ceilings?: { http: Row & { runs: number[] }; express: Row & { runs: number[] } };
  mePercentOfExpress?: number;
  /** Runs that began before our agents had settled (a pooled start may have fallen in them). */
  unsettledRuns: number;
}

/**
 * One side's slices of a round as one run: the rate of its median slice, CPU and requests summed
 * (CPU per request is their quotient), the load average their mean, a checkpoint if any slice had
 * one; latencies of the median slice. The median, not requests over the whole time: one slice in
 * three that a burst elsewhere on the machine (an autovacuum, another process) cut by a third
 * moved a round's sum by a tenth, in code no change had touched (a `/auth/me` round of 1,895,
 * 3,031 and 3,347 req/s); the middle slice is what the side does when nothing else interferes.
 * Every slice's count is kept (`slices`) to recompute it either way.
 */
function joinSlices(name: string, slices: Measured[]): Measured {
  const total = slices.reduce((n, r) => n + r.total, 0);
  const mid = medianRow(name, slices);
  return {
    name,
    requestsPerSecond: mid.requestsPerSecond,
    slices: slices.map((r) => r.total),
    p50: mid.p50,
    p99: mid.p99,
    total,
    non2xx: mid.non2xx,
    errors: mid.errors,
    loadAverage: Math.round((slices.reduce((n, r) => n + (r.loadAverage ?? 0), 0) / slices.length) * 10) / 10,
    checkpoint: slices.some((r) => r.checkpoint),
    cpuMs: slices.reduce((n, r) => n + (r.cpuMs ?? 0), 0),
    agentsCpuMs: slices.reduce((n, r) => n + (r.agentsCpuMs ?? 0), 0),
  };
}

function peerWorkload(url: string) {
  const cookies: string[] = [];
  let i = 0;
  const withCookie = (p: string) => ({
    method: 'GET',
    path: p,
    setupRequest: (req: autocannon.Request) => ({ ...req, headers: { cookie: cookies[i++ % cookies.length]! } }),
  });
  return {
    signIn: {
      url,
      requests: [
        {
          method: 'POST',
          path: '/api/auth/sign-in/anonymous',
          headers: { ...jsonHeaders, origin: url },
          body: '{}',
          onResponse: (status: number, _body: string, _ctx: unknown, headers: Record<string, string>) => {
            const setCookie = headers['set-cookie'];
            if (status === 200 && setCookie && cookies.length < 256) cookies.push(String(setCookie).split(';')[0]!);
          },
        },
      ],
    } as autocannon.Options,
    refresh: { url, requests: [withCookie('/api/auth/get-session')] } as autocannon.Options,
    me: { url, requests: [withCookie('/me')] } as autocannon.Options,
    prepare() {},
  };
}

export async function peerComparison(options: PeerOptions): Promise<PeerResults> {
  const { seconds, rounds, usePostgres } = options;
  // Our pooled agents run from the build, as in production: from stale sources they would start
  // through tsx, with many times the CPU, and give it back as noise in later runs.
  await buildIfStale({ web: false });
  const children: ChildProcess[] = [];
  const cleanups: Array<() => Promise<unknown>> = [];
  const database = async (): Promise<Record<string, string>> => {
    if (!usePostgres) return {};
    const d: TestDatabase = await createTestDatabase();
    cleanups.push(() => d.drop());
    return { DATABASE_URL: d.url };
  };
  /** Each side's process and database, whose CPU each run counts. */
  const servers = {} as Record<Side, MeasuredServer>;
  const measured = (side: Side, child: ChildProcess, env: Record<string, string>) => {
    servers[side] = { pid: child.pid!, database: env.DATABASE_URL && new URL(env.DATABASE_URL).pathname.slice(1) };
  };
  const startOurs = async (side: 'ours' | 'baseline', tree?: string) => {
    const env = await database();
    const started = await startAccountService(
      { ...env, ...(tree ? {} : { AGENT_WARM_POOL: String(POOL_SIZE), AGENT_IDLE_TIMEOUT: String(AGENT_IDLE_SECONDS) }) },
      undefined,
      tree,
    );
    children.push(started.child);
    cleanups.push(() => rm(started.dataDir, { recursive: true, force: true }));
    measured(side, started.child, env);
    return started;
  };
  try {
    const ours = await startOurs('ours');
    const base = await startOurs('baseline', await baselineTree(BASELINE_COMMIT, { build: false }));
    const peerPort = await freePort();
    const peerDir = await mkdtemp(path.join(tmpdir(), 'bench-peer-'));
    cleanups.push(() => rm(peerDir, { recursive: true, force: true }));
    const peerEnv = usePostgres ? await database() : { PGLITE_DIR: peerDir };
    const peerChild = spawnServer('bench/peers/better-auth.ts', [String(peerPort)], peerEnv);
    children.push(peerChild);
    measured('peer', peerChild, peerEnv);
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const ceilingPorts = options.ceilings ? { express: await freePort(), http: await freePort() } : undefined;
    if (ceilingPorts)
      children.push(
        spawnServer('bench/ceiling-server.ts', ['express', String(ceilingPorts.express)], {}),
        spawnServer('bench/ceiling-server.ts', ['http', String(ceilingPorts.http)], {}),
      );
    await waitForHttp(`${peerUrl}/health`);
    if (ceilingPorts) await Promise.all([waitForHttp(`http://127.0.0.1:${ceilingPorts.express}/`), waitForHttp(`http://127.0.0.1:${ceilingPorts.http}/`)]);

    const workloads = {
      ours: ourWorkload(ours.url, options.runId),
      baseline: ourWorkload(base.url, options.runId),
      peer: peerWorkload(peerUrl),
    };
    const optionsOf = (side: Side, what: Path) => workloads[side][what === 'signin' ? 'signIn' : what];
    let unsettledRuns = 0;
    const settled = async () => {
      if (!(await agentsSettled(ours.url, POOL_SIZE))) unsettledRuns++;
    };
    const loadOnce = (name: string, opts: autocannon.Options, quiet = false) => load(name, { connections: CONNECTIONS, duration: seconds, ...opts, quiet });
    const run = async (name: string, opts: autocannon.Options, quiet = false) => {
      await settled();
      return loadOnce(name, opts, quiet);
    };
    // Warm-up (not measured), every side alike; the sign-ins fill the token pools the other paths draw on.
    for (const what of ['signin', 'me', 'refresh'] as const) {
      for (const side of SIDES) await run(`warm-up ${RUN_NAMES[side][what]}`, { ...optionsOf(side, what), duration: Math.min(2, seconds) }, true);
      if (what === 'signin') for (const side of SIDES) workloads[side].prepare();
    }

    const raw: Record<string, Measured[]> = {};
    const add = (key: string, row: Measured) => (raw[key] ??= []).push(row);
    const probe = await conditionsProbe(usePostgres ? postgresServerUrl() : undefined, ours.child.pid);
    cleanups.push(async () => probe.close());
    for (let round = 0; round < rounds; round++) {
      console.log(`round ${round + 1}/${rounds}`);
      // A side's run in a round is SLICES shorter runs, the sides taking turns slice by slice, so
      // that a burst of load from other processes (seconds long on a shared machine) falls on
      // every side of the round alike instead of on whichever side ran then. Each side goes first,
      // second and last in turn, so what one leaves behind (a vacuum, a checkpoint, a warm cache)
      // is not always charged to the same side.
      const measure = async (what: Path) => {
        const slices = Object.fromEntries(SIDES.map((side) => [side, [] as Measured[]])) as Record<Side, Measured[]>;
        for (let slice = 0; slice < SLICES; slice++) {
          const order = SIDES.map((_, i) => SIDES[(i + round + slice) % SIDES.length]!);
          for (const side of order) {
            const opts = { ...optionsOf(side, what), duration: seconds / SLICES };
            // Settled before the measured window opens: the check's CPU is the harness's, not a request's.
            await settled();
            slices[side].push(await probe.around(() => loadOnce(RUN_NAMES[side][what], opts, true), servers[side]));
          }
        }
        for (const side of SIDES) add(`${what}:${side}`, printRow(joinSlices(RUN_NAMES[side][what], slices[side])));
      };
      await measure('signin');
      for (const side of SIDES) workloads[side].prepare();
      await measure('refresh');
      if (ceilingPorts) {
        const stream = (port: number) => ({ url: `http://127.0.0.1:${port}`, requests: [workloads.ours.meRequest] });
        add('ceiling:http', await run('bare node:http', stream(ceilingPorts.http)));
        add('ceiling:express', await run('bare express', stream(ceilingPorts.express)));
      }
      await measure('me');
    }
    const m = (k: string, name: string) => medianRow(name, raw[k]!);
    const ratio = (a: number, b: number) => Math.round((a / Math.max(1, b)) * 100) / 100;
    const compare = (what: Path, other: Side) => {
      const [ourRow, otherRow] = [m(`${what}:ours`, 'ours'), m(`${what}:${other}`, other)];
      // Rounds are where the noise shows: each round's own ratio, not only the medians'.
      const eachRound = ourRow.runs.map((r, i) => ratio(r, otherRow.runs[i]!));
      return { ours: ourRow, other: otherRow, ratio: ratio(ourRow.requestsPerSecond, otherRow.requestsPerSecond), rounds: eachRound };
    };
    const comparisons = PATHS.map((what) => {
      const { ours: o, other, ...rest } = compare(what, 'peer');
      return { what: PATH_NAMES[what], ours: o, peer: other, ...rest };
    });
    const sinceBaseline = {
      commit: shortCommit(BASELINE_COMMIT),
      rows: PATHS.map((what) => {
        const { ours: o, other, ...rest } = compare(what, 'baseline');
        return { what: PATH_LABELS[what], ours: o, baseline: other, ...rest };
      }),
    };
    const perSide = <T>(pick: (row: Measured) => T, what: Path, i: number) =>
      Object.fromEntries(SIDES.map((side) => [side, pick(raw[`${what}:${side}`]![i]!)])) as Record<Side, T>;
    const roundsByPath = Object.fromEntries(
      PATHS.map((what) => [
        what,
        raw[`${what}:ours`]!.map((_, i) => ({
          round: i + 1,
          reqPerSec: perSide((r) => r.requestsPerSecond, what, i),
          loadAverage: perSide((r) => r.loadAverage ?? 0, what, i),
          checkpoint: perSide((r) => r.checkpoint ?? false, what, i),
          cpuUs: perSide((r) => Math.round(((r.cpuMs ?? 0) * 1000) / Math.max(1, r.total)), what, i),
          slices: perSide((r) => r.slices ?? [], what, i),
          agentsCpuMs: perSide((r) => r.agentsCpuMs ?? 0, what, i),
        })),
      ]),
    ) as PeerResults['roundsByPath'];
    const ceilings = ceilingPorts ? { http: m('ceiling:http', 'bare node:http'), express: m('ceiling:express', 'bare express') } : undefined;
    const mePercentOfExpress = ceilings ? Math.round((comparisons[2]!.ours.requestsPerSecond / ceilings.express.requestsPerSecond) * 1000) / 10 : undefined;
    return { goals: PEER_GOALS, comparisons, sinceBaseline, roundsByPath, ceilings, mePercentOfExpress, unsettledRuns };
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  }
}

/** Each goal of PEER_GOALS that some round missed, in words (empty: all met). */
export function missedGoals(peer: PeerResults): string[] {
  const missed: string[] = [];
  PATHS.forEach((what, i) => {
    const goal = PEER_GOALS[what];
    const lowest = (rounds: number[]) => Math.min(...rounds);
    const vsPeer = peer.comparisons[i]!;
    if (lowest(vsPeer.rounds) < goal.peer) missed.push(`${vsPeer.what}: lowest round ${lowest(vsPeer.rounds)}× < ${goal.peer}× Better Auth`);
    const vsBaseline = peer.sinceBaseline.rows[i]!;
    if (goal.baseline !== undefined && lowest(vsBaseline.rounds) < goal.baseline)
      missed.push(`${vsBaseline.what}: lowest round ${lowest(vsBaseline.rounds)}× < ${goal.baseline}× ${peer.sinceBaseline.commit}`);
  });
  return missed;
}

export function printPeerTables(peer: PeerResults, options: Pick<PeerOptions, 'seconds' | 'rounds' | 'usePostgres'>): void {
  const goalOf = (what: Path, against: 'peer' | 'baseline') => PEER_GOALS[what][against];
  console.log(
    `Peer (medians of ${options.rounds} alternating ${options.seconds} s runs, ${CONNECTIONS} connections; ${options.usePostgres ? 'PostgreSQL' : 'PGlite'}):`,
  );
  console.log(
    table(
      ['comparison', 'ours req/s', 'ours p99 ms', 'Better Auth req/s', 'Better Auth p99 ms', 'ratio', 'each round', 'goal every round'],
      peer.comparisons.map((c, i) => {
        const goal = goalOf(PATHS[i]!, 'peer')!;
        return [
          c.what,
          c.ours.requestsPerSecond,
          c.ours.p99,
          c.peer.requestsPerSecond,
          c.peer.p99,
          `${c.ratio}×`,
          c.rounds.map((r) => `${r}×`).join(' '),
          `≥ ${goal}×: ${Math.min(...c.rounds) >= goal ? 'met' : 'MISSED'}`,
        ];
      }),
    ),
  );
  console.log(`\nThis build vs ${peer.sinceBaseline.commit} (before session bookkeeping), same rounds:`);
  console.log(
    table(
      ['path', 'this build req/s', 'baseline req/s', 'ratio', 'each round', 'goal every round', 'CPU µs/request this build / baseline (medians)'],
      peer.sinceBaseline.rows.map((r, i) => {
        const what = PATHS[i]!;
        const goal = goalOf(what, 'baseline');
        const cpu = (side: Side) => median(peer.roundsByPath[what].map((round) => round.cpuUs[side]));
        return [
          r.what,
          r.ours.requestsPerSecond,
          r.baseline.requestsPerSecond,
          `${r.ratio}×`,
          r.rounds.map((x) => `${x}×`).join(' '),
          goal === undefined ? '' : `≥ ${goal}×: ${Math.min(...r.rounds) >= goal ? 'met' : 'MISSED'}`,
          `${cpu('ours')} / ${cpu('baseline')}`,
        ];
      }),
    ),
  );
  console.log(
    "\nRound by round: req/s, CPU µs per request (the process and its PostgreSQL backends), the 1-minute load average during the run (* a PostgreSQL checkpoint during it), our agents' CPU ms during it:",
  );
  const cell = (r: PathRound, side: Side) =>
    `${r.reqPerSec[side]}/s, ${r.cpuUs[side]} µs (${r.loadAverage[side]}${r.checkpoint[side] ? '*' : ''}; agents ${r.agentsCpuMs[side]} ms)`;
  console.log(
    table(
      ['path', 'round', 'ours', 'Better Auth', 'baseline'],
      PATHS.flatMap((what) => peer.roundsByPath[what].map((r) => [PATH_LABELS[what], r.round, cell(r, 'ours'), cell(r, 'peer'), cell(r, 'baseline')])),
    ),
  );
  if (peer.ceilings) {
    console.log(
      table(
        ['ceiling (same /auth/me request stream)', 'req/s', 'p99 ms'],
        [
          ['bare node:http', peer.ceilings.http.requestsPerSecond, peer.ceilings.http.p99],
          ['bare express', peer.ceilings.express.requestsPerSecond, peer.ceilings.express.p99],
        ],
      ),
    );
    const pct = peer.mePercentOfExpress ?? 0;
    console.log(`GET /auth/me = ${pct}% of bare express (target ≥ 70%: ${pct >= 70 ? 'met' : 'MISSED'})`);
  }
  if (peer.unsettledRuns) console.log(`note: ${peer.unsettledRuns} runs began while our agents were still starting (not settled within 60 s)`);
}
