/**
 * `npm run bench:agents` (and part of `npm run bench`): what an agent's start and an idle agent
 * cost the host, this tree's build side by side with a baseline's (the agent as it ran before
 * the bundle: docs/performance.md, "An agent's start").
 *
 * For each side, BENCH_AGENTS (20; 10 with BENCH_QUICK=1) compiled agent processes are started
 * one after another, as new guests' first calls start them: a new workspace each, spawn → first
 * `/health` answer timed (the cold start; goal ≤ 300 ms median) with the CPU time the process used
 * until then (which a loaded machine stretches far less than the wall time), then one chat
 * message answered by a scripted model on loopback. Then they all sit idle and each one's RSS is read from /proc after
 * BENCH_IDLE_SECONDS (45; 30 with BENCH_QUICK=1): V8 gives back the young generation it grew
 * during start-up once a process has been idle for a while (10–40 s here), and an idle agent
 * lives for AGENT_IDLE_TIMEOUT (30 min), so that is the figure that adds up on a host. RSS right
 * at `/health` is reported too. Then all are stopped and started again on their workspaces (an
 * agent coming back after its idle stop: its schema unchanged) and measured the same way. Goal:
 * idle RSS ≤ 80 MB. The CPU each idle agent uses over the idle window's last 10 s is read too (an
 * agent that waits should cost the host nothing but memory). Sides alternate between rounds (BENCH_AGENT_ROUNDS, 1 by default: about 5
 * minutes with 20 agents); the load average is recorded at the start of each side's phase.
 *
 * The baseline is AGENT_BASELINE (the last commit before the agent bundle), with its own build
 * (bench/lib/baseline.ts). Every agent listens on loopback only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../server/common/net.js';
import { buildIfStale } from '../scripts/build.js';
import { startScriptedModel } from '../test/support/scripted-model.js';
import { AGENT_BASELINE, baselineTree, shortCommit } from './lib/baseline.js';
import { agentScript, cpuMsOf, loadAverage, median, root, rssOf, runIfEntry, stop, table } from './lib/harness.js';

const QUICK = process.env.BENCH_QUICK === '1';
const COUNT = Math.min(50, Number(process.env.BENCH_AGENTS ?? (QUICK ? 10 : 20)));
/** The end of the idle window over which an idle agent's CPU is read. */
const IDLE_CPU_SECONDS = 10;
const IDLE_SECONDS = Math.max(IDLE_CPU_SECONDS + 5, Math.min(120, Number(process.env.BENCH_IDLE_SECONDS ?? (QUICK ? 30 : 45))));
const ROUNDS = Math.min(5, Number(process.env.BENCH_AGENT_ROUNDS ?? 1));
const GOALS = { coldStartMs: 300, rssIdleMb: 80 };
const START_TIMEOUT_MS = 30_000;
const SECRET = 'bench-secret-0123456789';

type Side = 'baseline' | 'bundle';
type Phase = 'new workspace' | 'restart';

export interface AgentSample {
  coldStartMs: number;
  /** CPU time (user + system) the agent process used from spawn to its first `/health` answer. */
  coldStartCpuMs: number;
  firstReplyMs: number;
  rssAtHealthMb: number;
  rssIdleMb: number;
  /** CPU ms a second over the idle window's last IDLE_CPU_SECONDS: what an agent that waits costs. */
  idleCpuMsPerSecond: number;
}

export interface AgentsResults {
  date: string;
  count: number;
  idleSeconds: number;
  rounds: number;
  baseline: string;
  goals: typeof GOALS;
  samples: Record<Side, Record<Phase, AgentSample[]>>;
  /** 1, 5 and 15 minute load averages as each side's phase began, in the order they ran. */
  loadAverages: Array<{ round: number; side: Side; phase: Phase; loadAverage: number[] }>;
  rows: Array<{
    side: Side;
    phase: Phase;
    coldStartMedianMs: number;
    coldStartMaxMs: number;
    coldStartCpuMedianMs: number;
    firstReplyMedianMs: number;
    rssAtHealthMeanMb: number;
    rssIdleMeanMb: number;
    rssIdleMaxMb: number;
    idleCpuMeanMsPerSecond: number;
  }>;
  ratios: Record<Phase, { coldStart: number; coldStartCpu: number; rssIdleMean: number; rssIdleMax: number }>;
}

