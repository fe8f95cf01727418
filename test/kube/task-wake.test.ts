/**
 * A suspended Kubernetes agent is woken for its scheduled task (docs/agent.md, "Scheduled tasks"):
 * against the real control plane and the test kubelet, a guest's task is made through the proxy,
 * the agent is suspended (replicas 0, Pod gone) with the task's time as its next wake, and at that
 * time an account instance scales it up, the task runs as one turn and its answer waits as a
 * pending message. With the host's PostgreSQL (its Unix socket reaches this network namespace),
 * two account instances share the store and race to wake it: one Pod, one turn.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenPair } from '@contracts/account/tokens.js';
import { taskMessage } from '../../server/agent/tasks/runner.js';
import { testDeviceId } from '../support/devices.js';
import { corePath } from '../support/kube/api.js';
import type { ControlPlane } from '../support/kube/cluster.js';
import { kubeAccountEnv } from '../support/kube/account-env.js';
import { eventually, REPO_ROOT, startKubelet, type TestKubelet } from '../support/kube/kubelet.js';
import { inKubeNetns, KUBE_NETNS_SKIP_REASON } from '../support/kube/netns.js';
import { sharedControlPlane } from '../support/kube/shared.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

const run = promisify(execFile);
const inside = inKubeNetns();
const suite = inside ? describe : describe.skip;
/** This file's own agents' namespace on the run's shared control plane. */
const NS = 'agents-tasks';
const PG_SOCKET_URL = 'postgres://postgres@localhost/test?host=%2Fvar%2Frun%2Fpostgresql';
const PROMPT = 'Remind me to stretch';

suite(inside ? 'a task wakes a suspended Pod' : `a task wakes a suspended Pod — skipped: ${KUBE_NETNS_SKIP_REASON}`, () => {
  let cp: ControlPlane;
  let kubelet: TestKubelet;
  let model: ScriptedModel;
  let kubeconfig: string;

  beforeAll(async () => {
    cp = sharedControlPlane();
    kubelet = await startKubelet({ cluster: cp, namespaces: [NS] });
    // deploy/kubernetes's namespaces and Role, with this file's namespace for the agents'.
    const deploy = path.join(REPO_ROOT, 'deploy/kubernetes');
    const file = path.join(cp.dir, `${NS}.yaml`);
    await writeFile(
      file,
      [
        (await readFile(path.join(deploy, 'namespaces.yaml'), 'utf8')).replace(/^ {2}name: agents$/m, `  name: ${NS}`),
        (await readFile(path.join(deploy, 'rbac.yaml'), 'utf8')).replace(/^ {2}namespace: agents$/gm, `  namespace: ${NS}`),
      ].join('\n---\n'),
    );
    await run('kubectl', ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', file]);
    kubeconfig = await cp.writeKubeconfig(await cp.tokenFor('agent-accounts', 'account'), `account-${NS}`);
    model = await startScriptedModel({ responder: (request) => ({ text: lastUserText(request).includes('stretch') ? 'Time to stretch!' : 'ok' }) });
  }, 120_000);

  afterAll(async () => {
    await model?.close();
    await kubelet?.stop();
  });

  /** A fresh database on the host's PostgreSQL for two instances to share; undefined when none answers. */
  async function sharedDatabase(): Promise<{ url: string; drop: () => Promise<void> } | undefined> {
    const admin = new pg.Client({ connectionString: PG_SOCKET_URL, connectionTimeoutMillis: 1_500 });
    if (
      !(await admin.connect().then(
        () => true,
        () => false,
      ))
    )
      return undefined;
    const name = `t_${randomBytes(6).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${name}`);
    return {
      url: `postgres://postgres@localhost/${name}?host=%2Fvar%2Frun%2Fpostgresql`,
      drop: async () => {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
        await admin.end();
      },
    };
  }

  it('is scaled up at its time by one of two instances racing for the wake: one Pod, one turn, the answer pending', async () => {
    const database = await sharedDatabase();
    const secretsKey = randomBytes(32).toString('base64');
    const env = async () => ({
      ...(await kubeAccountEnv({ kubeconfig, namespace: NS, modelSpec: model.modelSpec })),
      // One issuer for both, as behind one address.
      BASE_URL: 'http://account.test',
      SIGNING_KEYS_FILE: path.join(cp.dir, `${NS}-signing-keys.json`),
      AGENT_SECRETS_KEY: secretsKey,
      KUBE_WORKSPACE_SIZE: '256Mi',
      KUBE_START_TIMEOUT: '60',
      AGENT_IDLE_TIMEOUT: '1',
      AGENT_WAKE_POLL: '0.3',
      ...(database ? { DATABASE_URL: database.url } : {}),
    });
    const instances: TestAccount[] = [await startTestAccount('pglite', await env())];
    // Each with its own egress gateway, one key set and one secrets key: a token from one is good at the other.
    if (database) instances.push(await startTestAccount('pglite', await env()));
    const [first] = instances as [TestAccount];
    try {
      const signIn = await fetch(`${first.url}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: testDeviceId(`kube-task-${randomBytes(4).toString('hex')}`) }),
      });
      const headers = { authorization: `Bearer ${((await signIn.json()) as TokenPair).access_token}`, 'content-type': 'application/json' };
      const at = new Date(Date.now() + 12_000).toISOString();
      const created = await fetch(`${first.url}/api/v1/agent/tasks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ prompt: PROMPT, at, chat_id: 'main' }),
      });
      expect(created.status).toBe(201);
      const agent = await first.services.store.db.agent.findFirstOrThrow({ where: { kind: 'kubernetes' } });
      const set = () => cp.api.getOrUndefined(`/apis/apps/v1/namespaces/${NS}/statefulsets/agent-${agent.id}`);
      const pod = () => cp.api.getOrUndefined(corePath(NS, 'pods', `agent-${agent.id}-0`));

      // Suspended before its time, with the task's time as its next wake.
      await eventually('suspended', async () => (await set())?.spec?.replicas === 0 && !(await pod()), 30_000);
      expect(Date.now()).toBeLessThan(new Date(at).getTime());
      expect((await first.services.store.db.agent.findUniqueOrThrow({ where: { id: agent.id } })).nextWakeAt?.toISOString()).toBe(new Date(at).toISOString());

      const turns = () => model.requests.filter((request) => lastUserText(request) === taskMessage(PROMPT)).length;
      await eventually('the task ran', async () => turns() === 1, 40_000);
      const pending = await fetch(`${instances.at(-1)!.url}/api/v1/agent/pending`, { headers });
      expect(((await pending.json()) as { messages: Array<{ source: string; content: string }> }).messages).toEqual([
        expect.objectContaining({ source: 'task', content: 'Time to stretch!' }),
      ]);
      // One Pod, and the turn once, however many instances polled.
      const pods = (await cp.api.get(`${corePath(NS, 'pods')}?labelSelector=${encodeURIComponent(`agent-accounts.dev/agent-id=${agent.id}`)}`)) as {
        items: unknown[];
      };
      expect(pods.items.length).toBeLessThanOrEqual(1);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(turns()).toBe(1);
      console.log(`task wake: ${instances.length} account instance(s) on ${database ? 'one PostgreSQL' : 'PGlite'}`);
    } finally {
      for (const instance of instances) await instance.stop();
      await database?.drop();
    }
  }, 120_000);
});
