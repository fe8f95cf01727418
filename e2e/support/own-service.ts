/**
 * A product of a spec's own, for the specs that stop and restart the service (the shared one of
 * playwright.config.ts must stay up for the other specs): the compiled account service (built by
 * that shared one's `npm start`), on its own port and data directory, talking to the same
 * scripted model. `restart()` keeps the port and the data directory, so sessions and tokens stay
 * valid, as after a deploy.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';

const portBase = Number(process.env.E2E_PORT_BASE ?? 3900);

export interface OwnService {
  url: string;
  /** Stops the service (SIGTERM: it stops its agents and ends its streams) and waits for its exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data directory; resolves once it answers. */
  start(): Promise<void>;
}

async function waitForHttp(url: string, timeoutMs: number): Promise<void> {
  for (const until = Date.now() + timeoutMs; Date.now() < until; ) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up within ${timeoutMs} ms`);
}

/** `offset` from E2E_PORT_BASE: each spec that uses one picks its own (20 and up). */
export async function ownService(name: string, offset: number, env: Record<string, string> = {}): Promise<OwnService> {
  const port = portBase + offset;
  const dataDir = path.resolve(`test-results/e2e-${name}-data`);
  rmSync(dataDir, { recursive: true, force: true });
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const service: OwnService = {
    url,
    async start() {
      child = spawn(process.execPath, ['dist/server/account/main.js'], {
        env: {
          ...process.env,
          PORT: String(port),
          HOST: '127.0.0.1',
          DATA_DIR: dataDir,
          LOG_LEVEL: 'warn',
          // As the shared product: each test's context is a client of its own (support/test.ts).
          TRUST_PROXY: 'loopback',
          MODEL: `openai-compatible:http://127.0.0.1:${portBase + 12}/v1#scripted`,
          ...env,
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      await waitForHttp(`${url}/.well-known/jwks.json`, 60_000);
    },
    async stop() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      await exited;
    },
  };
  await service.start();
  return service;
}
