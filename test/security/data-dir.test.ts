/**
 * The data directory on disk: the account database, the signing and sealing keys, the outbox
 * with live sign-in codes, every tenant's workspace and `agent.db` (chats, contacts, owner
 * codes). The attack: another user of the same machine (a shell account, another service, a
 * compromised process running as someone else) reads them, because they were created with the
 * usual 0755/0644. Everything the services create is 0700 (directories) and 0600 (files), and a
 * data directory an earlier version left open is closed at start.
 */
import { randomUUID } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startTestAccount, startTestAgent, tempDir, type TestAccount, type TestAgent } from '../support/servers.js';

/**
 * Every entry under `root` (itself included) whose mode lets anyone but its owner in. PGlite's
 * files included (fourth security review: it set them 0666 and 0644 whatever the umask, 971 of
 * them after a short run).
 */
async function openToOthers(root: string): Promise<string[]> {
  const open: string[] = [];
  const visit = async (entry: string) => {
    const stats = await lstat(entry);
    if (stats.isSymbolicLink()) return;
    if ((stats.mode & 0o077) !== 0) open.push(`${path.relative(root, entry) || '.'} ${(stats.mode & 0o777).toString(8)}`);
    if (stats.isDirectory()) for (const name of await readdir(entry)) await visit(path.join(entry, name));
  };
  await visit(root);
  return open;
}

async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)));
}

const json = { 'content-type': 'application/json' };

describe('the data directory is private to the service user', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  it('another local user cannot read the account database, the keys or the outbox with its sign-in codes', async () => {
    const account: TestAccount = await startTestAccount('pglite', {}, { freshStore: true });
    cleanup.push(() => account.stop());
    const res = await fetch(`${account.url}/api/v1/auth/login/email`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ email: 'someone@example.com' }),
    });
    expect(res.status).toBe(200);
    await account.services.mail.idle();
    const files = await filesUnder(account.dataDir);
    for (const expected of ['signing-keys.json', 'agent-secrets.key', 'email-code-key']) expect(files).toContain(expected);
    expect(files.some((file) => file.startsWith('account-db/'))).toBe(true);
    expect(files.some((file) => file.startsWith('outbox/') && file.endsWith('.eml'))).toBe(true);
    expect(await openToOthers(account.dataDir)).toEqual([]);
  });

  it('a data directory an earlier version left world-readable is closed at start', async () => {
    const dataDir = path.join(await tempDir('old-data'), 'data');
    await mkdir(dataDir, { mode: 0o755 });
    await chmod(dataDir, 0o755);
    const account = await startTestAccount('pglite', { DATA_DIR: dataDir });
    cleanup.push(async () => {
      await account.stop();
      await rm(path.dirname(dataDir), { recursive: true, force: true });
    });
    expect((await lstat(dataDir)).mode & 0o777).toBe(0o700);
  });

  it("another local user cannot read an agent's workspace or its agent.db (chats, contacts, owner codes)", async () => {
    const agent: TestAgent = await startTestAgent();
    cleanup.push(() => agent.stop());
    const upload = new FormData();
    upload.append('file', new Blob(['private notes']), 'notes.txt');
    expect((await fetch(`${agent.url}/files/upload`, { method: 'POST', headers: agent.auth, body: upload })).status).toBe(200);
    expect(await filesUnder(agent.stateDir)).toContain('agent.db');
    expect(await openToOthers(agent.stateDir)).toEqual([]);
    expect(await openToOthers(agent.workspace)).toEqual([]);
  });

  it("another local user cannot read the tenants' agents under DATA_DIR/agents (local, sandboxed agents)", async () => {
    const account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0' }, { freshStore: true });
    cleanup.push(() => account.stop());
    const api = `${account.url}/api/v1`;
    const guest = await fetch(`${api}/auth/guest`, { method: 'POST', headers: json, body: JSON.stringify({ device_id: randomUUID() }) });
    const { access_token: token } = (await guest.json()) as { access_token: string };
    const chats = await fetch(`${api}/agent/chats`, { headers: { authorization: `Bearer ${token}` } });
    expect(chats.status).toBe(200);
    const agents = path.join(account.dataDir, 'agents');
    await vi.waitFor(async () => expect((await filesUnder(agents)).some((file) => file.endsWith('agent.db'))).toBe(true), { timeout: 30_000, interval: 100 });
    expect(await openToOthers(account.dataDir)).toEqual([]);
  });
});
