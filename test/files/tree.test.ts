import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TreeNode } from '@contracts/agent/files.js';
import { listTree } from '../../server/agent/files/tree.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';

let agent: TestAgent;
const CHAIN = 25;

beforeAll(async () => {
  agent = await startTestAgent();
  const ws = agent.workspace;
  const file = async (rel: string, content = 'x') => {
    await mkdir(path.dirname(path.join(ws, rel)), { recursive: true });
    await writeFile(path.join(ws, rel), content);
  };
  // wide: 300 files and 40 directories in one directory
  await Promise.all(Array.from({ length: 300 }, (_, i) => file(`wide/f${String(i).padStart(3, '0')}.txt`, 'y'.repeat(i))));
  await Promise.all(Array.from({ length: 40 }, (_, i) => file(`wide/d${String(i).padStart(2, '0')}/inner.txt`)));
  // deep: a chain of CHAIN directories
  await file(`deep/${Array.from({ length: CHAIN }, (_, i) => `l${i + 1}`).join('/')}/leaf.txt`);
  // ordering
  for (const rel of ['order/B.txt', 'order/a.txt', 'order/Z/x', 'order/b/x', 'order/_u/x', 'order/10.txt', 'order/9.txt']) await file(rel);
  // exclusions, at the root and deeper, in any case
  for (const rel of [
    '.git/config',
    'node_modules/pkg/index.js',
    '__pycache__/m.pyc',
    'sub/Node_Modules/x.js',
    'sub/deeper/.git/HEAD',
    '.env',
    '.env.local',
    'sub/.ENV',
    'sub/deeper/.Env.Production',
    'sub/agent.db',
    'sub/AGENT.DB-journal',
    'agent.db-wal',
    '.upload-0123456789abcdef.part',
  ]) {
    await file(rel, 'SECRET');
  }
  // near misses that stay visible
  for (const rel of ['sub/.gitignore', 'sub/.environment', 'sub/env.txt', 'sub/agent.dbx', 'sub/my.env']) await file(rel);
  // symlinks
  await mkdir(path.join(ws, 'links'));
  await symlink('../wide/f010.txt', path.join(ws, 'links/in-file'));
  await symlink('../wide', path.join(ws, 'links/in-dir'));
  await symlink('/etc', path.join(ws, 'links/out-dir'));
  await symlink('/etc/hostname', path.join(ws, 'links/out-file'));
  await symlink('../.env', path.join(ws, 'links/to-env'));
  await symlink('/nonexistent', path.join(ws, 'links/dangling'));
  await symlink('.', path.join(ws, 'links/self'));
});
afterAll(() => agent.stop());

async function tree(query = ''): Promise<{ status: number; body: { tree: TreeNode[]; truncated?: boolean } & Record<string, unknown> }> {
  const res = await fetch(`${agent.url}/workspace/tree${query}`, { headers: agent.auth });
  return { status: res.status, body: (await res.json()) as never };
}

const child = (nodes: TreeNode[] | undefined, name: string) => nodes?.find((n) => n.name === name);
const names = (nodes: TreeNode[] | undefined) => (nodes ?? []).map((n) => n.name);
function walk(nodes: TreeNode[], visit: (n: TreeNode) => void) {
  for (const n of nodes) {
    visit(n);
    if (n.children) walk(n.children, visit);
  }
}
function depthOf(nodes: TreeNode[]): number {
  return nodes.length === 0 ? 0 : 1 + Math.max(...nodes.map((n) => depthOf(n.children ?? [])));
}

