import { spawn, execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { cliEntry, serviceEntry } from '../support/entries.js';
import { freePort, seedAccountStore, tempDir } from '../support/servers.js';

const run = promisify(execFile);

/** The parent's environment minus what vitest itself sets (it exports BASE_URL='/' for Vite). */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const { BASE_URL: _vite, ...env } = process.env;
  return { ...env, ...extra };
}
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function startAccountProcess(dataDir: string, port: number) {
  const child = spawn(process.execPath, serviceEntry('account'), {
    env: childEnv({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'silent', RATE_LIMIT_MULTIPLIER: '1000' }),
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  for (let i = 0; i < 300; i++) {
    // The readiness probe, its body released: a response left unread holds its connection, and the
    // service's stop then waits out its whole grace period (15 s) for it before exiting.
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      async (r) => {
        await r.body?.cancel();
        return r.ok;
      },
      () => false,
    );
    if (ok) return { child, exited };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('account service did not start');
}

async function startAgentProcess(workspace: string, port: number, secret: string) {
  const child = spawn(process.execPath, serviceEntry('agent'), {
    env: childEnv({ AGENT_WORKSPACE: workspace, AGENT_PORT: String(port), AGENT_SECRET: secret, LOG_LEVEL: 'silent', HEARTBEAT_INTERVAL: '0' }),
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  for (let i = 0; i < 300; i++) {
    if (
      await fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { child, exited };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('agent did not start');
}

describe('process lifecycle', () => {
  it('SIGTERM lets a request the server is reading finish, then exits 0', async () => {
    const workspace = await tempDir('lifecycle-agent');
    dirs.push(workspace);
    const port = await freePort();
    const secret = 'lifecycle-secret-0123456789';
    const agent = await startAgentProcess(workspace, port, secret);

    // A multipart upload whose body arrives over ~1.5 s: SIGTERM lands while the server reads it.
    const boundary = 'lifecycle-boundary';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.txt"\r\nContent-Type: text/plain\r\n\r\n`;
    const tail = `\r\n--${boundary}--\r\n`;
    const chunk = 'x'.repeat(1024);
    let sent = 0;
    let markFirstChunk: () => void = () => undefined;
    const firstChunkSent = new Promise<void>((resolve) => (markFirstChunk = resolve));
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const encoder = new TextEncoder();
        if (sent === 0) controller.enqueue(encoder.encode(head));
        if (sent < 15) {
          controller.enqueue(encoder.encode(chunk));
          sent += 1;
          if (sent === 1) markFirstChunk();
          await new Promise((r) => setTimeout(r, 100));
        } else {
          controller.enqueue(encoder.encode(tail));
          controller.close();
        }
      },
    });
    const upload = fetch(`http://127.0.0.1:${port}/files/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: 'half',
    } as RequestInit);
    await firstChunkSent;
    await new Promise((r) => setTimeout(r, 200));
    agent.child.kill('SIGTERM');
    const res = await upload;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ path: 'uploads/slow.txt', size: 15 * 1024 });
    expect(await agent.exited).toBe(0);
  }, 60_000);

  it('SIGTERM and SIGINT stop the account service cleanly: exit 0, and the store reopens with its data', async () => {
    const dataDir = await tempDir('lifecycle');
    dirs.push(dataDir);
    await seedAccountStore(dataDir);
    const port = await freePort();
    const signIn = () =>
      fetch(`http://127.0.0.1:${port}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: 'lifecycle-device' }),
      });
    const me = async (res: Response) => {
      const { access_token } = (await res.json()) as { access_token: string };
      return (
        (await (await fetch(`http://127.0.0.1:${port}/api/v1/auth/me`, { headers: { authorization: `Bearer ${access_token}` } })).json()) as { user_id: string }
      ).user_id;
    };
    const first = await startAccountProcess(dataDir, port);
    const userId = await me(await signIn());
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = await startAccountProcess(dataDir, port);
    expect(await me(await signIn())).toBe(userId);
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
  }, 120_000);

  it('npm run db:migrate applies the migrations of both stores', async () => {
    const dataDir = await tempDir('migrate');
    dirs.push(dataDir);
    const env = childEnv({ DATA_DIR: dataDir, AGENT_WORKSPACE: `${dataDir}/ws`, LOG_LEVEL: 'silent' });
    const first = await run('npm', ['run', '--silent', 'db:migrate'], { env });
    expect(first.stdout).toMatch(/account store \(pglite\): applied [1-9]\d* migration/);
    expect(first.stdout).toMatch(/agent store .*agent\.db: applied \d+ migration/);
    // Again, as the script runs it after its build check (the npm script itself ran above): the compiled CLI per store.
    const again = (store: string) => run(process.execPath, [...cliEntry('db'), 'migrate', '--store', store], { env });
    const [account, agent] = await Promise.all([again('account'), again('agent')]);
    expect(account.stdout).toMatch(/account store \(pglite\): applied 0 migration/);
    expect(agent.stdout).toMatch(/agent store .*: applied 0 migration/);
  }, 120_000);
});
