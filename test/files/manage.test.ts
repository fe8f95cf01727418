/**
 * Deleting and renaming workspace files (`POST /files/delete`, `POST /files/move`) on a real
 * agent over HTTP: the ordinary cases, and the hostile ones — paths out of the workspace (`..`,
 * absolute, backslashes, symbolic links out), protected names (`.env`, `agent.db`), directories
 * and the root, missing files, and a move onto an existing file, which never replaces it unless
 * asked. There is no user in either input: an agent has one workspace, and the account service
 * forwards only to the caller's own agent (docs/security.md), so no body can name another
 * tenant's file; an extra field naming one is ignored.
 */
import { lstat, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestAgent, type TestAgent } from '../support/servers.js';

let agent: TestAgent;
let outside: TestAgent;

beforeAll(async () => {
  [agent, outside] = await Promise.all([startTestAgent(), startTestAgent()]);
});
afterAll(async () => {
  await rm(path.join(agent.workspace, '../outside-victim.txt'), { force: true });
  await Promise.all([agent?.stop(), outside?.stop()]);
});

const put = async (rel: string, content: string, ws = agent.workspace) => {
  await mkdir(path.dirname(path.join(ws, rel)), { recursive: true });
  await writeFile(path.join(ws, rel), content);
};
const exists = (rel: string, ws = agent.workspace) =>
  lstat(path.join(ws, rel)).then(
    () => true,
    () => false,
  );
