/**
 * `npm run bench:kube`: the Kubernetes provisioner on the test harness (a real control plane and
 * the test kubelet, test/support/kube/), inside a private network namespace
 * (scripts/kube/in-netns.sh). The account service runs in this process with
 * AGENT_PROVISIONER=kubernetes and the Role of deploy/kubernetes only.
 *
 *   - new agent ready: a new user's first `agentFor` (Secret, claim, Service and StatefulSet
 *     created, the Pod scheduled, started and ready), goal ≤ 3 s;
 *   - suspended agent woken: `agentFor` of a suspended agent (replicas 0 → 1 → ready), goal ≤ 1 s
 *     median, and the part of it from the process's spawn to its first `/health` answer;
 *   - both beside the baseline's agent (AGENT_BASELINE, before the agent bundle, built in
 *     .bench/ of this checkout, which the kubelet's pods see) as the container's command, in
 *     alternating rounds (BENCH_KUBE_ROUNDS, 2), with the load average as each began;
 *   - 100 agents created and suspended (4 at a time): errors, and what is left in the namespace
 *     (4 objects per agent and no Pod: nothing leaked);
 *   - API requests per minute per idle agent while nothing happens (the watch keeps the cache).
 * BENCH_KUBE_AGENTS (100; 20 with BENCH_QUICK=1) agents, BENCH_KUBE_SAMPLES (5) timed starts and
 * wakes per side and round, BENCH_KUBE_IDLE_SECONDS (60; 20 quick) of idleness. The harness runs every Pod on this
 * machine, so the start figures include a loaded machine's node start-up: compare them with the
 * local provisioner's cold start (`npm run bench:first-token`, pool off) taken on the same machine.
 */
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import type { KubernetesProvisioner } from '../server/account/agents/provisioners/kubernetes/provisioner.js';
import { startControlPlane } from '../test/support/kube/cluster.js';
import { REPO_ROOT, startKubelet, type TestKubelet } from '../test/support/kube/kubelet.js';
import { kubeAccountEnv } from '../test/support/kube/account-env.js';
import { inKubeNetns, KUBE_NETNS_SKIP_REASON } from '../test/support/kube/netns.js';
import { startScriptedModel } from '../test/support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../test/support/servers.js';
import { AGENT_BASELINE, baselineTree, shortCommit } from './lib/baseline.js';
import { agentScript, loadAverage, median, runIfEntry, table } from './lib/harness.js';

const run = promisify(execFile);
const QUICK = process.env.BENCH_QUICK === '1';
const AGENTS = Number(process.env.BENCH_KUBE_AGENTS ?? (QUICK ? 20 : 100));
const SAMPLES = Number(process.env.BENCH_KUBE_SAMPLES ?? 5);
const IDLE_SECONDS = Number(process.env.BENCH_KUBE_IDLE_SECONDS ?? (QUICK ? 20 : 60));
const ROUNDS = Math.min(5, Number(process.env.BENCH_KUBE_ROUNDS ?? 2));
const WAKE_GOAL_MS = 1000;
const NS = 'agents';
const SELECTOR = 'app.kubernetes.io/part-of=agent-accounts,app.kubernetes.io/name=agent';

interface Summary {
  median: number;
  max: number;
  runs: number[];
}

/** Starts and wakes of one side's agents. */
interface Starts {
  newAgentMs: Summary;
  wakeMs: Summary;
  spawnToHealthMs: Summary;
}

export interface KubeResults extends Starts {
  date: string;
  baseline: Starts & { commit: string; command: string[] };
  /** Each side's round, in the order they ran, with the 1, 5 and 15 minute load averages as it began. */
  rounds: Array<{ round: number; side: 'bundle' | 'baseline'; loadAverage: number[] }>;
  goals: { wakeMedianMs: number };
  bulk: { agents: number; errors: number; seconds: number; leftObjects: number; expectedObjects: number; pods: number };
  idle: { agents: number; seconds: number; apiRequests: number; perAgentPerMinute: number };
}

const summary = (runs: number[]): Summary => ({ median: Math.round(median(runs)), max: Math.round(Math.max(...runs)), runs: runs.map(Math.round) });