describe('GET /workspace/tree', () => {
  it('lists directories before files, each sorted by name, with the documented fields', async () => {
    const { status, body } = await tree();
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(['tree']);
    expect(names(body.tree)).toEqual(['deep', 'links', 'order', 'sub', 'wide']);
    expect(names(child(body.tree, 'order')?.children)).toEqual(['Z', '_u', 'b', '10.txt', '9.txt', 'B.txt', 'a.txt']);
    const wide = child(body.tree, 'wide')?.children ?? [];
    expect(wide).toHaveLength(340);
    expect(names(wide.slice(0, 40))).toEqual(Array.from({ length: 40 }, (_, i) => `d${String(i).padStart(2, '0')}`));
    expect(names(wide.slice(40))).toEqual(Array.from({ length: 300 }, (_, i) => `f${String(i).padStart(3, '0')}.txt`));
    expect(wide[40 + 123]).toEqual({ name: 'f123.txt', path: 'wide/f123.txt', type: 'file', size: 123 });
    expect(wide[0]).toEqual({
      name: 'd00',
      path: 'wide/d00',
      type: 'dir',
      children: [{ name: 'inner.txt', path: 'wide/d00/inner.txt', type: 'file', size: 1 }],
    });
    walk(body.tree, (n) => {
      expect(n.type === 'dir' ? 'children' in n && !('size' in n) : 'size' in n && !('children' in n)).toBe(true);
      expect(Object.keys(n).sort()).toEqual(n.type === 'dir' ? ['children', 'name', 'path', 'type'] : ['name', 'path', 'size', 'type']);
    });
  });

  it('hides .git, node_modules, __pycache__, .env*, agent.db* and uploads in progress at every depth and case', async () => {
    const { body } = await tree('?max_depth=20');
    const all: string[] = [];
    walk(body.tree, (n) => all.push(n.path));
    for (const p of all) {
      expect(p).not.toMatch(/(^|\/)(\.git|node_modules|__pycache__|\.env(\..*)?|agent\.db(-wal|-shm|-journal)?|\.upload-[0-9a-f]+\.part)$/i);
    }
    expect(JSON.stringify(body)).not.toContain('SECRET');
    expect(names(child(body.tree, 'sub')?.children)).toEqual(['deeper', '.environment', '.gitignore', 'agent.dbx', 'env.txt', 'my.env']);
    expect(child(child(body.tree, 'sub')?.children, 'deeper')?.children).toEqual([]);
  });

  it('shows symlinks without following them', async () => {
    const links = child((await tree()).body.tree, 'links')?.children;
    expect(links).toEqual([
      { name: 'in-dir', path: 'links/in-dir', type: 'dir', children: [] },
      { name: 'self', path: 'links/self', type: 'dir', children: [] },
      { name: 'dangling', path: 'links/dangling', type: 'file', size: 0 },
      { name: 'in-file', path: 'links/in-file', type: 'file', size: 10 },
      { name: 'out-dir', path: 'links/out-dir', type: 'file', size: 0 },
      { name: 'out-file', path: 'links/out-file', type: 'file', size: 0 },
      { name: 'to-env', path: 'links/to-env', type: 'file', size: 0 },
    ]);
  });

  it('stops at max_depth (default 5): directories at the last level have empty children', async () => {
    const chainDepth = (nodes: TreeNode[]) => depthOf(child(nodes, 'deep') ? [child(nodes, 'deep') as TreeNode] : []);
    expect(chainDepth((await tree()).body.tree)).toBe(5);
    const one = (await tree('?max_depth=1')).body.tree;
    expect(one.every((n) => n.type === 'file' || n.children?.length === 0)).toBe(true);
    expect(chainDepth((await tree('?max_depth=3')).body.tree)).toBe(3);
    expect(chainDepth((await tree('?max_depth=20')).body.tree)).toBe(20);
  });

  it('clamps max_depth above 20', async () => {
    const clamped = await tree('?max_depth=1000');
    expect(clamped.status).toBe(200);
    expect(clamped.body).toEqual((await tree('?max_depth=20')).body);
  });

  it.each(['0', '-1', '1.5', 'abc', '', 'NaN', '1&max_depth=2'])('refuses max_depth=%s with 400', async (value) => {
    const { status, body } = await tree(`?max_depth=${value}`);
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: 'VALIDATION_FAILED', issues: [{ path: 'max_depth' }] });
  });

  it('answers 401 without the secret', async () => {
    expect((await fetch(`${agent.url}/workspace/tree`)).status).toBe(401);
  });
});

describe('tree node bound', () => {
  it('keeps the shallowest entries, empties the directories it did not reach, and says truncated', async () => {
    const full = await listTree(agent.workspace, 20);
    let total = 0;
    walk(full.tree, () => total++);
    expect(full.truncated).toBeUndefined();

    const bounded = await listTree(agent.workspace, 20, 100);
    let count = 0;
    walk(bounded.tree, () => count++);
    expect(bounded.truncated).toBe(true);
    expect(count).toBe(100);
    expect(names(bounded.tree)).toEqual(['deep', 'links', 'order', 'sub', 'wide']); // all of level 1
    expect(total).toBeGreaterThan(100);
  });
});
