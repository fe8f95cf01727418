/**
 * AGENT_PROVISIONER=kubernetes against a real control plane (etcd, kube-apiserver and
 * kube-controller-manager v1.20.2) and the test kubelet (test/support/kube/), over real HTTP:
 * the account service signs a guest in, its provisioner creates the agent's objects with only
 * the Role of deploy/kubernetes/rbac.yaml (a service-account token, not admin), the kubelet runs
 * the agent's Pod from this repository's build, and the account proxies chat and files to the
 * Pod's IP. The kubelet does not enforce securityContext, runtimeClassName, limits or
 * NetworkPolicy: the Pod spec is asserted as the API server stored it.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import pg from 'pg';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubernetesProvisioner } from '../../server/account/agents/provisioners/kubernetes/provisioner.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';
import { LAST_USED_ANNOTATION } from '../../server/account/agents/provisioners/kubernetes/objects.js';
import { corePath } from '../support/kube/api.js';
import type { ControlPlane } from '../support/kube/cluster.js';
import { sharedControlPlane } from '../support/kube/shared.js';
import { eventually, REPO_ROOT, startKubelet, type TestKubelet } from '../support/kube/kubelet.js';
import { kubeAccountEnv } from '../support/kube/account-env.js';
import { inKubeNetns, KUBE_NETNS_SKIP_REASON } from '../support/kube/netns.js';
import { taskMessage } from '../../server/agent/tasks/runner.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { events, openSse, readFrames } from '../support/sse.js';

const run = promisify(execFile);
const inside = inKubeNetns();
const suite = inside ? describe : describe.skip;
const NS = 'agents';
const SELECTOR = 'app.kubernetes.io/part-of=agent-accounts,app.kubernetes.io/name=agent';

/** The host's PostgreSQL through its Unix socket (a file: reachable from the private network namespace), when it runs. */
const PG_SOCKET_URL = 'postgres://postgres@localhost/test?host=%2Fvar%2Frun%2Fpostgresql';

