/**
 * `npm run bench:kube`: the Kubernetes provisioner on the test harness (a real control plane and
 * the test kubelet, test/support/kube/), inside a private network namespace
 * (scripts/kube/in-netns.sh). The account service runs in this process with
 * AGENT_PROVISIONER=kubernetes and the Role of deploy/kubernetes only.
 *
 *   - new agent ready: a new user's first `agentFor` (Secret, claim, Service and StatefulSet
 *     created, the Pod scheduled, started and ready), goal ≤ 3 s;
 *   - suspended agent woken: `agentFor` of a suspended agent (replicas 0 → 1 → ready), and the
 *     part of it from the process's spawn to its first `/health` answer, goal ≤ 1 s;
 *   - 100 agents created and suspended (4 at a time): errors, and what is left in the namespace
 *     (4 objects per agent and no Pod: nothing leaked);
 *   - API requests per minute per idle agent while nothing happens (the watch keeps the cache).
 * BENCH_KUBE_AGENTS (100; 20 with BENCH_QUICK=1) agents, BENCH_KUBE_SAMPLES (5) timed starts and
 * wakes, BENCH_KUBE_IDLE_SECONDS (60; 20 quick) of idleness. The harness runs every Pod on this
 * machine, so the start figures include a loaded machine's node start-up: compare them with the
 * local provisioner's cold start (`npm run bench:first-token`, pool off) taken on the same machine.
 */
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import type { KubernetesProvisioner } from '../server/account/agents/provisioners/kubernetes/provisioner.js';
import { startControlPlane } from '../test/support/kube/cluster.js';
import { REPO_ROOT, startKubelet } from '../test/support/kube/kubelet.js';
import { kubeAccountEnv } from '../test/support/kube/account-env.js';
import { inKubeNetns, KUBE_NETNS_SKIP_REASON } from '../test/support/kube/netns.js';
import { startScriptedModel } from '../test/support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../test/support/servers.js';
import { median, runIfEntry, table } from './lib/harness.js';

const run = promisify(execFile);
const QUICK = process.env.BENCH_QUICK === '1';
const AGENTS = Number(process.env.BENCH_KUBE_AGENTS ?? (QUICK ? 20 : 100));
const SAMPLES = Number(process.env.BENCH_KUBE_SAMPLES ?? 5);
const IDLE_SECONDS = Number(process.env.BENCH_KUBE_IDLE_SECONDS ?? (QUICK ? 20 : 60));
const NS = 'agents';
const SELECTOR = 'app.kubernetes.io/part-of=agent-accounts,app.kubernetes.io/name=agent';

export interface KubeResults {
  newAgentMs: { median: number; max: number; runs: number[] };
  wakeMs: { median: number; max: number; runs: number[] };
  spawnToHealthMs: { median: number; max: number; runs: number[] };
  bulk: { agents: number; errors: number; seconds: number; leftObjects: number; expectedObjects: number; pods: number };
  idle: { agents: number; seconds: number; apiRequests: number; perAgentPerMinute: number };
}

const summary = (runs: number[]) => ({ median: Math.round(median(runs)), max: Math.round(Math.max(...runs)), runs: runs.map(Math.round) });

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

export async function kubeBench(): Promise<KubeResults> {
  if (!inKubeNetns()) throw new Error(`bench:kube runs inside scripts/kube/in-netns.sh (npm run bench:kube): ${KUBE_NETNS_SKIP_REASON}`);
  const cp = await startControlPlane();
  const kubelet = await startKubelet({ cluster: cp });
  const model = await startScriptedModel();
  let account: TestAccount | undefined;
  try {
    const deploy = path.join(REPO_ROOT, 'deploy/kubernetes');
    await run('kubectl', ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', path.join(deploy, 'namespaces.yaml'), '-f', path.join(deploy, 'rbac.yaml')]);
    const kubeconfig = await cp.writeKubeconfig(await cp.tokenFor('agent-accounts', 'account'), 'account');
    account = await startTestAccount('pglite', await kubeAccountEnv({ kubeconfig, namespace: NS, modelSpec: model.modelSpec }));
    const provisioner = account.services.agents.provisioner as KubernetesProvisioner;
    const newUser = async () => (await account?.services.store.db.user.create({ data: { tier: 'guest' } }))?.id ?? '';
    const podGone = async (agentId: string) => {
      while (kubelet.pod(NS, `agent-${agentId}-0`)) await new Promise((r) => setTimeout(r, 20));
    };

    // New agents, one at a time, each suspended afterwards (so each start has the machine to itself).
    const newAgentRuns: number[] = [];
    const sampleUsers: string[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const userId = await newUser();
      const started = performance.now();
      const agent = await provisioner.agentFor(userId);
      newAgentRuns.push(performance.now() - started);
      sampleUsers.push(userId);
      await provisioner.stopAgentOf(userId);
      await podGone(agent.id);
    }

    // Wakes of those suspended agents, and the part from spawn to /health.
    const wakeRuns: number[] = [];
    const spawnRuns: number[] = [];
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
      wakeRuns.push(performance.now() - started);
      await watching;
      if (spawnedAt !== undefined && healthyAt !== undefined) spawnRuns.push(healthyAt - spawnedAt);
      await provisioner.stopAgentOf(userId);
      await podGone(agentId);
    }

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
    const agents = AGENTS + SAMPLES;

    // Idle: nothing happens; what does the provisioner ask the API server?
    const before = provisioner.apiRequests;
    await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
    const apiRequests = provisioner.apiRequests - before;

    return {
      newAgentMs: summary(newAgentRuns),
      wakeMs: summary(wakeRuns),
      spawnToHealthMs: summary(spawnRuns),
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
  console.log(
    table(
      ['measure', 'median', 'max', 'goal', 'runs'],
      [
        ['new agent ready (ms)', r.newAgentMs.median, r.newAgentMs.max, '≤ 3000', r.newAgentMs.runs.join(' ')],
        ['suspended agent woken (ms)', r.wakeMs.median, r.wakeMs.max, '—', r.wakeMs.runs.join(' ')],
        ['  of which spawn → /health (ms)', r.spawnToHealthMs.median, r.spawnToHealthMs.max, '≤ 1000', r.spawnToHealthMs.runs.join(' ')],
      ],
    ),
  );
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
