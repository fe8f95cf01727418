/**
 * docs/benchmarks.md, rendered from the latest results each benchmark wrote to bench/results/
 * (`npm run bench` and its parts): the figures, the ratios against the peer and the machine they
 * ran on. The page holds no history: each results file is the latest run of its benchmark, and
 * the past is in its git history. `npm run docs` writes the page (scripts/docs.ts);
 * test/docs/configuration.test.ts fails when it is stale. How each figure is measured and what
 * moved it is prose in docs/performance.md.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ConnectorsResults } from '../../bench/connectors.js';

const RESULTS = path.resolve(import.meta.dirname, '../../bench/results');

/** One autocannon figure, as bench/lib writes it. */
interface Load {
  requestsPerSecond: number;
  p50: number;
  p99: number;
}

interface RunResults {
  date: string;
  store: string;
  connections: number;
  secondsPerRun: number;
  rounds: number;
  cores: number;
  node: string;
  peer: {
    /** `rounds`: each round's own ratio (runs since the baseline was added to the peer rounds). */
    comparisons: Array<{ what: string; ours: Load; peer: Load; ratio: number; rounds?: number[] }>;
    ceilings: Record<'http' | 'express', Load & { name: string }>;
    mePercentOfExpress: number;
    /** This build against the account service before session bookkeeping, in the same rounds. */
    sinceBaseline?: { commit: string; rows: Array<{ what: string; ours: Load; baseline: Load; ratio: number; rounds: number[] }> };
    refreshRounds?: Array<{ round: number; ours: number; peer: number; ratio: number; loadAverage: number[]; checkpoint: boolean[] }>;
  };
  scaleOut?: { one: Load; two: Load; ratio: number; rateLimit: { limit: number; attempts: number; allowed: number } } | { skipped: string };
}

interface GrowthResults {
  date: string;
  store: string;
  account: { rows: Array<{ scale: string; users: number; signIn: Load; refresh: Load; me: Load }> };
  history: { rows: Array<{ scale: string; entries: number; dbMb: number; hotEntries: number; chat: Load; hot: Load }> };
}

interface FilesResults {
  date: string;
  node: string;
  runs: number;
  transfers: Array<{ case: string; mbps: number; rssGrowthMB: number; ceilingMbps: number }>;
  tree: { entries: number; medianMs: number; maxMs: number; agentCpuMedianMs: number };
}

interface ChatResults {
  date: string;
  machine: { cpus: number; node: string };
  params: { chats: number; events: number; intervalMs: number; rounds: number };
  streaming: Array<{ server: string; eventsPerSecond: number; medianMs: number; p99Ms: number; peakRssMb: number; cpuUsPerEvent: number }>;
  overhead: { medianMs: number; p99Ms: number };
  replay: Array<{ server: string; events: number; ms: number }>;
  targets: { overheadP99Ms: number; rssMb: number };
}

interface ProxyResults {
  date: string;
  store: string;
  params: { events: number; intervalMs: number; rounds: number; runs: number };
  streaming: Array<{
    chats: number;
    label: string;
    eventsPerSecond: number;
    medianMs: number;
    p99Ms: number;
    agentCpuUsPerEvent: number;
    accountCpuUsPerEvent: number;
  }>;
  replay: Array<{ label: string; events: number; msToDone: number; vsDirect: number; agentCpuUsPerEvent: number; accountCpuUsPerEvent: number }>;
  transfers: Array<{ case: string; directMbps: number; proxyMbps: number; ratio: number }>;
}

interface AccountResults {
  date: string;
  store: string;
  connections: number;
  secondsPerRun: number;
  cores: number;
  node: string;
  rows: Array<Load & { name: string }>;
  queriesPerRequest: Record<string, number>;
}

