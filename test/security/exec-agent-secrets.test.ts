/**
 * A command run by `exec` goes looking for its agent's secrets (issue 34, "Exec reads its agent's
 * secrets"): a real account service starts a real sandboxed local agent with an agent secret, a
 * bot token and a webhook secret (its user's bot, on a fake Bot API), and the hostile model has it
 * run a scanner through `exec` that reads everything a command can reach: every /proc/<pid>
 * environment, command line, open file and root, the readable memory of every process (through
 * /proc/<pid>/mem, region by region from its maps), and every file of the file system that can
 * have been written since the agent started. It also tries every way to the agent's egress socket.
 * Both with `AGENT_EXEC_NETWORK=none` and with `allowlist`, where commands share the agent's
 * network namespace.
 *
 * The scanner is never told a secret (its own command line and memory would then hold it): it
 * gets each one's first characters, length and SHA-256, and confirms a candidate by its hash. A
 * control value in its own environment proves that the scan does find what it can read.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenPair } from '@contracts/account/tokens.js';
import type { LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import { probeSandbox } from '../../server/account/agents/provisioners/local/sandbox.js';
import { PAIRED_NOTICE } from '../../server/agent/messenger/service.js';
import { until } from '../chat/helpers.js';
import { startFakeTelegram, type FakeTelegram } from '../support/fake-telegram.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { freePort, startTestAccount, type TestAccount } from '../support/servers.js';
import { type Needle, needle, type ScanReport, scanCommand, scanReport } from '../support/secret-scan.js';
import { openSse, readFrames } from '../support/sse.js';

let model: ScriptedModel;
let fake: FakeTelegram;
let account: TestAccount;
let api: string;

beforeAll(async () => {
  model = await startScriptedModel({
    responder: (request) => {
      const last = request.messages.at(-1);
      if (last?.role === 'tool') return { text: typeof last.content === 'string' ? last.content : JSON.stringify(last.content) };
      const text = lastUserText(request);
      if (text.startsWith('run: ')) return { toolCalls: [{ name: 'exec', args: { command: text.slice(5), timeout_seconds: 120 } }] };
      return { text: `echo: ${text}` };
    },
  });
});
afterAll(async () => {
  await model?.close();
});

/** An account service whose local agents run exec with `execNetwork`, its bots on a fresh fake Bot API. */
async function startAccount(execNetwork: string): Promise<void> {
  fake = await startFakeTelegram();
  const port = await freePort();
  account = await startTestAccount('pglite', {
    PORT: String(port),
    TELEGRAM_WEBHOOK_BASE: `http://127.0.0.1:${port}`,
    TELEGRAM_API_ROOT: fake.apiRoot,
    AGENT_PROVISIONER: 'local',
    AGENT_IDLE_TIMEOUT: '0',
    AGENT_EXEC_TIMEOUT: '120',
    AGENT_EXEC_NETWORK: execNetwork,
    MODEL: model.modelSpec,
    AGENT_MEMORY_MB: '512',
  });
  api = `${account.url}/api/v1`;
}

const json = { 'content-type': 'application/json' };