async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  const until = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`agent exited with ${child.exitCode} before answering ${url}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`${url} did not answer within ${START_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface Running {
  child: ChildProcess;
  coldStartMs: number;
  coldStartCpuMs: number;
  firstReplyMs: number;
  rssAtHealthMb: number;
}

async function startOne(tree: string, workspace: string, modelSpec: string): Promise<Running> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawn(process.execPath, [agentScript(tree)], {
    cwd: tree,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      AGENT_PORT: String(port),
      AGENT_SECRET: SECRET,
      AGENT_WORKSPACE: workspace,
      MODEL: modelSpec,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    await waitForHealth(`${url}/health`, child);
    const coldStartMs = performance.now() - started;
    const coldStartCpuMs = await cpuMsOf(child.pid ?? 0);
    const rssAtHealthMb = (await rssOf(child.pid ?? 0)) / 2 ** 20;
    const sent = performance.now();
    const reply = await fetch(`${url}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` },
      body: JSON.stringify({ chat_id: 'bench', message: 'hello' }),
      signal: AbortSignal.timeout(START_TIMEOUT_MS),
    });
    const body = await reply.text();
    if (!reply.ok || !body.includes('"type":"done"')) throw new Error(`chat answered ${reply.status}: ${body.slice(0, 200)}`);
    return { child, coldStartMs, coldStartCpuMs, firstReplyMs: performance.now() - sent, rssAtHealthMb };
  } catch (error) {
    await stop(child, 'SIGKILL');
    throw error;
  }
}

/** Starts one agent per workspace in turn, lets them idle, reads their RSS, stops them. */
async function phase(tree: string, workspaces: string[], modelSpec: string): Promise<AgentSample[]> {
  const running: Running[] = [];
  try {
    for (const workspace of workspaces) running.push(await startOne(tree, workspace, modelSpec));
    await new Promise((resolve) => setTimeout(resolve, (IDLE_SECONDS - IDLE_CPU_SECONDS) * 1000));
    const cpuOf = (agents: Running[]) => Promise.all(agents.map((agent) => cpuMsOf(agent.child.pid ?? 0)));
    const cpuBefore = await cpuOf(running);
    await new Promise((resolve) => setTimeout(resolve, IDLE_CPU_SECONDS * 1000));
    const cpuAfter = await cpuOf(running);
    const samples: AgentSample[] = [];
    for (const [i, agent] of running.entries()) {
      samples.push({
        idleCpuMsPerSecond: (cpuAfter[i]! - cpuBefore[i]!) / IDLE_CPU_SECONDS,
        coldStartMs: agent.coldStartMs,
        coldStartCpuMs: agent.coldStartCpuMs,
        firstReplyMs: agent.firstReplyMs,
        rssAtHealthMb: agent.rssAtHealthMb,
        rssIdleMb: (await rssOf(agent.child.pid ?? 0)) / 2 ** 20,
      });
    }
    return samples;
  } finally {
    await Promise.all(running.map((agent) => stop(agent.child)));
  }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const round1 = (x: number) => Math.round(x * 10) / 10;

export async function agentsBench(): Promise<AgentsResults> {
  await buildIfStale({ web: false });
  const trees: Record<Side, string> = { baseline: await baselineTree(AGENT_BASELINE, { build: true }), bundle: root };
  const model = await startScriptedModel({ responder: () => ({ text: 'hi' }) });
  const samples: AgentsResults['samples'] = { baseline: { 'new workspace': [], restart: [] }, bundle: { 'new workspace': [], restart: [] } };
  const loadAverages: AgentsResults['loadAverages'] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of round % 2 === 0 ? (['baseline', 'bundle'] as const) : (['bundle', 'baseline'] as const)) {
        const workspaces = await Promise.all(Array.from({ length: COUNT }, () => mkdtemp(path.join(tmpdir(), 'bench-agent-'))));
        try {
          for (const which of ['new workspace', 'restart'] as const) {
            loadAverages.push({ round: round + 1, side, phase: which, loadAverage: loadAverage() });
            console.log(`  round ${round + 1}/${ROUNDS}, ${side}: ${COUNT} agents, ${which}, then ${IDLE_SECONDS} s idle (load ${loadAverage().join(' ')})`);
            samples[side][which].push(...(await phase(trees[side], workspaces, model.modelSpec)));
          }
        } finally {
          await Promise.all(workspaces.map((dir) => rm(dir, { recursive: true, force: true })));
        }
      }
    }
  } finally {
    await model.close();
  }
  const rows = (['baseline', 'bundle'] as const).flatMap((side) =>
    (['new workspace', 'restart'] as const).map((which) => {
      const s = samples[side][which];
      return {
        side,
        phase: which,
        coldStartMedianMs: Math.round(median(s.map((x) => x.coldStartMs))),
        coldStartMaxMs: Math.round(Math.max(...s.map((x) => x.coldStartMs))),
        coldStartCpuMedianMs: Math.round(median(s.map((x) => x.coldStartCpuMs))),
        firstReplyMedianMs: Math.round(median(s.map((x) => x.firstReplyMs))),
        rssAtHealthMeanMb: round1(mean(s.map((x) => x.rssAtHealthMb))),
        rssIdleMeanMb: round1(mean(s.map((x) => x.rssIdleMb))),
        rssIdleMaxMb: round1(Math.max(...s.map((x) => x.rssIdleMb))),
        idleCpuMeanMsPerSecond: Math.round(mean(s.map((x) => x.idleCpuMsPerSecond)) * 100) / 100,
      };
    }),
  );
  const row = (side: Side, which: Phase) => rows.find((r) => r.side === side && r.phase === which)!;
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  const ratios = Object.fromEntries(
    (['new workspace', 'restart'] as const).map((which) => {
      const [l, b] = [row('bundle', which), row('baseline', which)];
      return [
        which,
        {
          coldStart: ratio(l.coldStartMedianMs, b.coldStartMedianMs),
          coldStartCpu: ratio(l.coldStartCpuMedianMs, b.coldStartCpuMedianMs),
          rssIdleMean: ratio(l.rssIdleMeanMb, b.rssIdleMeanMb),
          rssIdleMax: ratio(l.rssIdleMaxMb, b.rssIdleMaxMb),
        },
      ];
    }),
  ) as AgentsResults['ratios'];
  return {
    date: new Date().toISOString(),
    count: COUNT,
    idleSeconds: IDLE_SECONDS,
    rounds: ROUNDS,
    baseline: shortCommit(AGENT_BASELINE),
    goals: GOALS,
    samples,
    loadAverages,
    rows,
    ratios,
  };
}

