/**
 * The memory files over the agent's REST API (`GET /memory`, `PATCH /memory/{name}`,
 * `DELETE /memory/{name}`): read, replace, delete; and the refusals: any other name (a path, a
 * traversal, `.env`), a body too large, a symbolic link out of the workspace, a full quota.
 */
import { mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestAgent, tempDir, type TestAgent } from '../support/servers.js';

let agent: TestAgent;
beforeAll(async () => {
  agent = await startTestAgent({ AGENT_WORKSPACE_QUOTA_MB: '1' });
});
afterAll(() => agent.stop());

const call = (method: string, route: string, body?: unknown) =>
  fetch(`${agent.url}${route}`, {
    method,
    headers: { ...agent.auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
type Files = { files: Array<{ name: string; exists: boolean; content: string; size: number; truncated: boolean; updated_at: string | null }> };

describe('memory files', () => {
  it('reads both files, absent ones as empty', async () => {
    await writeFile(path.join(agent.workspace, 'USER.md'), 'Name: Ada\n');
    const res = await call('GET', '/memory');
    expect(res.status).toBe(200);
    const { files } = (await res.json()) as Files;
    expect(files.map((f) => [f.name, f.exists, f.content])).toEqual([
      ['MEMORY.md', false, ''],
      ['USER.md', true, 'Name: Ada\n'],
    ]);
    expect(files[1]!.size).toBe(10);
    expect(Number.isNaN(Date.parse(files[1]!.updated_at ?? ''))).toBe(false);
  });

  it('replaces and deletes a file', async () => {
    const put = await call('PATCH', '/memory/MEMORY.md', { content: '- likes tea\n' });
    expect(put.status).toBe(200);
    expect(await put.json()).toMatchObject({ name: 'MEMORY.md', exists: true, content: '- likes tea\n', size: 12 });
    expect(await readFile(path.join(agent.workspace, 'MEMORY.md'), 'utf8')).toBe('- likes tea\n');
    expect((await call('PATCH', '/memory/MEMORY.md', { content: '- likes coffee\n' })).status).toBe(200);
    expect(await readFile(path.join(agent.workspace, 'MEMORY.md'), 'utf8')).toBe('- likes coffee\n');

    expect((await call('DELETE', '/memory/MEMORY.md')).status).toBe(204);
    const again = await call('DELETE', '/memory/MEMORY.md');
    expect(again.status).toBe(404);
    expect(await again.json()).toMatchObject({ code: 'FILE_NOT_FOUND' });
  });

  it('writes, two deletes and reads racing each other answer 200, 204 or 404, never a 500', async () => {
    const statuses = new Set<number>();
    for (let round = 0; round < 30; round++) {
      const answers = await Promise.all([
        call('PATCH', '/memory/USER.md', { content: `round ${round}` }),
        call('DELETE', '/memory/USER.md'),
        call('DELETE', '/memory/USER.md'),
        call('PATCH', '/memory/USER.md', { content: `round ${round} again` }),
        call('GET', '/memory'),
      ]);
      for (const answer of answers) statuses.add(answer.status);
    }
    expect([...statuses].filter((status) => ![200, 204, 404].includes(status))).toEqual([]);
    await call('DELETE', '/memory/USER.md');
  });

  it('a directory the model made under the name is 400 NOT_A_FILE to a write, and stays', async () => {
    await mkdir(path.join(agent.workspace, 'USER.md', 'inside'), { recursive: true });
    const res = await call('PATCH', '/memory/USER.md', { content: 'x' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'NOT_A_FILE' });
    expect((await stat(path.join(agent.workspace, 'USER.md', 'inside'))).isDirectory()).toBe(true);
    await rm(path.join(agent.workspace, 'USER.md'), { recursive: true });
  });

  it.each(['..%2F.env', '.env', 'notes.md', 'memory.md', 'MEMORY.md%00', 'agent.db'])('refuses the name %s (400)', async (name) => {
    const res = await call('PATCH', `/memory/${name}`, { content: 'x' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect((await call('DELETE', `/memory/${name}`)).status).toBe(400);
  });

  it('refuses content over 100,000 characters and a missing secret', async () => {
    expect((await call('PATCH', '/memory/USER.md', { content: 'x'.repeat(100_001) })).status).toBe(400);
    expect((await fetch(`${agent.url}/memory`)).status).toBe(401);
  });

  it('never follows a symbolic link out of the workspace', async () => {
    const outside = await tempDir('memory-outside');
    await writeFile(path.join(outside, 'secret.txt'), 'outside secret');
    await mkdir(agent.workspace, { recursive: true });
    await symlink(path.join(outside, 'secret.txt'), path.join(agent.workspace, 'MEMORY.md'));
    // Shown as no file (its target is not the workspace's to show); the other file still reads.
    const read = await call('GET', '/memory');
    expect(read.status).toBe(200);
    const { files } = (await read.json()) as Files;
    expect(files[0]).toMatchObject({ name: 'MEMORY.md', exists: false, content: '' });
    expect(JSON.stringify(files)).not.toContain('outside secret');
    const write = await call('PATCH', '/memory/MEMORY.md', { content: 'overwritten' });
    expect(write.status).toBe(403);
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('outside secret');
    // Deleting removes the link itself, never its target.
    expect((await call('DELETE', '/memory/MEMORY.md')).status).toBe(204);
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('outside secret');
  });

  it('holds writes to the workspace quota (507)', async () => {
    // A workspace already near its 1 MB quota when the agent starts.
    const workspace = await tempDir('memory-full');
    await writeFile(path.join(workspace, 'big.bin'), Buffer.alloc(1024 * 1024 - 50_000));
    const full = await startTestAgent({ AGENT_WORKSPACE_QUOTA_MB: '1', AGENT_WORKSPACE: workspace });
    try {
      const write = (content: string) =>
        fetch(`${full.url}/memory/MEMORY.md`, {
          method: 'PATCH',
          headers: { ...full.auth, 'content-type': 'application/json' },
          body: JSON.stringify({ content }),
        });
      expect((await write('x'.repeat(10_000))).status).toBe(200);
      const refused = await write('y'.repeat(90_000));
      expect(refused.status).toBe(507);
      expect(await refused.json()).toMatchObject({ code: 'QUOTA_EXCEEDED' });
      expect(await readFile(path.join(workspace, 'MEMORY.md'), 'utf8')).toBe('x'.repeat(10_000));
    } finally {
      await full.stop();
    }
  });
});
