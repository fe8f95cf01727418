/**
 * What an agent's `exec` can reach in a Kubernetes Pod (fourth security review, High): commands
 * ran in the agent's own container as its user, so `cat /var/run/agent/secrets.json` gave the
 * agent's egress token (and with it the operator's model key at the gateway). Now commands run in
 * the Pod's exec runner container (server/agent/tools/exec-runner.ts). Against a real control plane
 * and the test kubelet (which runs each container in its own process namespace with its own mounts,
 * as a container runtime does), the exec tool itself, driven by the scripted model, looks for the
 * agent's secrets every way it can: the Secret's file by its path, every process environment,
 * command line, open file, root and readable memory it can see, and the files of the Pod's
 * volumes; it finds none of them, while a control value in its own environment is found.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenPair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';
import { corePath } from '../support/kube/api.js';
import type { ControlPlane } from '../support/kube/cluster.js';
import { kubeAccountEnv } from '../support/kube/account-env.js';
import { REPO_ROOT, startKubelet, type TestKubelet } from '../support/kube/kubelet.js';
import { inKubeNetns, KUBE_NETNS_SKIP_REASON } from '../support/kube/netns.js';
import { sharedControlPlane } from '../support/kube/shared.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { needle, scanCommand, scanReport } from '../support/secret-scan.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { events, openSse, readFrames } from '../support/sse.js';

const run = promisify(execFile);
const inside = inKubeNetns();
const suite = inside ? describe : describe.skip;
/** This file's own agents' namespace on the run's shared control plane (test/kube/provisioner.test.ts has `agents`). */
const NS = 'agents-isolation';