suite(inside ? 'AGENT_PROVISIONER=kubernetes' : `AGENT_PROVISIONER=kubernetes — skipped: ${KUBE_NETNS_SKIP_REASON}`, () => {
  let cp: ControlPlane;
  let kubelet: TestKubelet;
  let model: ScriptedModel;
  /** The account's ServiceAccount, bound to the Role of deploy/kubernetes/rbac.yaml: all the provisioner may use. */
  let kubeconfig: string;
  let signingKeys: string;
  const secretsKey = randomBytes(32).toString('base64');

  beforeAll(async () => {
    cp = sharedControlPlane();
    // The agents' namespace is this file's alone on the run's shared control plane.
    kubelet = await startKubelet({ cluster: cp, namespaces: [NS] });
    const deploy = path.join(REPO_ROOT, 'deploy/kubernetes');
    await run('kubectl', [
      '--kubeconfig',
      cp.kubeconfigPath,
      'apply',
      '-f',
      path.join(deploy, 'namespaces.yaml'),
      '-f',
      path.join(deploy, 'rbac.yaml'),
      '-f',
      path.join(deploy, 'runtimeclass-gvisor.yaml'),
    ]);
    signingKeys = path.join(cp.dir, 'signing-keys.json');
    kubeconfig = await cp.writeKubeconfig(await cp.tokenFor('agent-accounts', 'account'), 'account');
    model = await startScriptedModel({
      responder: (request) => ({ text: `echo: ${lastUserText(request)}` }),
    });
  }, 120_000);

  afterAll(async () => {
    await model?.close();
    await kubelet?.stop();
    await cp?.stop();
  });

  async function startKubeAccount(env: Record<string, string> = {}, options: { log?: Logger } = {}): Promise<TestAccount> {
    return startTestAccount(
      'pglite',
      {
        // One issuer and one key set: a token from one instance is good at the others, as behind one load balancer.
        BASE_URL: 'http://account.test',
        SIGNING_KEYS_FILE: signingKeys,
        AGENT_SECRETS_KEY: secretsKey,
        ...(await kubeAccountEnv({ kubeconfig, namespace: NS, modelSpec: model.modelSpec })),
        KUBE_RUNTIME_CLASS: 'gvisor',
        KUBE_WORKSPACE_SIZE: '256Mi',
        KUBE_START_TIMEOUT: '60',
        ...env,
      },
      options,
    );
  }

  const provisionerOf = (account: TestAccount) => account.services.agents.provisioner as KubernetesProvisioner;

  async function guest(account: TestAccount, label: string): Promise<TokenPair & { userId: string }> {
    const res = await fetch(`${account.url}/api/v1/auth/guest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: testDeviceId(`${label}-${randomBytes(4).toString('hex')}`) }),
    });
    expect(res.status).toBe(200);
    const pair = (await res.json()) as TokenPair;
    const me = (await (await fetch(`${account.url}/api/v1/auth/me`, { headers: bearer(pair) })).json()) as { user_id: string };
    return { ...pair, userId: me.user_id };
  }

  const bearer = (pair: TokenPair) => ({ authorization: `Bearer ${pair.access_token}` });

  async function chat(account: TestAccount, pair: TokenPair, chatId: string, message: string): Promise<string> {
    const res = await openSse(`${account.url}/api/v1/agent/chat`, {
      method: 'POST',
      headers: { ...bearer(pair), 'content-type': 'application/json' },
      body: JSON.stringify({ message, chat_id: chatId }),
    });
    expect(res.status).toBe(200);
    const frames = events(await readFrames(res));
    return frames
      .filter((e) => e.type === 'text')
      .map((e) => String(e.content))
      .join('');
  }

  async function agentObjects(): Promise<string[]> {
    const names: string[] = [];
    for (const [group, resource] of [
      ['', 'secrets'],
      ['', 'persistentvolumeclaims'],
      ['', 'services'],
      ['apps', 'statefulsets'],
      ['', 'pods'],
    ] as const) {
      const base = group ? `/apis/${group}/v1/namespaces/${NS}/${resource}` : corePath(NS, resource);
      const list = (await cp.api.get(`${base}?labelSelector=${encodeURIComponent(SELECTOR)}`)) as { items: Array<{ metadata: { name: string } }> };
      for (const item of list.items) names.push(`${resource}/${item.metadata.name}`);
    }
    return names.sort();
  }

  const statefulSet = (agentId: string) => cp.api.getOrUndefined(`/apis/apps/v1/namespaces/${NS}/statefulsets/agent-${agentId}`);
  const pod = (agentId: string) => cp.api.getOrUndefined(corePath(NS, 'pods', `agent-${agentId}-0`));

  it('every manifest of deploy/kubernetes passes a server-side dry run against the API server', async () => {
    const { stdout } = await run('kubectl', ['--kubeconfig', cp.kubeconfigPath, 'apply', '--dry-run=server', '-k', path.join(REPO_ROOT, 'deploy/kubernetes')]);
    const applied = stdout.trim().split('\n');
    expect(applied.length).toBeGreaterThanOrEqual(12);
    for (const line of applied) expect(line).toMatch(/\((server dry run)\)$/);
    expect(stdout).toMatch(/deployment\.apps\/account/);
    expect(stdout).toMatch(/networkpolicy\.networking\.k8s\.io\//);
    expect(stdout).toMatch(/role\.rbac\.authorization\.k8s\.io\/agent-provisioner/);
  });

  it('a guest chats and uploads a file; the agent is suspended (Pod gone, claim kept), woken by the next request, and finds history and file intact', async () => {
    const account = await startKubeAccount({ AGENT_IDLE_TIMEOUT: '2' });
    try {
      const user = await guest(account, 'kube-chat');
      expect(await chat(account, user, 'c1', 'hello pod')).toBe('echo: hello pod');
      const agent = await account.services.agents.registry.forUser(user.userId);
      if (!agent) throw new Error('no agent registered');
      expect(agent.kind).toBe('kubernetes');

      const form = new FormData();
      form.append('file', new Blob(['kept across sleep']), 'note.txt');
      const upload = await fetch(`${account.url}/api/v1/agent/files/upload`, { method: 'POST', headers: bearer(user), body: form });
      expect(upload.status).toBe(200);
      const uploaded = (await upload.json()) as { path: string };

      // Idle for 2 s and says so: replicas 0, the Pod deleted, the claim and the other objects kept.
      await eventually('suspended', async () => (await statefulSet(agent.id))?.spec?.replicas === 0 && !(await pod(agent.id)), 30_000);
      expect(await agentObjects()).toEqual(
        [
          `persistentvolumeclaims/agent-${agent.id}-workspace`,
          `secrets/agent-${agent.id}`,
          `services/agent-${agent.id}`,
          `statefulsets/agent-${agent.id}`,
        ].sort(),
      );

      const history = await fetch(`${account.url}/api/v1/agent/chat/c1/history`, { headers: bearer(user) });
      expect(history.status).toBe(200);
      const messages = ((await history.json()) as { messages: Array<{ type: string; content?: string }> }).messages;
      expect(messages.map((m) => m.content)).toEqual(['hello pod', 'echo: hello pod']);
      const file = await fetch(`${account.url}/api/v1/agent/files/${uploaded.path}`, { headers: bearer(user) });
      expect(file.status).toBe(200);
      expect(await file.text()).toBe('kept across sleep');
      expect(await chat(account, user, 'c1', 'again')).toBe('echo: again');
    } finally {
      await account.stop();
    }
  });

  it("a suspended agent's heartbeat wakes it: the wake scheduler recreates its Pod and the heartbeat turn runs", async () => {
    // The agent's heartbeat every 3 s (its command's environment: the account passes no HEARTBEAT_INTERVAL to Pods).
    const account = await startKubeAccount({
      AGENT_IDLE_TIMEOUT: '2',
      AGENT_WAKE_POLL: '0.5',
      KUBE_AGENT_COMMAND: JSON.stringify(['env', 'HEARTBEAT_INTERVAL=3', 'node', '/app/dist/agent/boot.cjs']),
    });
    try {
      const user = await guest(account, 'kube-heartbeat');
      expect(await chat(account, user, 'c', 'hello')).toBe('echo: hello');
      const agent = await account.services.agents.registry.forUser(user.userId);
      if (!agent) throw new Error('no agent registered');
      const marker = `kube-heartbeat-${randomBytes(4).toString('hex')}`;
      const form = new FormData();
      form.append('file', new Blob([`- ${marker}`]), 'HEARTBEAT.md');
      const upload = await fetch(`${account.url}/api/v1/agent/files/upload`, { method: 'POST', headers: bearer(user), body: form });
      expect(upload.status).toBe(200);
      const { path: uploaded } = (await upload.json()) as { path: string };
      if (uploaded !== 'HEARTBEAT.md') {
        const moved = await fetch(`${account.url}/api/v1/agent/files/move`, {
          method: 'POST',
          headers: { ...bearer(user), 'content-type': 'application/json' },
          body: JSON.stringify({ from: uploaded, to: 'HEARTBEAT.md' }),
        });
        expect(moved.status).toBe(200);
      }
      const firstPod = (await pod(agent.id))?.metadata?.uid as string;

      // Idle: suspended, its next heartbeat kept as the agent's wake time; nothing of it runs to call the model.
      await eventually('suspended', async () => (await statefulSet(agent.id))?.spec?.replicas === 0 && !(await pod(agent.id)), 30_000);
      const asleep = model.requests.length;
      const heartbeatsSince = () => model.requests.slice(asleep).filter((request) => JSON.stringify(request).includes(marker)).length;

      // Nobody asks for it: the scheduler wakes it, a new Pod runs, and the heartbeat reaches the model.
      const woken = await eventually(
        'woken by its heartbeat',
        async () => {
          const now = await pod(agent.id);
          return now && now.metadata.uid !== firstPod && heartbeatsSince() > 0 ? now : undefined;
        },
        60_000,
      );
      expect(woken.spec.nodeName).toBeTruthy();
      expect(heartbeatsSince()).toBeGreaterThan(0);
    } finally {
      await account.stop();
    }
  });

  /**
   * A one-shot task `inMs` from now in the chat 'main', made while the agent runs; then the agent is
   * suspended before its time, the time kept as its wake time. The time is asserted to be still ahead.
   */
  async function taskWhileAsleep(account: TestAccount, user: TokenPair & { userId: string }, prompt: string, inMs: number) {
    expect(await chat(account, user, 'main', 'hello')).toBe('echo: hello');
    const agentId = (await account.services.agents.registry.forUser(user.userId))?.id ?? '';
    const at = new Date(Date.now() + inMs);
    const created = await fetch(`${account.url}/api/v1/agent/tasks`, {
      method: 'POST',
      headers: { ...bearer(user), 'content-type': 'application/json' },
      body: JSON.stringify({ prompt, at: at.toISOString(), chat_id: 'main' }),
    });
    expect(created.status).toBe(201);
    await eventually('suspended', async () => (await statefulSet(agentId))?.spec?.replicas === 0 && !(await pod(agentId)), 30_000);
    expect(Date.now(), 'suspended before the task was due').toBeLessThan(at.getTime());
    const row = await account.services.store.db.agent.findUniqueOrThrow({ where: { id: agentId } });
    expect(row.nextWakeAt?.toISOString()).toBe(at.toISOString());
    return { at, agentId, asleep: model.requests.length };
  }

  const pendingOf = async (account: TestAccount, user: TokenPair) =>
    (
      (await (await fetch(`${account.url}/api/v1/agent/pending`, { headers: bearer(user) })).json()) as {
        messages: Array<{ chat_id: string; source: string; content: string }>;
      }
    ).messages;

  it("a suspended agent is woken for its scheduled task within seconds of its time; the answer waits as a pending message from 'task'", async () => {
    const account = await startKubeAccount({ AGENT_IDLE_TIMEOUT: '2', AGENT_WAKE_POLL: '0.5' });
    try {
      const user = await guest(account, 'kube-task');
      const prompt = 'Remind me to water the plants';
      const { at, agentId, asleep } = await taskWhileAsleep(account, user, prompt, 12_000);

      // Nobody asks for it: the wake scheduler scales the set up again, and the task's turn reaches the model.
      let scaledAt = 0;
      let askedAt = 0;
      let usedAtWake = 0;
      await eventually(
        'the task ran',
        async () => {
          const set = scaledAt ? undefined : await statefulSet(agentId);
          if (set?.spec?.replicas === 1) {
            scaledAt = Date.now();
            usedAtWake = Date.parse(set.metadata.annotations?.[LAST_USED_ANNOTATION] ?? '');
          }
          if (!askedAt && model.requests.slice(asleep).some((r) => lastUserText(r) === taskMessage(prompt))) askedAt = Date.now();
          return askedAt > 0;
        },
        60_000,
      );
      const late = (t: number) => t - at.getTime();
      console.log(`kube task: woken ${late(scaledAt)} ms after its time, the model asked after ${late(askedAt)} ms`);
      expect(late(scaledAt)).toBeGreaterThanOrEqual(0);
      expect(late(scaledAt)).toBeLessThan(5_000);
      // The set came back carrying a use as of its wake: another instance's idle sweep does not take the starting Pod for an idle one.
      expect(usedAtWake).toBeGreaterThanOrEqual(at.getTime());
      // The Pod's cold start comes between the wake and the turn.
      expect(late(askedAt)).toBeLessThan(20_000);
      // One turn: the task's message, nothing else (no heartbeat came with the wake).
      expect(model.requests.slice(asleep).map(lastUserText)).toEqual([taskMessage(prompt)]);
      const answer = await eventually('the answer is kept', async () => (await pendingOf(account, user)).find((m) => m.source === 'task'), 10_000);
      expect(answer).toMatchObject({ chat_id: 'main', content: `echo: ${taskMessage(prompt)}` });
    } finally {
      await account.stop();
    }
  });

  it('stores the Pod spec the docs promise: runtime class, non-root, read-only root, no capabilities, seccomp, no token, no service links, limits, probe, grace', async () => {
    const account = await startKubeAccount();
    try {
      const user = await guest(account, 'kube-spec');
      await chat(account, user, 'c', 'hi');
      const agent = await account.services.agents.registry.forUser(user.userId);
      const stored = await pod(agent?.id ?? '');
      const spec = stored?.spec;
      expect(spec.runtimeClassName).toBe('gvisor');
      expect(spec.automountServiceAccountToken).toBe(false);
      expect(spec.enableServiceLinks).toBe(false);
      expect(spec.terminationGracePeriodSeconds).toBe(6);
      expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } });
      const [container] = spec.containers;
      expect(container.securityContext).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        privileged: false,
        runAsNonRoot: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(container.resources.limits).toEqual({ memory: '1Gi', cpu: '1' });
      expect(container.readinessProbe.httpGet).toMatchObject({ path: '/health', port: 'http' });
      // Secrets only in the mounted Secret, never in the Pod spec.
      const env = JSON.stringify(container.env);
      expect(env).not.toContain(agent?.secret ?? 'no secret');
      expect(env).not.toMatch(/AGENT_SECRET"|AGENT_EGRESS_TOKEN|API_KEY/);
      expect(spec.volumes.find((v: { name: string }) => v.name === 'secrets').secret.secretName).toBe(`agent-${agent?.id}`);
    } finally {
      await account.stop();
    }
  });

  it("a woken agent's Pod runs the image's command, the agent bundle, from the build's code cache", async () => {
    // The image (deploy/docker/agent.Dockerfile) runs the bundle from /app; the harness's command is that one.
    const dockerfile = await readFile(path.join(REPO_ROOT, 'deploy/docker/agent.Dockerfile'), 'utf8');
    const workdir = [...dockerfile.matchAll(/^WORKDIR (\S+)$/gm)].at(-1)?.[1] ?? '';
    const [program, entry] = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)?.[1] ?? '[]') as string[];
    expect([program, path.posix.join(workdir, entry ?? '')]).toEqual(['node', '/app/dist/agent/boot.cjs']);
    const { KUBE_AGENT_COMMAND } = await kubeAccountEnv({ kubeconfig, namespace: NS, modelSpec: model.modelSpec });
    expect(JSON.parse(KUBE_AGENT_COMMAND ?? '[]')).toEqual(['node', '/app/dist/agent/boot.cjs']);

    // Agents inherit LOG_LEVEL from the account service's environment (silent under vitest).
    const logLevel = process.env.LOG_LEVEL;
    process.env.LOG_LEVEL = 'info';
    const account = await startKubeAccount().finally(() => {
      process.env.LOG_LEVEL = logLevel;
    });
    try {
      const user = await guest(account, 'kube-bundle');
      expect(await chat(account, user, 'c', 'hi')).toBe('echo: hi');
      const agentId = (await account.services.agents.registry.forUser(user.userId))?.id ?? '';
      await provisionerOf(account).stopAgentOf(user.userId);
      await eventually('suspended', async () => !(await pod(agentId)), 30_000);
      expect(await chat(account, user, 'c', 'awake')).toBe('echo: awake');
      const pid = kubelet.pod(NS, `agent-${agentId}-0`)?.containers[0]?.pid;
      const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replace(/\0$/, '').split('\0');
      expect(argv).toEqual(['node', '/app/dist/agent/boot.cjs']);
      const started = kubelet
        .logs(NS, `agent-${agentId}-0`)
        .split('\n')
        .filter((line) => line.includes('agent started from the bundle'));
      expect(started.length).toBeGreaterThan(0);
      expect(new Set(started.map((line) => (JSON.parse(line) as { codeCache: string }).codeCache))).toEqual(new Set(['used']));
    } finally {
      await account.stop();
    }
  });

  it('a woken agent takes requests once it answers /health, before the kubelet marks it ready', async () => {
    const account = await startKubeAccount({ KUBE_START_TIMEOUT: '20' });
    try {
      const user = await guest(account, 'kube-health');
      expect(await chat(account, user, 'c', 'first')).toBe('echo: first');
      const agentId = (await account.services.agents.registry.forUser(user.userId))?.id ?? '';
      await provisionerOf(account).stopAgentOf(user.userId);
      await eventually('suspended', async () => !(await pod(agentId)), 30_000);
      // A kubelet probes readiness once a period (1 s at least); this one never reports it.
      kubelet.holdReadiness(true);
      try {
        expect(await chat(account, user, 'c', 'woken')).toBe('echo: woken');
        expect(await chat(account, user, 'c', 'again')).toBe('echo: again');
        const conditions = ((await pod(agentId))?.status?.conditions ?? []) as Array<{ type: string; status: string }>;
        expect(conditions.find((c) => c.type === 'Ready')?.status).not.toBe('True');
      } finally {
        kubelet.holdReadiness(false);
      }
    } finally {
      await account.stop();
    }
  });

  it("works with the Role alone (the account's service account is refused outside it), and a chat message costs no API request", async () => {
    const account = await startKubeAccount();
    try {
      // The same token as the provisioner's: no pods in the account's own namespace, no nodes, no deleting pods.
      const { stdout } = await run('kubectl', ['--kubeconfig', kubeconfig, 'auth', 'can-i', '--list', '-n', NS]);
      expect(stdout).toMatch(/statefulsets\.apps/);
      const outside: Array<[verb: string, resource: string, namespace: string]> = [
        ['list', 'pods', 'agent-accounts'],
        ['delete', 'pods', NS],
        ['list', 'nodes', NS],
        ['create', 'roles.rbac.authorization.k8s.io', NS],
      ];
      for (const [verb, resource, namespace] of outside) {
        const check = await run('kubectl', ['--kubeconfig', kubeconfig, 'auth', 'can-i', verb, resource, '-n', namespace]).catch(
          (error: { stdout: string }) => error,
        );
        expect(check.stdout.trim(), `${verb} ${resource} in ${namespace}`).toBe('no');
      }
      const user = await guest(account, 'kube-role');
      expect(await chat(account, user, 'c', 'with the role only')).toBe('echo: with the role only');
      // Steady state: where the agent answers comes from the watch, so messages cost no API request.
      const before = provisionerOf(account).apiRequests;
      for (const message of ['one', 'two', 'three']) expect(await chat(account, user, 'c', message)).toBe(`echo: ${message}`);
      expect(provisionerOf(account).apiRequests).toBe(before);
    } finally {
      await account.stop();
    }
  });

  it('a crashed agent is restarted by the kubelet with backoff and reported; the next message is answered', async () => {
    const account = await startKubeAccount();
    try {
      const user = await guest(account, 'kube-crash');
      await chat(account, user, 'c', 'before');
      const agent = await account.services.agents.registry.forUser(user.userId);
      expect(kubelet.kill(NS, `agent-${agent?.id}-0`, { signal: 'SIGKILL' })).toBe(true);
      await eventually('crash reported', () => provisionerOf(account).stats().crashed >= 1, 20_000);
      // The agent's container (the Pod's exec runner beside it was not touched).
      const agentStatus = async () =>
        ((await pod(agent?.id ?? ''))?.status?.containerStatuses as Array<{ name: string; ready: boolean; restartCount: number }> | undefined)?.find(
          (c) => c.name === 'agent',
        );
      await eventually('ready again', async () => (await agentStatus())?.ready === true, 30_000);
      expect((await agentStatus())?.restartCount).toBe(1);
      expect(await chat(account, user, 'c', 'after')).toBe('echo: after');
    } finally {
      await account.stop();
    }
  });

  it("AGENT_MAX_RUNNING counts the cluster's running agents: at the cap an idle one is suspended for a new one; a Pod that never gets ready answers 503 AGENT_STARTING with Retry-After", async () => {
    const account = await startKubeAccount({ AGENT_MAX_RUNNING: '1' });
    try {
      const first = await guest(account, 'kube-cap-1');
      await chat(account, first, 'c', 'one');
      const firstAgent = await account.services.agents.registry.forUser(first.userId);
      const second = await guest(account, 'kube-cap-2');
      expect(await chat(account, second, 'c', 'two')).toBe('echo: two');
      expect((await statefulSet(firstAgent?.id ?? ''))?.spec.replicas).toBe(0);
      expect(provisionerOf(account).stats()).toMatchObject({ running: 1, evicted: 1 });
    } finally {
      await account.stop();
    }
    // An agent whose container never answers /health: the call gives up after KUBE_START_TIMEOUT.
    const stuck = await startKubeAccount({ KUBE_START_TIMEOUT: '2', KUBE_AGENT_COMMAND: JSON.stringify(['sleep', '60']) });
    try {
      const user = await guest(stuck, 'kube-stuck');
      const res = await fetch(`${stuck.url}/api/v1/agent/chats`, { headers: bearer(user) });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.json()).toMatchObject({ code: 'AGENT_STARTING' });
      await stuck.services.agents.provisioner.deleteAgentOf(user.userId);
    } finally {
      await stuck.stop();
    }
  });

  it('deleting an account deletes every object of its agent', async () => {
    const account = await startKubeAccount();
    try {
      const user = await guest(account, 'kube-delete');
      await chat(account, user, 'c', 'hi');
      const agent = await account.services.agents.registry.forUser(user.userId);
      expect((await agentObjects()).filter((name) => name.includes(agent?.id ?? '-'))).toHaveLength(5);
      const res = await fetch(`${account.url}/api/v1/account`, { method: 'DELETE', headers: bearer(user) });
      expect(res.status).toBeLessThan(300);
      await eventually('objects gone', async () => (await agentObjects()).every((name) => !name.includes(agent?.id ?? '-')), 30_000);
      expect(await account.services.agents.registry.forUser(user.userId)).toBeUndefined();
    } finally {
      await account.stop();
    }
  });

  it('an instance that dies half-way leaves nothing the next start does not reconcile: orphans removed, a half-made agent completed on its next use', async () => {
    const account = await startKubeAccount();
    const user = await guest(account, 'kube-half');
    const registry = account.services.agents.registry;
    const labelsOf = (agentId: string) => ({
      'app.kubernetes.io/name': 'agent',
      'app.kubernetes.io/part-of': 'agent-accounts',
      'agent-accounts.dev/agent-id': agentId,
      'agent-accounts.dev/user-id': user.userId,
    });
    // Died between the registry row and the StatefulSet: the row and an empty Secret.
    const halfId = crypto.randomUUID();
    await registry.add({
      id: halfId,
      name: `agent-${halfId}`,
      url: 'kubernetes://agents',
      secret: randomBytes(32).toString('base64url'),
      kind: 'kubernetes',
      userId: user.userId,
    });
    await cp.api.post(corePath(NS, 'secrets'), { metadata: { name: `agent-${halfId}`, labels: labelsOf(halfId) }, data: {} });
    // Died while deleting an account: no row, a Secret and a Service left.
    const orphanId = crypto.randomUUID();
    await cp.api.post(corePath(NS, 'secrets'), { metadata: { name: `agent-${orphanId}`, labels: labelsOf(orphanId) }, data: {} });
    await cp.api.post(corePath(NS, 'services'), {
      metadata: { name: `agent-${orphanId}`, labels: labelsOf(orphanId) },
      spec: { clusterIP: 'None', selector: { 'agent-accounts.dev/agent-id': orphanId }, ports: [{ port: 8080 }] },
    });
    await account.stop({ keepData: true });

    // The next instance on the same store (PGlite keeps it in its data directory).
    const next = await startKubeAccount({ DATA_DIR: account.dataDir });
    try {
      expect((await agentObjects()).filter((name) => name.includes(orphanId))).toEqual([]);
      expect(await chat(next, user, 'c', 'after the crash')).toBe('echo: after the crash');
      expect((await agentObjects()).filter((name) => name.includes(halfId))).toHaveLength(5);
    } finally {
      await next.stop();
      await rm(account.dataDir, { recursive: true, force: true });
    }
  });

  /** A database of its own on the host's PostgreSQL for instances that share one store; undefined when none runs. */
  async function sharedDatabase(): Promise<{ url: string; drop(): Promise<void> } | undefined> {
    const probe = new pg.Client({ connectionString: PG_SOCKET_URL, connectionTimeoutMillis: 1_500 });
    const reachable = await probe.connect().then(
      () => true,
      () => false,
    );
    await probe.end().catch(() => undefined);
    if (!reachable) return undefined;
    const name = `t_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: PG_SOCKET_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    return {
      url: `postgres://postgres@localhost/${name}?host=%2Fvar%2Frun%2Fpostgresql`,
      async drop() {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
        await admin.end();
      },
    };
  }
  const NO_SHARED_DATABASE = 'no PostgreSQL on /var/run/postgresql: two instances need one shared database';

  it('two account instances racing to wake one agent make one Pod', async (context) => {
    const database = await sharedDatabase();
    if (!database) return context.skip(NO_SHARED_DATABASE);
    const first = await startKubeAccount({ DATABASE_URL: database.url });
    const second = await startKubeAccount({ DATABASE_URL: database.url });
    try {
      const user = await guest(first, 'kube-race');
      const chats = await Promise.all([
        chat(first, user, 'a', 'one'),
        chat(second, user, 'b', 'two'),
        chat(first, user, 'c', 'three'),
        chat(second, user, 'd', 'four'),
      ]);
      expect(chats).toEqual(['echo: one', 'echo: two', 'echo: three', 'echo: four']);
      const agent = await first.services.agents.registry.forUser(user.userId);
      const pods = (await agentObjects()).filter((n) => n.startsWith('pods/') && n.includes(agent?.id ?? '-'));
      expect(pods).toEqual([`pods/agent-${agent?.id}-0`]);
      // Still one after the race settles: the StatefulSet was applied, never created twice.
      const set = await statefulSet(agent?.id ?? '');
      expect(set?.spec.replicas).toBe(1);
      expect(set?.metadata.managedFields.map((f: { manager: string }) => f.manager)).toContain('agent-accounts');
      expect(provisionerOf(first).stats().running + provisionerOf(second).stats().running).toBeGreaterThanOrEqual(2);
    } finally {
      await first.stop();
      await second.stop();
      await database.drop();
    }
  });

  it('a start slower than the idle timeout is not taken for idle by another instance while the first waits for it', async (context) => {
    const database = await sharedDatabase();
    if (!database) return context.skip(NO_SHARED_DATABASE);
    // Each start takes 3 s more than the agent needs (a loaded node); both instances sweep every 250 ms for agents idle 1 s.
    const slowStart = JSON.stringify(['sh', '-c', 'sleep 3 && exec node /app/dist/agent/boot.cjs']);
    const env = { DATABASE_URL: database.url, AGENT_IDLE_TIMEOUT: '1', KUBE_START_TIMEOUT: '30', KUBE_AGENT_COMMAND: slowStart };
    const first = await startKubeAccount(env);
    const second = await startKubeAccount(env);
    try {
      const user = await guest(first, 'kube-slow-start');
      const asked = Date.now();
      expect(await chat(first, user, 'c', 'slow')).toBe('echo: slow');
      expect(Date.now() - asked).toBeGreaterThan(3_000);
      // Once it serves and sits unused, it is idle like any other.
      const agentId = (await first.services.agents.registry.forUser(user.userId))?.id ?? '';
      await eventually('suspended once idle', async () => (await statefulSet(agentId))?.spec?.replicas === 0, 30_000);
    } finally {
      await first.stop();
      await second.stop();
      await database.drop();
    }
  });

  it('two account instances on one store, both polling for due agents, wake a sleeping agent once for its task, which runs once', async (context) => {
    const database = await sharedDatabase();
    if (!database) return context.skip(NO_SHARED_DATABASE);
    const wakes = { count: 0 };
    const env = { DATABASE_URL: database.url, AGENT_IDLE_TIMEOUT: '2', AGENT_WAKE_POLL: '0.3' };
    const first = await startKubeAccount(env, { log: wakeCounter(wakes) });
    const second = await startKubeAccount(env, { log: wakeCounter(wakes) });
    try {
      const user = await guest(first, 'kube-task-twice');
      const prompt = 'Remind me once, whichever instance wakes you';
      const { agentId, asleep } = await taskWhileAsleep(first, user, prompt, 12_000);
      const runs = () => model.requests.slice(asleep).filter((r) => lastUserText(r) === taskMessage(prompt)).length;
      await eventually('the task ran', () => runs() > 0, 60_000);
      // Asleep again, with nothing left to wake it for; a second wake or run would have come by now.
      await eventually('suspended again', async () => (await statefulSet(agentId))?.spec?.replicas === 0 && !(await pod(agentId)), 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(runs()).toBe(1);
      expect(wakes.count).toBe(1);
      const answers = [...(await pendingOf(second, user)), ...(await pendingOf(first, user))].filter((m) => m.source === 'task');
      expect(answers).toEqual([expect.objectContaining({ chat_id: 'main', content: `echo: ${taskMessage(prompt)}` })]);
    } finally {
      await first.stop();
      await second.stop();
      await database.drop();
    }
  });
});

/**
 * An account's logger that counts its scheduled wake attempts (the wake scheduler's line for each,
 * woken or failed) into `wakes`. A failed one counts too: on a loaded machine a wake may outlast
 * its wait and be logged as failed although the Pod it scaled up runs the task (and that Pod's
 * report then clears the retry); what must not happen is a second instance waking it as well.
 */
function wakeCounter(wakes: { count: number }): Logger {
  return pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        const line = chunk.toString();
        if (line.includes('woke a sleeping agent on schedule') || line.includes('wake scheduler: waking an agent failed')) wakes.count++;
        done();
      },
    }),
  );
}
