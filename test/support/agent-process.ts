/**
 * An agent as its own process (`server/agent/main.ts`), for tests that must kill -9 it, signal
 * it, restart it on the same workspace, or measure its memory. Resolves once /health answers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../server/common/net.js';
import type { ProbeStats } from './agent-probe.js';

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
  const child = spawn(process.execPath, ['--import', 'tsx', ...probeArgs, 'server/agent/main.ts'], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', HEARTBEAT_INTERVAL: '0', ...env, AGENT_PORT: String(port) },
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
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) return { child, url, exited, stats };
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('agent did not start');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
