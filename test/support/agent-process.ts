/**
 * An agent as its own process (`server/agent/main.ts`), for tests that must kill -9 it, signal
 * it, or restart it on the same workspace. Resolves once /health answers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../server/common/net.js';

export interface AgentProcess {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

/** `env` needs at least AGENT_SECRET and AGENT_WORKSPACE; the port is chosen here. */
export async function startAgentProcess(env: Record<string, string>, timeoutMs = 20_000): Promise<AgentProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/agent/main.ts'], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', HEARTBEAT_INTERVAL: '0', ...env, AGENT_PORT: String(port) },
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`agent exited with ${child.exitCode}`);
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) return { child, url, exited };
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('agent did not start');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