suite(inside ? 'an agent in a Pod' : `an agent in a Pod — skipped: ${KUBE_NETNS_SKIP_REASON}`, () => {
  let cp: ControlPlane;
  let kubelet: TestKubelet;
  let model: ScriptedModel;
  let account: TestAccount;

  beforeAll(async () => {
    cp = sharedControlPlane();
    kubelet = await startKubelet({ cluster: cp, namespaces: [NS] });
    // deploy/kubernetes's namespaces and Role, with this file's namespace for the agents'.
    const deploy = path.join(REPO_ROOT, 'deploy/kubernetes');
    const manifests = [
      (await readFile(path.join(deploy, 'namespaces.yaml'), 'utf8')).replace(/^ {2}name: agents$/m, `  name: ${NS}`),
      (await readFile(path.join(deploy, 'rbac.yaml'), 'utf8')).replace(/^ {2}namespace: agents$/gm, `  namespace: ${NS}`),
    ];
    const file = path.join(cp.dir, `${NS}.yaml`);
    await writeFile(file, manifests.join('\n---\n'));
    await run('kubectl', ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', file]);
    const kubeconfig = await cp.writeKubeconfig(await cp.tokenFor('agent-accounts', 'account'), `account-${NS}`);
    model = await startScriptedModel({
      responder: (request) => {
        const last = request.messages.at(-1);
        if (last?.role === 'tool') return { text: typeof last.content === 'string' ? last.content : JSON.stringify(last.content) };
        const text = lastUserText(request);
        if (text.startsWith('run: ')) return { toolCalls: [{ name: 'exec', args: { command: text.slice(5), timeout_seconds: 60 } }] };
        return { text: `echo: ${text}` };
      },
    });
    account = await startTestAccount('pglite', {
      ...(await kubeAccountEnv({ kubeconfig, namespace: NS, modelSpec: model.modelSpec })),
      KUBE_WORKSPACE_SIZE: '256Mi',
      KUBE_START_TIMEOUT: '60',
    });
  }, 120_000);

  afterAll(async () => {
    await account?.stop();
    await model?.close();
    await kubelet?.stop();
  });

  async function guest(label: string): Promise<TokenPair & { userId: string }> {
    const res = await fetch(`${account.url}/api/v1/auth/guest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: testDeviceId(`${label}-${randomBytes(4).toString('hex')}`) }),
    });
    const pair = (await res.json()) as TokenPair;
    const me = (await (await fetch(`${account.url}/api/v1/auth/me`, { headers: { authorization: `Bearer ${pair.access_token}` } })).json()) as {
      user_id: string;
    };
    return { ...pair, userId: me.user_id };
  }

  async function chat(pair: TokenPair, message: string): Promise<string> {
    const res = await openSse(`${account.url}/api/v1/agent/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${pair.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message, chat_id: `c-${randomBytes(4).toString('hex')}` }),
    });
    expect(res.status).toBe(200);
    return events(await readFrames(res))
      .filter((e) => e.type === 'text')
      .map((e) => String(e.content))
      .join('');
  }

  /** One `exec` through the chat: the command's output. */
  const exec = async (pair: TokenPair, command: string): Promise<string> => (JSON.parse(await chat(pair, `run: ${command}`)) as { output: string }).output;

  it("exec reads none of its agent's secrets: not the Secret's file, nor any environment, /proc entry or memory it can see", { timeout: 300_000 }, async () => {
    const user = await guest('isolation');
    // A first start may take longer than KUBE_START_TIMEOUT on a loaded machine: the answer is then
    // 503 AGENT_STARTING with Retry-After, which a client honours, as here (at most 3 minutes).
    for (const deadline = Date.now() + 180_000; ; ) {
      const res = await fetch(`${account.url}/api/v1/agent/chats`, { headers: { authorization: `Bearer ${user.access_token}` } });
      if (res.status !== 503 || Date.now() > deadline) {
        expect(res.status).toBe(200);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, Number(res.headers.get('retry-after') ?? 5) * 1000));
    }
    expect(await chat(user, 'hello pod')).toBe('echo: hello pod');
    const agent = await account.services.agents.registry.forUser(user.userId);
    const stored = (await cp.api.get(corePath(NS, 'secrets', `agent-${agent?.id}`))) as { data: Record<string, string> };
    const secrets = JSON.parse(Buffer.from(stored.data['secrets.json'] ?? '', 'base64').toString('utf8')) as Record<string, string>;
    expect(Object.keys(secrets)).toEqual(expect.arrayContaining(['AGENT_SECRET', 'AGENT_EGRESS_TOKEN']));

    // By its path, and by the environment variables the agent reads it from.
    const direct = await exec(user, 'cat /var/run/agent/secrets.json; echo "cat=$?"; env; ls -a /var/run/agent /data');
    expect(direct).toMatch(/cat=1/);
    for (const value of Object.values(secrets)) expect(direct).not.toContain(value);
    expect(direct).not.toMatch(/AGENT_SECRETS_FILE|AGENT_EGRESS_TOKEN|AGENT_SECRET=/);

    // Everything else a command can read: the scanner of test/security/exec-agent-secrets.test.ts.
    const control = `control-${randomBytes(12).toString('hex')}`;
    const needles = [...Object.entries(secrets).map(([name, value]) => needle(name, value)), needle('control', control)];
    const report = scanReport(await exec(user, await scanCommand(`SCAN_CONTROL=${control} SCAN_ROOTS=/data:/tmp:/run:/var/run`, needles)));
    console.log(
      `exec in the Pod scanned ${report.processes.length} processes (${report.processes.map((p) => `${p.pid} ${p.comm}: environ ${p.environ}, memory ${p.memBytes} bytes`).join('; ')}) and ${report.filesScanned} files`,
    );
    const controlFound = report.found.filter((f) => f.name === 'control').map((f) => f.where.split(' ')[0]);
    expect(controlFound).toEqual(expect.arrayContaining(['environ', 'mem']));
    expect(report.found.filter((f) => f.name !== 'control')).toEqual([]);

    // What the kubelet ran: the commands' container mounts the workspace alone, and no Secret.
    const pod = (await cp.api.get(corePath(NS, 'pods', `agent-${agent?.id}-0`))) as {
      spec: { containers: Array<{ name: string; env?: unknown[]; volumeMounts: Array<{ name: string; mountPath: string; subPath?: string }> }> };
    };
    const runner = pod.spec.containers.find((c) => c.name === 'exec');
    expect(runner?.volumeMounts.map((m) => m.name).sort()).toEqual(['data', 'exec-socket', 'exec-tmp']);
    expect(runner?.volumeMounts.find((m) => m.name === 'data')).toMatchObject({ subPath: 'workspace' });
    expect(JSON.stringify(runner?.env)).not.toMatch(/SECRET|TOKEN/);
    // The agent still works the workspace the commands write.
    expect(await exec(user, 'echo from-exec > made.txt && ls')).toContain('made.txt');
    const file = await fetch(`${account.url}/api/v1/agent/files/made.txt`, { headers: { authorization: `Bearer ${user.access_token}` } });
    expect(await file.text()).toBe('from-exec\n');
  });
});