interface AgentsResults {
  date: string;
  count: number;
  idleSeconds: number;
  baseline: string;
  goals: { coldStartMs: number; rssIdleMb: number };
  loadAverages: Array<{ side: string; phase: string; loadAverage: number[] }>;
  rows: Array<{
    side: string;
    phase: string;
    coldStartMedianMs: number;
    coldStartCpuMedianMs: number;
    firstReplyMedianMs: number;
    rssIdleMeanMb: number;
    rssIdleMaxMb: number;
    /** Absent from results written before it was measured. */
    idleCpuMeanMsPerSecond?: number;
  }>;
  ratios: Record<string, { coldStart: number; coldStartCpu: number; rssIdleMean: number }>;
}

/** bench/startup.ts and bench/sandbox.ts write their table rows as printed. */
interface RowsResults {
  date: string;
  rounds: number;
  loadAverages: { start: number[]; end: number[] };
  rows: Array<Array<string | number>>;
}

interface KubeStarts {
  newAgentMs: { median: number; max: number };
  wakeMs: { median: number; max: number };
  spawnToHealthMs: { median: number; max: number };
}

interface KubeResults extends KubeStarts {
  date: string;
  baseline: KubeStarts & { commit: string };
  rounds: Array<{ round: number; side: string; loadAverage: number[] }>;
  goals: { wakeMedianMs: number };
}

interface TasksResults {
  date: string;
  runs: number;
  heartbeatIntervalSeconds: number;
  windowSeconds: number;
  metered: Record<'chat' | 'heartbeat' | 'task' | 'subagent', number>;
  taskTurns: { calls: number; tokens: number };
  otherCalls: number;
  loadAverage: { start: number[]; end: number[] };
}

type CheckSide = 'ours' | 'peer' | 'baseline';
type CheckPath = 'signin' | 'refresh' | 'me';

/** bench/results/check.json (`npm run bench:check`, bench/check.ts). */
interface CheckResults {
  date: string;
  commit: string;
  passed: boolean;
  missed: string[];
  store: string;
  secondsPerRun: number;
  rounds: number;
  loadAverage: { before: number; after: number };
  tookSeconds: number;
  peer: {
    goals: Record<CheckPath, { peer: number; baseline?: number }>;
    comparisons: Array<{ what: string; rounds: number[] }>;
    sinceBaseline: { commit: string; rows: Array<{ what: string; rounds: number[] }> };
    roundsByPath: Record<
      CheckPath,
      Array<{
        round: number;
        reqPerSec: Record<CheckSide, number>;
        loadAverage: Record<CheckSide, number>;
        cpuUs: Record<CheckSide, number>;
        agentsCpuMs: Record<CheckSide, number>;
      }>
    >;
  };
}

function read<T>(file: string): T {
  return JSON.parse(readFileSync(path.join(RESULTS, file), 'utf8')) as T;
}

/** The 1-minute load averages a bench saw, lowest to highest. */
const loads = (averages: number[][]) => {
  const ones = averages.map((a) => a[0] ?? 0);
  return `load average ${fmt(Math.min(...ones), 1)}–${fmt(Math.max(...ones), 1)}`;
};
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const day = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;

/** A Markdown table; `right` marks the columns that hold numbers. */
function table(head: string[], rows: Array<Array<string | number>>, right: number[] = []): string {
  const line = (cells: Array<string | number>) => `| ${cells.map(String).join(' | ')} |`;
  return [line(head), line(head.map((_, i) => (right.includes(i) ? '---:' : '---'))), ...rows.map(line)].join('\n');
}
const numbersFrom = (from: number, count: number) => Array.from({ length: count - from }, (_, i) => from + i);

