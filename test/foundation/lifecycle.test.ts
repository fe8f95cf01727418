import { spawn, execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, tempDir } from '../support/servers.js';

const run = promisify(execFile);

/** The parent's environment minus what vitest itself sets (it exports BASE_URL='/' for Vite). */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const { BASE_URL: _vite, ...env } = process.env;
  return { ...env, ...extra };
}
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function startAccountProcess(dataDir: string, port: number) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/account/main.ts'], {
    env: childEnv({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'silent', RATE_LIMIT_MULTIPLIER: '1000' }),
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/api/v1/openapi.json`).then((r) => r.ok, () => false);
    if (ok) return { child, exited };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('account service did not start');
}

describe('process lifecycle', () => {
  it('SIGTERM lets in-flight requests finish, exits 0, and leaves a store that reopens', async () => {
    const dataDir = await tempDir('lifecycle');
    dirs.push(dataDir);
    const port = await freePort();
    const first = await startAccountProcess(dataDir, port);
    const inFlight = Array.from({ length: 10 }, (_, i) =>
      fetch(`http://127.0.0.1:${port}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: `lifecycle-${i}` }),
      }).then((r) => r.status),
    );
    // Let the requests reach the server, then ask it to stop while they are being served.
    await new Promise((r) => setTimeout(r, 30));
    first.child.kill('SIGTERM');
    expect(await Promise.all(inFlight)).toEqual(Array(10).fill(200));
    expect(await first.exited).toBe(0);

    const second = await startAccountProcess(dataDir, port);
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/auth/guest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: 'lifecycle-0' }),
    });
    expect(res.status).toBe(200);
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
  }, 120_000);

  it('npm run db:migrate applies the migrations of both stores', async () => {
    const dataDir = await tempDir('migrate');
    dirs.push(dataDir);
    const env = childEnv({ DATA_DIR: dataDir, AGENT_WORKSPACE: `${dataDir}/ws`, LOG_LEVEL: 'silent' });
    const first = await run('npm', ['run', '--silent', 'db:migrate'], { env });
    expect(first.stdout).toMatch(/account store \(pglite\): applied 1 migration/);
    expect(first.stdout).toMatch(/agent store .*agent\.db: applied \d+ migration/);
    const again = await run('npm', ['run', '--silent', 'db:migrate'], { env });
    expect(again.stdout).toMatch(/account store \(pglite\): applied 0 migration/);
    expect(again.stdout).toMatch(/agent store .*: applied 0 migration/);
  }, 120_000);
});
