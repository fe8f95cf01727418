/**
 * Agents run from the agent bundle (server/agent/boot.ts, scripts/agent-bundle.ts): a local agent
 * the launcher starts is `node dist/agent/boot.cjs`, sandboxed or not, with no V8 flag that
 * would refuse the build's code cache; the bundle takes that cache and still loads what it loads
 * only later (the OpenAPI generator, the model client, Prisma's query compiler from node_modules)
 * from the cached script; a cache made for another bundle is refused, however alike the two
 * look to V8. Kubernetes agents: test/kube/provisioner.test.ts; the image's command:
 * test/deploy/manifests.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { agentEntry } from '../../server/account/agents/provisioners/local/agent-entry.js';
import { AgentLauncher } from '../../server/account/agents/provisioners/local/launcher.js';
import { EgressGateway } from '../../server/account/agents/egress/gateway.js';
import { agentFetch } from '../../server/account/agents/transport.js';
import { loadAccountConfig } from '../../server/account/config.js';
import { AGENT_BOOT, AGENT_BUNDLE, AGENT_CODE_CACHE, REPO_ROOT } from '../../server/common/build.js';
import { freePort } from '../../server/common/net.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { tempDir } from '../support/servers.js';

const silentLog = { info: () => undefined, warn: () => undefined, error: () => undefined } as never;

/** The command line of `pid` and of every process below it. */
async function commandLines(pid: number): Promise<string[][]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid) parents.set(Number(entry), ppid);
  }
  const below = (p: number): boolean => p === pid || (parents.has(p) && below(parents.get(p) as number));
  const pids = [...parents.keys()].filter(below);
  const lines = await Promise.all(pids.map((p) => readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')));
  return lines.filter(Boolean).map((line) => line.replace(/\0$/, '').split('\0'));
}

interface Booted {
  child: ChildProcess;
  url: string;
  /** The `agent started from the bundle` log line's code cache. */
  codeCache: string;
}

/** `node <boot>` on a port of its own, its log read until it says how it booted. */
async function boot(bootFile: string, env: Record<string, string>): Promise<Booted> {
  const port = await freePort();
  const child = spawn(process.execPath, [bootFile], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', AGENT_PORT: String(port), LOG_LEVEL: 'info', HEARTBEAT_INTERVAL: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  try {
    for await (const line of createInterface({ input: child.stdout as NodeJS.ReadableStream })) {
      const entry = JSON.parse(line) as { msg?: string; codeCache?: string };
      if (entry.msg === 'agent started from the bundle') {
        child.stdout?.resume();
        return { child, url: `http://127.0.0.1:${port}`, codeCache: entry.codeCache ?? '' };
      }
    }
  } finally {
    clearTimeout(timer);
  }
  throw new Error(`the agent exited (${child.exitCode}) before it said how it booted`);
}

const children: ChildProcess[] = [];
const secret = randomBytes(24).toString('hex');
const auth = { authorization: `Bearer ${secret}` };
let model: ScriptedModel | undefined;
afterAll(async () => {
  await Promise.all(
    children.map((child) => {
      if (child.exitCode !== null || child.signalCode !== null) return undefined;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      return exited;
    }),
  );
  await model?.close();
});

describe('the agent bundle is what agents run', () => {
  it('a local agent is `node dist/agent/boot.cjs`, with no V8 flag but a sandbox’s heap limit', async () => {
    expect(agentEntry().args).toEqual([AGENT_BOOT]);
    const launcher = new AgentLauncher(
      loadAccountConfig({}).agentLauncher,
      new EgressGateway([], silentLog, { limits: loadAccountConfig({}).egressLimits }),
      silentLog,
    );
    try {
      const { child, url } = await launcher.launch(`bundle-${randomBytes(4).toString('hex')}`, await tempDir('bundle-ws'), {
        PATH: process.env.PATH ?? '',
        AGENT_SECRET: secret,
        LOG_LEVEL: 'silent',
      });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const agent = agentFetch(url);
      for (
        const deadline = Date.now() + 30_000;
        !(await agent.fetch(`${agent.base}/health`).then(
          (r) => r.ok,
          () => false,
        ));
      ) {
        if (Date.now() > deadline) throw new Error('the local agent did not start');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const nodes = (await commandLines(child.pid as number)).filter((argv) => argv[0] === process.execPath);
      launcher.terminate(child);
      await exited;
      expect(nodes).toHaveLength(1);
      const [argv] = nodes as [string[]];
      expect(argv.at(-1)).toBe(AGENT_BOOT);
      // Without cgroups the sandbox bounds the heap by a flag (and that start compiles the agent).
      expect(argv.slice(1, -1).filter((arg) => !/^--max-old-space-size=\d+$/.test(arg))).toEqual([]);
    } finally {
      await launcher.close();
    }
  });

  it('takes the build’s code cache and loads what it defers from the cached script', async () => {
    model = await startScriptedModel({ responder: () => ({ text: 'from the bundle' }) });
    const agent = await boot(AGENT_BOOT, { AGENT_SECRET: secret, AGENT_WORKSPACE: await tempDir('bundle-ws'), MODEL: model.modelSpec });
    expect(agent.codeCache).toBe('used');
    expect((await fetch(`${agent.url}/health`)).status).toBe(200);
    // The OpenAPI generator, the model client and Prisma's query compiler are all first loaded here.
    const doc = await fetch(`${agent.url}/openapi.json`, { headers: auth });
    expect(((await doc.json()) as { paths: Record<string, unknown> }).paths).toHaveProperty('/chat');
    const reply = await fetch(`${agent.url}/chat`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: 'c1', message: 'hi' }),
    });
    expect(await reply.text()).toContain('from the bundle');
    const subagents = await fetch(`${agent.url}/subagents`, { headers: auth });
    expect(await subagents.json()).toEqual({ subagents: [] });
  });

  it('refuses a code cache made for another bundle of the same length, and compiles', async () => {
    // A copy of dist/agent whose bundle differs from the original in one character of its first line.
    const dist = await tempDir('bundle-copy');
    await mkdir(path.join(dist, 'agent'));
    for (const link of ['node_modules', 'prisma']) await symlink(path.join(REPO_ROOT, link), path.join(dist, link));
    await copyFile(AGENT_BOOT, path.join(dist, 'agent/boot.cjs'));
    await copyFile(AGENT_CODE_CACHE, path.join(dist, 'agent/agent.code-cache'));
    const source = await readFile(AGENT_BUNDLE, 'latin1');
    const flipped = source[3] === '0' ? '1' : '0';
    await writeFile(path.join(dist, 'agent/agent.cjs'), `${source.slice(0, 3)}${flipped}${source.slice(4)}`, 'latin1');

    const agent = await boot(path.join(dist, 'agent/boot.cjs'), { AGENT_SECRET: secret, AGENT_WORKSPACE: await tempDir('bundle-ws') });
    expect(agent.codeCache).toBe('rejected');
    expect((await fetch(`${agent.url}/health`)).status).toBe(200);
  });
});