async function call(route: 'delete' | 'move', body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${agent.url}/files/${route}`, {
    method: 'POST',
    headers: { ...agent.auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('POST /files/delete', () => {
  it('deletes a file; a second time it is 404', async () => {
    await put('notes/gone.txt', 'bye');
    expect(await call('delete', { path: 'notes/gone.txt' })).toEqual({ status: 200, body: { path: 'notes/gone.txt', deleted: true } });
    expect(await exists('notes/gone.txt')).toBe(false);
    const again = await call('delete', { path: 'notes/gone.txt' });
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('FILE_NOT_FOUND');
  });

  it('refuses directories and the root (400 NOT_A_FILE), leaving them', async () => {
    await put('keep/inner.txt', 'x');
    for (const p of ['keep', 'keep/', '', '.', 'keep/..']) {
      const res = await call('delete', { path: p });
      expect(res.status, p).toBe(400);
      expect(res.body.code, p).toBe('NOT_A_FILE');
    }
    expect(await exists('keep/inner.txt')).toBe(true);
  });

  it('refuses every path out of the workspace or to a protected file (403), touching nothing', async () => {
    await put('../outside-victim.txt', 'precious');
    await put('.env', 'SECRET=1');
    for (const p of [
      '../outside-victim.txt',
      '/etc/hostname',
      'a/../../outside-victim.txt',
      '..\\outside-victim.txt',
      'C:\\x',
      '.env',
      'sub/.ENV.local',
      'agent.db',
      'x\0y',
    ]) {
      const res = await call('delete', { path: p });
      expect(res.status, p).toBe(403);
      expect(res.body.code, p).toBe('FORBIDDEN_PATH');
    }
    expect(await readFile(path.join(agent.workspace, '../outside-victim.txt'), 'utf8')).toBe('precious');
    expect(await exists('.env')).toBe(true);
  });

  it('removes a symbolic link itself, never its target; a link out of the workspace is refused', async () => {
    await put('target.txt', 'stays');
    await symlink('target.txt', path.join(agent.workspace, 'link-in'));
    await symlink('/etc/hostname', path.join(agent.workspace, 'link-out'));
    expect((await call('delete', { path: 'link-in' })).status).toBe(200);
    expect(await exists('link-in')).toBe(false);
    expect(await readFile(path.join(agent.workspace, 'target.txt'), 'utf8')).toBe('stays');
    expect((await call('delete', { path: 'link-out' })).status).toBe(403);
    expect(await exists('link-out')).toBe(true);
  });

  it("names no tenant: a field naming another agent's file is ignored, and its workspace is untouched", async () => {
    await put('same-name.txt', 'theirs', outside.workspace);
    const res = await call('delete', { path: 'same-name.txt', user_id: 'someone-else', workspace: outside.workspace });
    expect(res.status).toBe(404);
    expect(await readFile(path.join(outside.workspace, 'same-name.txt'), 'utf8')).toBe('theirs');
  });

  it('refuses a wrong body and a missing secret', async () => {
    expect((await call('delete', {})).status).toBe(400);
    expect((await call('delete', { path: 42 })).status).toBe(400);
    const res = await fetch(`${agent.url}/files/delete`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"path":"x"}' });
    expect(res.status).toBe(401);
  });
});

describe('POST /files/move', () => {
  it('renames a file, and moves it into a folder it creates', async () => {
    await put('m/a.txt', 'A');
    expect(await call('move', { from: 'm/a.txt', to: 'm/b.txt' })).toEqual({ status: 200, body: { from: 'm/a.txt', path: 'm/b.txt', name: 'b.txt' } });
    expect(await exists('m/a.txt')).toBe(false);
    expect((await call('move', { from: 'm/b.txt', to: 'm/new/deeper/c.txt' })).status).toBe(200);
    expect(await readFile(path.join(agent.workspace, 'm/new/deeper/c.txt'), 'utf8')).toBe('A');
  });

  it('never replaces an existing file unless asked (409 FILE_EXISTS, both kept); with overwrite it does', async () => {
    await put('o/new.txt', 'NEW');
    await put('o/old.txt', 'OLD');
    const refused = await call('move', { from: 'o/new.txt', to: 'o/old.txt' });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('FILE_EXISTS');
    expect(await readFile(path.join(agent.workspace, 'o/old.txt'), 'utf8')).toBe('OLD');
    expect(await readFile(path.join(agent.workspace, 'o/new.txt'), 'utf8')).toBe('NEW');
    expect((await call('move', { from: 'o/new.txt', to: 'o/old.txt', overwrite: true })).status).toBe(200);
    expect(await readFile(path.join(agent.workspace, 'o/old.txt'), 'utf8')).toBe('NEW');
    expect(await exists('o/new.txt')).toBe(false);
  });

  it('refuses a directory as either end, and a parent that is a file', async () => {
    await put('d/file.txt', 'F');
    await put('d/sub/x.txt', 'X');
    expect((await call('move', { from: 'd/sub', to: 'd/sub2' })).body.code).toBe('NOT_A_FILE');
    expect((await call('move', { from: 'd/file.txt', to: 'd/sub' })).body.code).toBe('FILE_EXISTS');
    expect((await call('move', { from: 'd/file.txt', to: 'd/file.txt/inside.txt' })).status).toBe(409);
    expect(await readFile(path.join(agent.workspace, 'd/file.txt'), 'utf8')).toBe('F');
  });

  it('refuses moving out of the workspace, onto a protected name, or from a missing file', async () => {
    await put('p/a.txt', 'A');
    for (const to of [
      '../escaped.txt',
      '/tmp/escaped.txt',
      'p/../../escaped.txt',
      '.env',
      'agent.db-wal',
      'p/.env.production',
      '.upload-0123456789abcdef.part',
    ]) {
      const res = await call('move', { from: 'p/a.txt', to, overwrite: true });
      expect(res.status, to).toBe(403);
      expect(res.body.code, to).toBe('FORBIDDEN_PATH');
    }
    for (const from of ['../outside-victim.txt', '.env', 'agent.db']) expect((await call('move', { from, to: 'stolen.txt' })).status, from).toBe(403);
    expect(await exists('p/a.txt')).toBe(true);
    expect(await exists('stolen.txt')).toBe(false);
    const missing = await call('move', { from: 'p/nothing.txt', to: 'p/b.txt' });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('FILE_NOT_FOUND');
  });

  it('moves a symbolic link itself; its target stays where it is', async () => {
    await put('s/target.txt', 'T');
    await symlink('target.txt', path.join(agent.workspace, 's/link'));
    expect((await call('move', { from: 's/link', to: 's/link2' })).status).toBe(200);
    expect((await lstat(path.join(agent.workspace, 's/link2'))).isSymbolicLink()).toBe(true);
    expect(await readFile(path.join(agent.workspace, 's/target.txt'), 'utf8')).toBe('T');
  });
});