function healthy(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(`${url}/health`, { agent: false, timeout: 500 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/**
 * SAMPLES new agents, one at a time, each suspended afterwards (so each start has the machine to
 * itself); then each of them woken, timing the part from its process's spawn to `/health` too.
 */
async function startsAndWakes(account: TestAccount, kubelet: TestKubelet, runs: { newAgent: number[]; wake: number[]; spawn: number[] }): Promise<void> {
  const provisioner = account.services.agents.provisioner as KubernetesProvisioner;
  const podGone = async (agentId: string) => {
    while (kubelet.pod(NS, `agent-${agentId}-0`)) await new Promise((r) => setTimeout(r, 20));
  };
  const sampleUsers: string[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const userId = (await account.services.store.db.user.create({ data: { tier: 'guest' } })).id;
    const started = performance.now();
    const agent = await provisioner.agentFor(userId);
    runs.newAgent.push(performance.now() - started);
    sampleUsers.push(userId);
    await provisioner.stopAgentOf(userId);
    await podGone(agent.id);
  }
  for (const userId of sampleUsers) {
    const agentId = (await account.services.agents.registry.forUser(userId))?.id ?? '';
    const started = performance.now();
    let spawnedAt: number | undefined;
    let healthyAt: number | undefined;
    const watching = (async () => {
      while (healthyAt === undefined && performance.now() - started < 60_000) {
        const info = kubelet.pod(NS, `agent-${agentId}-0`);
        if (spawnedAt === undefined && info?.containers[0]?.pid) spawnedAt = performance.now();
        if (spawnedAt !== undefined && info?.ip && (await healthy(`http://${info.ip}:8080`))) healthyAt = performance.now();
        else await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await provisioner.agentFor(userId);
    runs.wake.push(performance.now() - started);
    await watching;
    if (spawnedAt !== undefined && healthyAt !== undefined) runs.spawn.push(healthyAt - spawnedAt);
    await provisioner.stopAgentOf(userId);
    await podGone(agentId);
  }
}

export async function kubeBench(): Promise<KubeResults> {
  if (!inKubeNetns()) throw new Error(`bench:kube runs inside scripts/kube/in-netns.sh (npm run bench:kube): ${KUBE_NETNS_SKIP_REASON}`);
  // The pods see this checkout (at its own path, and at /app), not the host's /tmp.
  // The Pod's exec-runner container runs the same command with AGENT_EXEC_RUNNER_LISTEN, a role the
  // baseline's agent does not have (it would start as an agent without its secret and never get
  // ready): that container runs this build's, and only the agent's is the baseline's.
  const baselineAgent = agentScript(await baselineTree(AGENT_BASELINE, { build: true, inside: '.bench' }));
  const baselineCommand = ['sh', '-c', `if [ -n "$AGENT_EXEC_RUNNER_LISTEN" ]; then exec node ${agentScript(REPO_ROOT)}; else exec node ${baselineAgent}; fi`];
  const cp = await startControlPlane();
  const kubelet = await startKubelet({ cluster: cp });
  const model = await startScriptedModel();
  let account: TestAccount | undefined;
  try {
    const deploy = path.join(REPO_ROOT, 'deploy/kubernetes');
    await run('kubectl', ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', path.join(deploy, 'namespaces.yaml'), '-f', path.join(deploy, 'rbac.yaml')]);
    const kubeconfig = await cp.writeKubeconfig(await cp.tokenFor('agent-accounts', 'account'), 'account');
    const env = await kubeAccountEnv({ kubeconfig, namespace: NS, modelSpec: model.modelSpec });
    const sides = { bundle: env, baseline: { ...env, KUBE_AGENT_COMMAND: JSON.stringify(baselineCommand) } };
    const runs = {
      bundle: { newAgent: [] as number[], wake: [] as number[], spawn: [] as number[] },
      baseline: { newAgent: [] as number[], wake: [] as number[], spawn: [] as number[] },
    };
    const rounds: KubeResults['rounds'] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const side of round % 2 === 1 ? (['baseline', 'bundle'] as const) : (['bundle', 'baseline'] as const)) {
        rounds.push({ round, side, loadAverage: loadAverage() });
        account = await startTestAccount('pglite', sides[side]);
        await startsAndWakes(account, kubelet, runs[side]);
        await account.stop();
        account = undefined;
      }
    }

    account = await startTestAccount('pglite', sides.bundle);
    const provisioner = account.services.agents.provisioner as KubernetesProvisioner;
    const newUser = async () => (await account?.services.store.db.user.create({ data: { tier: 'guest' } }))?.id ?? '';
    const podGone = async (agentId: string) => {
      while (kubelet.pod(NS, `agent-${agentId}-0`)) await new Promise((r) => setTimeout(r, 20));
    };

    // Many agents: created and suspended, four at a time.
    const bulkStarted = performance.now();
    let errors = 0;
    const bulkUsers = await Promise.all(Array.from({ length: AGENTS }, () => newUser()));
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < bulkUsers.length) {
          const userId = bulkUsers[next++] as string;
          try {
            const agent = await provisioner.agentFor(userId);
            await provisioner.stopAgentOf(userId);
            await podGone(agent.id);
          } catch (error) {
            errors++;
            console.error(`agent of ${userId}: ${(error as Error).message}`);
          }
        }
      }),
    );
    const bulkSeconds = (performance.now() - bulkStarted) / 1000;
    const count = async (resource: string, group = '') => {
      const base = group ? `/apis/${group}/v1/namespaces/${NS}/${resource}` : `/api/v1/namespaces/${NS}/${resource}`;
      return ((await cp.api.get(`${base}?labelSelector=${encodeURIComponent(SELECTOR)}`)) as { items: unknown[] }).items.length;
    };
    // A suspended Pod takes its grace period to go: what is still there after it (and a margin) leaked.
    const settled = performance.now();
    while ((await count('pods')) > 0 && performance.now() - settled < 30_000) await new Promise((r) => setTimeout(r, 250));
    const pods = await count('pods');
    const leftObjects = (await count('secrets')) + (await count('persistentvolumeclaims')) + (await count('services')) + (await count('statefulsets', 'apps'));
    // Every side's sample agents stay too, suspended, beside the bulk ones.
    const agents = AGENTS + SAMPLES * rounds.length;

    // Idle: nothing happens; what does the provisioner ask the API server?
    const before = provisioner.apiRequests;
    await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
    const apiRequests = provisioner.apiRequests - before;

    return {
      date: new Date().toISOString(),
      newAgentMs: summary(runs.bundle.newAgent),
      wakeMs: summary(runs.bundle.wake),
      spawnToHealthMs: summary(runs.bundle.spawn),
      baseline: {
        commit: shortCommit(AGENT_BASELINE),
        command: baselineCommand,
        newAgentMs: summary(runs.baseline.newAgent),
        wakeMs: summary(runs.baseline.wake),
        spawnToHealthMs: summary(runs.baseline.spawn),
      },
      rounds,
      goals: { wakeMedianMs: WAKE_GOAL_MS },
      bulk: { agents: AGENTS, errors, seconds: Math.round(bulkSeconds), leftObjects, expectedObjects: 4 * agents, pods },
      idle: { agents, seconds: IDLE_SECONDS, apiRequests, perAgentPerMinute: apiRequests / agents / (IDLE_SECONDS / 60) },
    };
  } finally {
    await account?.stop();
    await model.close();
    await kubelet.stop();
    await cp.stop();
  }
}

export function printKubeTables(r: KubeResults): void {
  const b = r.baseline;
  const ratio = (ours: Summary, theirs: Summary) => `${(ours.median / theirs.median).toFixed(2)}×`;
  console.log(
    table(
      ['measure', 'median', 'max', `baseline ${b.commit} median`, 'ratio', 'goal', 'runs'],
      [
        [
          'new agent ready (ms)',
          r.newAgentMs.median,
          r.newAgentMs.max,
          b.newAgentMs.median,
          ratio(r.newAgentMs, b.newAgentMs),
          '≤ 3000',
          r.newAgentMs.runs.join(' '),
        ],
        [
          'suspended agent woken (ms)',
          r.wakeMs.median,
          r.wakeMs.max,
          b.wakeMs.median,
          ratio(r.wakeMs, b.wakeMs),
          `≤ ${r.goals.wakeMedianMs}`,
          r.wakeMs.runs.join(' '),
        ],
        [
          '  of which spawn → /health (ms)',
          r.spawnToHealthMs.median,
          r.spawnToHealthMs.max,
          b.spawnToHealthMs.median,
          ratio(r.spawnToHealthMs, b.spawnToHealthMs),
          '—',
          r.spawnToHealthMs.runs.join(' '),
        ],
      ],
    ),
  );
  console.log(`rounds and load averages (1, 5, 15 min) as each began: ${r.rounds.map((x) => `${x.round} ${x.side}: ${x.loadAverage.join(' ')}`).join('; ')}`);
  console.log(
    table(
      ['agents created and suspended', 'errors', 'seconds', 'objects left (expected)', 'pods left'],
      [[r.bulk.agents, r.bulk.errors, r.bulk.seconds, `${r.bulk.leftObjects} (${r.bulk.expectedObjects})`, r.bulk.pods]],
    ),
  );
  console.log(
    table(
      ['idle agents', 'seconds watched', 'API requests', 'per idle agent per minute'],
      [[r.idle.agents, r.idle.seconds, r.idle.apiRequests, r.idle.perAgentPerMinute]],
    ),
  );
}

await runIfEntry(import.meta.url, 'kube.json', kubeBench, printKubeTables);