export function printAgentsTables(results: AgentsResults): void {
  console.log(
    `\nAgents (${results.count} compiled agent processes per side, started in turn, one chat message each, RSS after ${results.idleSeconds} s idle; baseline ${results.baseline}):`,
  );
  console.log(
    table(
      [
        'side',
        'workspace',
        'cold start median ms',
        'cold start max ms',
        'CPU to /health median ms',
        'first reply median ms',
        'RSS at /health mean MB',
        'idle RSS mean MB',
        'idle RSS max MB',
        'idle CPU mean ms/s',
      ],
      results.rows.map((r) => [
        r.side,
        r.phase,
        r.coldStartMedianMs,
        r.coldStartMaxMs,
        r.coldStartCpuMedianMs,
        r.firstReplyMedianMs,
        r.rssAtHealthMeanMb,
        r.rssIdleMeanMb,
        r.rssIdleMaxMb,
        r.idleCpuMeanMsPerSecond,
      ]),
    ),
  );
  for (const [which, r] of Object.entries(results.ratios))
    console.log(`${which}: bundle / baseline = cold start ${r.coldStart}× (CPU ${r.coldStartCpu}×), idle RSS mean ${r.rssIdleMean}×, max ${r.rssIdleMax}×`);
  console.log(
    `load averages (1, 5, 15 min) as each phase began: ${results.loadAverages.map((l) => `${l.side} ${l.phase}: ${l.loadAverage.join(' ')}`).join('; ')}`,
  );
  console.log(`goals: cold start ≤ ${results.goals.coldStartMs} ms median, idle RSS ≤ ${results.goals.rssIdleMb} MB`);
}

await runIfEntry(import.meta.url, 'agents.json', agentsBench, printAgentsTables);
