/**
 * An agent as its own process (`server/agent/main.ts`), for tests that must kill -9 it, signal
 * it, restart it on the same workspace, or measure its memory. Resolves once /health answers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll } from 'vitest';
import { agentEntry } from '../../server/account/agents/provisioners/local/agent-entry.js';
import { freePort } from '../../server/common/net.js';
import type { ProbeStats } from './agent-probe.js';
import { startScriptedModel, type ScriptedModel } from './scripted-model.js';
import { tempDir } from './servers.js';

export type { ProbeStats } from './agent-probe.js';

export interface AgentProcess {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
  /** With `probe: true`: the child's memory after a full GC and its sockets' buffered bytes. */
  stats(): Promise<ProbeStats>;
}

export interface AgentProcessOptions {
  timeoutMs?: number;
  /** Load test/support/agent-probe.ts into the child (IPC channel, `--expose-gc`). */
  probe?: boolean;
}

/** `env` needs at least AGENT_SECRET and AGENT_WORKSPACE; the port is chosen here. */
export async function startAgentProcess(env: Record<string, string>, options: AgentProcessOptions = {}): Promise<AgentProcess> {
  const { timeoutMs = 20_000, probe = false } = options;
  const port = await freePort();
  const probeArgs = probe ? ['--expose-gc', '--import', new URL('./agent-probe.ts', import.meta.url).pathname] : [];
  // The probe is TypeScript, so a probed agent runs from sources; others start as the provisioner starts them.
  const entry = agentEntry();
  const args = probe ? ['--import', 'tsx', ...probeArgs, 'server/agent/main.ts'] : entry.args;
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', HEARTBEAT_INTERVAL: '0', ...entry.env, ...env, AGENT_PORT: String(port) },
    stdio: probe ? ['ignore', 'ignore', 'inherit', 'ipc'] : 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const stats = () =>
    new Promise<ProbeStats>((resolve, reject) => {
      if (!probe) return reject(new Error('started without the probe'));
      const timer = setTimeout(() => reject(new Error('the agent probe did not answer')), 10_000);
      child.once('message', (message) => {
        clearTimeout(timer);
        resolve(message as ProbeStats);
      });
      child.send('stats');
    });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`agent exited with ${child.exitCode}`);
    if (
      await fetch(`${url}/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { child, url, exited, stats };
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('agent did not start');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A test file whose agent is killed and started again: one scripted model, one workspace and
 * one secret kept across the restarts, made before the file's tests and removed after them.
 */
export function restartableAgentSuite(workspacePrefix: string, setup?: (model: ScriptedModel) => void) {
  const secret = randomBytes(24).toString('hex');
  const suite = {
    secret,
    auth: { authorization: `Bearer ${secret}` },
    model: undefined as unknown as ScriptedModel,
    workspace: '',
    /** The agent's environment: this suite's secret, workspace and model, no model retries. */
    env: (): Record<string, string> => ({ AGENT_SECRET: secret, AGENT_WORKSPACE: suite.workspace, MODEL: suite.model.modelSpec, AGENT_MODEL_RETRIES: '0' }),
    start: () => startAgentProcess(suite.env()),
  };
  beforeAll(async () => {
    suite.model = await startScriptedModel();
    setup?.(suite.model);
    suite.workspace = await tempDir(workspacePrefix);
  });
  afterAll(async () => {
    await suite.model.close();
    await rm(suite.workspace, { recursive: true, force: true });
  });
  return suite;
}