export function renderBenchmarksPage(): string {
  const run = read<RunResults>('run.json');
  const growth = read<GrowthResults>('growth.json');
  const files = read<FilesResults>('files.json');
  const chat = read<ChatResults>('chat.json');
  const proxy = read<ProxyResults>('proxy.json');
  const account = read<AccountResults>('account.json');
  const agents = read<AgentsResults>('agents.json');
  const startup = read<RowsResults>('startup.json');
  const sandbox = read<RowsResults>('sandbox.json');
  const kube = read<KubeResults>('kube.json');
  const check = read<CheckResults>('check.json');
  const connectors = read<ConnectorsResults>('connectors.json');
  const out: string[] = [];
  const section = (...parts: string[]) => out.push(...parts.map((p) => `${p}\n`));

  section(
    '# Benchmarks',
    '<!-- Generated by `npm run docs` from bench/results/*.json (scripts/docs/benchmarks.ts): do not edit. -->',
    'The latest figures of each benchmark, as its last run wrote them to `bench/results/`. How they are measured, and what moved them, is in [Performance](performance.md); earlier figures are in the git history of the results files. The machine is a shared development machine whose speed drifts: compare rows of one table, not tables of different dates.',
    '## The machine',
    table(
      ['results', 'date', 'machine', 'store'],
      [
        ['`run.json` (`npm run bench`)', day(run.date), `${run.cores} cores, Node ${run.node.slice(1)}`, run.store],
        ['`growth.json`', day(growth.date), '', growth.store],
        ['`files.json`', day(files.date), `Node ${files.node.slice(1)}`, ''],
        ['`chat.json` (`npm run bench:chat`)', day(chat.date), `${chat.machine.cpus} cores, Node ${chat.machine.node.slice(1)}`, ''],
        ['`proxy.json` (`npm run bench:proxy`)', day(proxy.date), '', proxy.store],
        ['`account.json` (`npm run bench:account`)', day(account.date), `${account.cores} cores, Node ${account.node.slice(1)}`, account.store],
        ['`agents.json` (`npm run bench:agents`)', day(agents.date), loads(agents.loadAverages.map((l) => l.loadAverage)), ''],
        ['`startup.json` (`npm run bench:startup`)', day(startup.date), loads([startup.loadAverages.start, startup.loadAverages.end]), ''],
        ['`sandbox.json` (`npm run bench:sandbox`)', day(sandbox.date), loads([sandbox.loadAverages.start, sandbox.loadAverages.end]), ''],
        ['`kube.json` (`npm run bench:kube`)', day(kube.date), loads(kube.rounds.map((r) => r.loadAverage)), 'PGlite'],
        [
          '`check.json` (`npm run bench:check`)',
          day(check.date),
          `load average ${fmt(check.loadAverage.before, 1)} → ${fmt(check.loadAverage.after, 1)}`,
          check.store,
        ],
        [
          '`connectors.json` (`npm run bench:connectors`)',
          day(connectors.date),
          `${connectors.cores} cores, Node ${connectors.node.slice(1)}, ${loads(connectors.rounds.flatMap((r) => [[r.load_average[0]], [r.load_average[1]]]))}`,
          'PGlite',
        ],
      ],
    ),
  );

  const eachRound = (rounds: number[] | undefined) => (rounds ? rounds.map((r) => `${r.toFixed(2)}×`).join(' ') : '');
  const peerRows = run.peer.comparisons.map((c) => [
    c.what,
    c.ours.requestsPerSecond,
    c.ours.p99,
    c.peer.requestsPerSecond,
    c.peer.p99,
    `${c.ratio.toFixed(2)}×`,
    eachRound(c.rounds),
  ]);
  const ceilings = Object.values(run.peer.ceilings).map((c) => [`ceiling: ${c.name}`, c.requestsPerSecond, c.p99, '', '', '', '']);
  section(
    '## Against Better Auth',
    `Same PostgreSQL, same machine; medians of ${run.rounds} rotating ${run.secondsPerRun} s runs at ${run.connections} connections, and each round's own ratio. The ceilings are bare servers fed the \`/auth/me\` request stream in the same rounds.`,
    table(
      ['comparison', 'ours req/s', 'ours p99 ms', 'Better Auth req/s', 'Better Auth p99 ms', 'ratio', 'each round'],
      [...peerRows, ...ceilings],
      [1, 2, 3, 4, 5, 6],
    ),
    `Protected \`GET /auth/me\`: ${fmt(run.peer.mePercentOfExpress)} % of bare express.`,
  );
  if (run.peer.refreshRounds)
    section(
      "Refresh against session read round by round, beside what the machine was doing (1-minute load average during our run / the peer's; whether PostgreSQL checkpointed during it):",
      table(
        ['round', 'ours req/s', 'Better Auth req/s', 'ratio', 'load average', 'checkpoint'],
        run.peer.refreshRounds.map((r) => [
          r.round,
          r.ours,
          r.peer,
          `${r.ratio.toFixed(2)}×`,
          r.loadAverage.join(' / '),
          r.checkpoint.map((c) => (c ? 'yes' : 'no')).join(' / '),
        ]),
        [1, 2, 3],
      ),
    );
  if (run.peer.sinceBaseline) {
    const b = run.peer.sinceBaseline;
    section(
      '## Since session bookkeeping',
      `This build beside the account service as it was before sessions' last use and the activity log (commit \`${b.commit}\`), in the same rounds, on a database of its own. The goal: within 10 % on every path.`,
      table(
        ['path', 'this build req/s', 'baseline req/s', 'ratio', 'each round'],
        b.rows.map((r) => [r.what, r.ours.requestsPerSecond, r.baseline.requestsPerSecond, `${r.ratio.toFixed(2)}×`, eachRound(r.rounds)]),
        [1, 2, 3],
      ),
    );
  }

  const paths: CheckPath[] = ['signin', 'refresh', 'me'];
  const goalCell = (rounds: number[], goal: number | undefined) =>
    goal === undefined ? '' : `${eachRound(rounds)} (≥ ${goal}×: ${Math.min(...rounds) >= goal ? 'met' : 'missed'})`;
  section(
    '## The hot-path guard',
    `\`npm run bench:check\` at \`${check.commit}\`: ${check.rounds} rounds, ${check.secondsPerRun} s per side and path in each (three turns), ${check.tookSeconds} s in all, on ${check.store}. ${check.passed ? 'Every goal met in every round.' : `Missed: ${check.missed.join('; ')}.`}`,
    table(
      ['path', 'vs Better Auth, each round', 'vs the baseline, each round'],
      paths.map((what, i) => [
        check.peer.comparisons[i]!.what,
        goalCell(check.peer.comparisons[i]!.rounds, check.peer.goals[what].peer),
        goalCell(check.peer.sinceBaseline.rows[i]!.rounds, check.peer.goals[what].baseline) || eachRound(check.peer.sinceBaseline.rows[i]!.rounds),
      ]),
    ),
    `Round by round: requests per second, CPU µs per request (the server process and its PostgreSQL backends), the 1-minute load average during the side's turns and the CPU ms our local agents spent during them (their heaps shrinking after a start: [Performance](performance.md)); ours / Better Auth / baseline (\`${check.peer.sinceBaseline.commit}\`):`,
    table(
      ['path', 'round', 'req/s', 'CPU µs per request', 'load average (our turns)', "our agents' CPU ms in each side's turns"],
      paths.flatMap((what, i) =>
        check.peer.roundsByPath[what].map((r) => {
          const sides = (pick: Record<CheckSide, number>) => (['ours', 'peer', 'baseline'] as const).map((side) => fmt(pick[side])).join(' / ');
          return [check.peer.sinceBaseline.rows[i]!.what, r.round, sides(r.reqPerSec), sides(r.cpuUs), r.loadAverage.ours, sides(r.agentsCpuMs)];
        }),
      ),
      [1],
    ),
  );

  if (run.scaleOut && 'skipped' in run.scaleOut) section('## Scale-out', `Not measured in the latest run: ${run.scaleOut.skipped}.`);
  else if (run.scaleOut) {
    const s = run.scaleOut;
    section(
      '## Scale-out',
      'Guest sign-in on one instance against two sharing PostgreSQL and Redis, all on the same machine.',
      table(
        ['setup', 'req/s', 'p99 ms'],
        [
          ['one instance', s.one.requestsPerSecond, s.one.p99],
          ['two instances', s.two.requestsPerSecond, s.two.p99],
        ],
        [1, 2],
      ),
      `Two over one: ${s.ratio.toFixed(2)}×. Shared rate limit: ${s.rateLimit.allowed} of ${s.rateLimit.attempts} attempts allowed for a limit of ${s.rateLimit.limit}.`,
    );
  }

  section(
    '## Growth',
    table(
      ['account store holds', 'users', 'guest sign-in req/s', 'refresh req/s', '`/auth/me` req/s', '`/auth/me` p99 ms'],
      growth.account.rows.map((r) => [r.scale, fmt(r.users), r.signIn.requestsPerSecond, r.refresh.requestsPerSecond, r.me.requestsPerSecond, r.me.p99]),
      [1, 2, 3, 4, 5],
    ),
    table(
      ['agent history holds', 'entries', '`agent.db` MB', '100-entry chat: history req/s', 'p99 ms', 'hot chat entries', 'hot chat: history req/s', 'p99 ms'],
      growth.history.rows.map((r) => [
        r.scale,
        fmt(r.entries),
        r.dbMb,
        r.chat.requestsPerSecond,
        r.chat.p99,
        fmt(r.hotEntries),
        r.hot.requestsPerSecond,
        r.hot.p99,
      ]),
      numbersFrom(1, 8),
    ),
  );

  section(
    '## Agent: files',
    `Medians of ${files.runs}.`,
    table(
      ['case', 'MB/s', 'RSS growth MB', 'fs copy ceiling MB/s'],
      files.transfers.map((t) => [t.case, fmt(t.mbps), t.rssGrowthMB.toFixed(1), fmt(t.ceilingMbps)]),
      [1, 2, 3],
    ),
    `Workspace tree of ${fmt(files.tree.entries)} entries: ${fmt(files.tree.medianMs)} ms median (max ${fmt(files.tree.maxMs)}), agent CPU ${fmt(files.tree.agentCpuMedianMs)} ms.`,
  );

  const p = chat.params;
  section(
    '## Agent: chat streams',
    `${p.chats} concurrent chats × ${p.events} chunks ${p.intervalMs} ms apart, ${p.rounds} rounds, medians.`,
    table(
      ['server', 'events/s', 'chunk → client median ms', 'p99 ms', 'peak RSS MB', 'CPU µs/event'],
      chat.streaming.map((s) => [s.server, s.eventsPerSecond, s.medianMs, s.p99Ms, s.peakRssMb, s.cpuUsPerEvent]),
      [1, 2, 3, 4, 5],
    ),
    `Agent over the bare writer: p99 ${chat.overhead.p99Ms} ms, median ${chat.overhead.medianMs} ms per event (target ≤ ${chat.targets.overheadP99Ms} ms; peak RSS target ≤ ${chat.targets.rssMb} MB). Reconnect replay: ${chat.replay.map((r) => `${r.server} ${fmt(r.events)} events in ${r.ms} ms`).join('; ')}.`,
  );

  section(
    '## Through the account proxy',
    `${proxy.params.events} chunks per chat, ${proxy.params.intervalMs} ms apart, medians of ${proxy.params.rounds}.`,
    table(
      ['chats', 'path', 'events/s', 'median ms', 'p99 ms', 'CPU µs/event agent', 'CPU µs/event account'],
      proxy.streaming.map((s) => [s.chats, s.label, s.eventsPerSecond, s.medianMs, s.p99Ms, s.agentCpuUsPerEvent, s.accountCpuUsPerEvent]),
      [0, 2, 3, 4, 5, 6],
    ),
    table(
      ['reconnect replay', 'events', 'ms to `done`', '× direct', 'CPU µs/event agent / account'],
      proxy.replay.map((r) => [r.label, fmt(r.events), fmt(r.msToDone), `${r.vsDirect.toFixed(2)}×`, `${r.agentCpuUsPerEvent} / ${r.accountCpuUsPerEvent}`]),
      [1, 2, 3],
    ),
    table(
      [`transfer (medians of ${proxy.params.runs})`, 'agent directly MB/s', 'REST proxy MB/s', 'proxy / direct'],
      proxy.transfers.map((t) => [t.case, t.directMbps, t.proxyMbps, `${t.ratio.toFixed(2)}×`]),
      [1, 2, 3],
    ),
  );

  section(
    '## Account service alone',
    `\`npm run bench:account\`: ${account.connections} connections, ${account.secondsPerRun} s per run, ${account.store}.`,
    table(
      ['run', 'req/s', 'p50 ms', 'p99 ms'],
      account.rows.map((r) => [r.name, r.requestsPerSecond, r.p50, r.p99]),
      [1, 2, 3],
    ),
    table(['path', 'statements sent to the database'], Object.entries(account.queriesPerRequest), [1]),
  );

  const agentRows = agents.rows.map((r) => [
    r.side === 'baseline' ? `baseline (${agents.baseline})` : r.side,
    r.phase,
    r.coldStartMedianMs,
    r.coldStartCpuMedianMs,
    r.firstReplyMedianMs,
    r.rssIdleMeanMb,
    r.rssIdleMaxMb,
    r.idleCpuMeanMsPerSecond ?? '',
  ]);
  const ratioText = Object.entries(agents.ratios)
    .map(([phase, r]) => `${phase}: cold start ${r.coldStart.toFixed(2)}× (CPU ${r.coldStartCpu.toFixed(2)}×), idle RSS ${r.rssIdleMean.toFixed(2)}×`)
    .join('; ');
  section(
    '## Agent processes',
    `\`npm run bench:agents\`: ${agents.count} agents per side started in turn, the bundle beside the build before it (${agents.baseline}), RSS after ${agents.idleSeconds} s idle; ${loads(agents.loadAverages.map((l) => l.loadAverage))}. Goals: cold start ≤ ${agents.goals.coldStartMs} ms median, idle RSS ≤ ${agents.goals.rssIdleMb} MB.`,
    table(
      [
        'build',
        'start',
        'cold start median ms',
        'CPU to /health median ms',
        'first reply median ms',
        'idle RSS mean MB',
        'idle RSS max MB',
        'idle CPU mean ms/s',
      ],
      agentRows,
      [2, 3, 4, 5, 6, 7],
    ),
    `Bundle / baseline: ${ratioText}.`,
    `Startup (medians of ${startup.rounds}; ${loads([startup.loadAverages.start, startup.loadAverages.end])}):`,
    table(['agent runs as', 'cold start ms', 'CPU to /health ms', 'RSS MB', 'first reply ms', 'cold start / baseline'], startup.rows, [1, 2, 3, 4]),
    `Sandbox (medians of ${sandbox.rounds}; ${loads([sandbox.loadAverages.start, sandbox.loadAverages.end])}):`,
    table(['agent', 'cold start ms', 'µs per event'], sandbox.rows, [1, 2]),
  );

  const b = kube.baseline;
  const kubeRow = (what: string, ours: { median: number; max: number }, theirs: { median: number }, goal: string) => [
    what,
    ours.median,
    ours.max,
    theirs.median,
    `${(ours.median / theirs.median).toFixed(2)}×`,
    goal,
  ];
  section(
    '## Agents on Kubernetes',
    `\`npm run bench:kube\`: the test control plane and kubelet on this machine, the bundle beside the build before it (${b.commit}) as the Pod's command, ${kube.rounds.length / 2} alternating rounds; ${loads(kube.rounds.map((r) => r.loadAverage))}.`,
    table(
      ['measure', 'median ms', 'max ms', 'baseline median ms', 'ratio', 'goal'],
      [
        kubeRow('new agent ready', kube.newAgentMs, b.newAgentMs, '≤ 3000'),
        kubeRow('suspended agent woken', kube.wakeMs, b.wakeMs, `≤ ${kube.goals.wakeMedianMs}`),
        kubeRow('of which spawn → /health', kube.spawnToHealthMs, b.spawnToHealthMs, ''),
      ],
      [1, 2, 3, 4],
    ),
  );
  section(
    '## Connector calls through the gateway',
    `\`npm run bench:connectors\`: \`echo\` on the reference MCP server (\`@modelcontextprotocol/server-everything\`) on loopback, one call at a time, ${connectors.calls} calls per side in each of ${connectors.rounds.length} rounds, the order reversed each round. *direct*: the connector client on a kept connection; *service*: the account service's call as the gateway makes it, without the agent's hop; *gateway*: the agent's \`POST /connectors/call\` over its gateway socket (both ends of that hop in the bench's process). Added by the gateway, the median over rounds of gateway − direct: p50 ${connectors.added_p50_ms} ms (the service's share ${connectors.service_p50_ms} ms), p99 ${connectors.added_p99_ms} ms. Goal: added p50 ≤ ${connectors.goal_ms} ms: ${connectors.met ? 'met' : 'missed'}.`,
    table(
      ['round', 'direct p50 / p99 ms', 'service p50 / p99 ms', 'gateway p50 / p99 ms', 'added p50 ms', 'load average'],
      connectors.rounds.map((r, i) => [
        i + 1,
        `${r.p50_ms.direct} / ${r.p99_ms.direct}`,
        `${r.p50_ms.service} / ${r.p99_ms.service}`,
        `${r.p50_ms.gateway} / ${r.p99_ms.gateway}`,
        r.added_p50_ms,
        `${fmt(r.load_average[0], 1)} → ${fmt(r.load_average[1], 1)}`,
      ]),
      [0, 4],
    ),
  );
  out.push(`${tasksSection()}\n`);
  return out.join('\n');
}