/** A full account (a guest whose flag is flipped, signed in again): only full accounts may connect a bot. */
async function fullAccount(): Promise<{ token: string; userId: string }> {
  const deviceId = randomUUID();
  const guest = async () =>
    ((await (await fetch(`${api}/auth/guest`, { method: 'POST', headers: json, body: JSON.stringify({ device_id: deviceId }) })).json()) as TokenPair)
      .access_token;
  const first = await guest();
  const me = (await (await fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${first}` } })).json()) as { user_id: string };
  await account.services.store.db.user.update({ where: { id: me.user_id }, data: { tier: 'full' } });
  return { token: await guest(), userId: me.user_id };
}

async function call(token: string, method: string, route: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${api}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : json) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** One `exec` through the chat: the command's output. */
async function run(token: string, command: string): Promise<string> {
  const stream = await openSse(`${api}/agent/chat`, {
    method: 'POST',
    headers: { ...json, authorization: `Bearer ${token}` },
    body: JSON.stringify({ message: `run: ${command}`, chat_id: `c-${randomUUID()}` }),
  });
  expect(stream.status).toBe(200);
  const frames = await readFrames(stream);
  stream.close();
  const reply = frames.map((f) => (f.data.type === 'text' ? String(f.data.content) : '')).join('');
  return (JSON.parse(reply) as { output: string }).output;
}

/** The host pid of a user's agent process (node, inside its sandbox), found from its launcher child. */
async function agentPid(userId: string): Promise<number> {
  const agent = await account.services.agents.registry.forUser(userId);
  const launched = (account.services.agents.provisioner as LocalProvisioner).processes().find((p) => p.agentId === agent?.id);
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone while we looked
    }
  }
  const descends = (pid: number): boolean => pid === launched?.pid || (pid > 1 && descends(parents.get(pid) ?? 0));
  const found = [...parents.keys()].find((pid) => descends(pid) && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'node');
  if (!found) throw new Error('agent process not found');
  return found;
}

describe.each(['none', 'allowlist'])('exec (AGENT_EXEC_NETWORK=%s), turned against its own agent', (execNetwork) => {
  let owner: { token: string; userId: string };
  let secrets: Record<string, string>;

  beforeAll(async () => {
    await startAccount(execNetwork);
    owner = await fullAccount();
    expect(await call(owner.token, 'PUT', '/agent/messenger/bot', { token: fake.token })).toMatchObject({ status: 200 });
    // The running agent holds the bot's token: it answers a pairing through the Bot API with it.
    const { code } = (await call(owner.token, 'POST', '/agent/messenger/bot/owner-code')).body as { code: string };
    fake.userSays({ id: 3001, first_name: 'Owner' }, `/start ${code}`);
    await until(() => fake.textsTo(3001).includes(PAIRED_NOTICE), 30_000);
    const hook = fake.webhook();
    const agent = await account.services.agents.registry.forUser(owner.userId);
    expect(hook?.secret).toBeTruthy();
    expect(agent?.secret).toBeTruthy();
    secrets = { 'agent secret': agent!.secret, 'bot token': fake.token, 'webhook secret': hook!.secret! };
    // With `allowlist` the commands really are in the agent's network namespace, with its relay as their proxy.
    if (execNetwork === 'allowlist') expect(await run(owner.token, 'echo "proxy=$HTTP_PROXY"')).toContain('proxy=http://127.0.0.1:3128');
  });

  it('finds none of them in any process environment, command line, open file, root or memory, nor in any file', async () => {
    const control = `control-${randomBytes(12).toString('hex')}`;
    const needles = [...Object.entries(secrets).map(([name, value]) => needle(name, value)), needle('control', control)];
    const report = await scan(`SCAN_CONTROL=${control}`, needles);
    console.log(
      `exec scanned ${report.processes.length} processes (${report.processes.map((p) => `${p.pid} ${p.comm}: environ ${p.environ}, root ${p.root}, memory ${p.memBytes} bytes`).join('; ')}) and ${report.filesScanned} files`,
    );
    // The scan works: it finds the control value in its own environment and memory.
    const controlFound = report.found.filter((f) => f.name === 'control').map((f) => f.where.split(' ')[0]);
    expect(controlFound).toEqual(expect.arrayContaining(['environ', 'mem']));
    expect(report.found.filter((f) => f.name !== 'control')).toEqual([]);
    // It saw its agent (pid 2 of the agent's sandbox) and could read nothing of it.
    expect(report.processes.find((p) => p.pid === '2')).toMatchObject({ comm: 'node', environ: false, root: false, memBytes: 0 });
  });

  it("cannot open the agent's egress socket, by its path or through /proc/<pid>/root", async () => {
    const report = await scan('', [], 'sockets-only');
    console.log(`socket attempts: ${report.sockets.map((s) => `${s.path} ${s.result}`).join('; ')}`);
    expect(report.sockets.map((s) => s.path)).toEqual(expect.arrayContaining(['/run/sandbox/egress.sock', '/proc/2/root/run/sandbox/egress.sock']));
    expect(report.sockets.filter((s) => s.result === 'connected')).toEqual([]);
  });

  it("cannot plant files in its agent's /tmp (where an agent run from source keeps its compiled modules)", async () => {
    const root = `/proc/${await agentPid(owner.userId)}/root`;
    expect(existsSync(`${root}/run/sandbox/agent.sock`)).toBe(true);
    expect(await run(owner.token, 'echo planted > /tmp/planted.mjs && ls /tmp')).toContain('planted.mjs');
    expect(existsSync(`${root}/tmp/planted.mjs`)).toBe(false);
    // The command's own files stay for its next call.
    expect(await run(owner.token, 'cat /tmp/planted.mjs')).toContain('planted');
  });

  /** Runs the scanner through exec; `env` is put before it on the command line. */
  afterAll(async () => {
    await account?.stop();
    await fake?.close();
  });

  async function scan(env: string, needles: Needle[], mode = ''): Promise<ScanReport> {
    return scanReport(await run(owner.token, await scanCommand(env, needles, mode)));
  }
});

describe('the start-up probe', () => {
  it('refuses exec where a command could read its agent (exec without a user namespace of its own)', async () => {
    const bwrap = process.env.AGENT_SANDBOX_BWRAP ?? 'bwrap';
    expect(await probeSandbox(bwrap)).toEqual({ ok: true });
    // The command run right in the sandbox, as the agent's sibling: it reads the first process's environment.
    expect(await probeSandbox(bwrap, [])).toEqual({ ok: false, reason: expect.stringContaining("can read its parent's /proc entries") });
  });
});