/** What a recurring task costs, by source, against what its own turns reported (bench/tasks.ts). */
export function tasksSection(): string {
  const tasks = read<TasksResults>('tasks.json');
  const expected = { chat: 0, heartbeat: 0, task: tasks.taskTurns.tokens, subagent: 0 };
  const sources = ['chat', 'heartbeat', 'task', 'subagent'] as const;
  return [
    '## Scheduled tasks: tokens by source',
    `\`npm run bench:tasks\` (${day(tasks.date)}): a sandboxed local agent runs \`* * * * *\` ${tasks.runs} times in ${tasks.windowSeconds} s while heartbeats tick every ${tasks.heartbeatIntervalSeconds} s without \`HEARTBEAT.md\`; the egress gateway's meter by source over that window, beside the tokens the model reported for the task turns' ${tasks.taskTurns.calls} calls (${tasks.otherCalls} other model calls; ${loads([tasks.loadAverage.start, tasks.loadAverage.end])}).`,
    table(
      ['source', 'metered tokens', 'the turns’ own tokens', 'difference'],
      sources.map((source) => [source, tasks.metered[source], expected[source], tasks.metered[source] - expected[source]]),
      [1, 2, 3],
    ),
  ].join('\n\n');
}

/** Where README.md's headline table sits, between these two lines. */
export const README_HEADLINE = { start: '<!-- headline: generated by npm run docs from bench/results/run.json -->', end: '<!-- end of headline -->' };

/** README.md with its headline table (the peer ratios) rendered from bench/results/run.json. */
export function renderReadme(readme: string): string {
  const run = read<RunResults>('run.json');
  const [before, rest] = readme.split(README_HEADLINE.start);
  const after = rest?.split(README_HEADLINE.end)[1];
  if (before === undefined || after === undefined) throw new Error('README.md has no headline markers');
  const headline = table(
    ['path', 'ours req/s', 'Better Auth req/s', 'ratio', 'lowest round'],
    run.peer.comparisons.map((c) => [
      c.what,
      c.ours.requestsPerSecond,
      c.peer.requestsPerSecond,
      `${c.ratio.toFixed(2)}×`,
      c.rounds ? `${Math.min(...c.rounds).toFixed(2)}×` : '',
    ]),
    [1, 2, 3, 4],
  );
  return `${before}${README_HEADLINE.start}\n${headline}\n${README_HEADLINE.end}${after}`;
}
