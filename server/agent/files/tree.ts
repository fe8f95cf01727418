/**
 * The workspace tree (`GET /workspace/tree`, `files.tree`).
 *
 * - Directories before files, each group sorted by name (UTF-16 code units: stable, locale-free).
 * - Hidden: `.git`, `__pycache__`, `node_modules`, every sensitive name of the guard (`.env`,
 *   `.env.*`, `agent.db` and its siblings) and uploads in progress; any case.
 * - `max_depth` levels below the root; a directory at the last level has `children: []`.
 * - Symlinks are shown, never followed: a link to a directory inside the workspace is a `dir`
 *   with `children: []`, a link to a file inside is a `file` with the target's size, a link that
 *   leads outside, to a protected file, or nowhere is a `file` of size 0 (the guard refuses it).
 * - At most MAX_TREE_NODES nodes. The walk is breadth-first, so the bound drops the deepest
 *   entries first; directories it did not reach have `children: []` and the answer carries
 *   `truncated: true`.
 */
import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { isSensitiveName } from './guard.js';
import type { TreeNode, TreeOutput } from './schemas.js';
import { UPLOAD_TEMP_NAME } from './upload.js';

export const MAX_TREE_NODES = 20_000;
const HIDDEN = new Set(['.git', '__pycache__', 'node_modules']);
/** Directory reads / stats in flight at once (the libuv pool has 4 threads; more only queues). */
const CONCURRENCY = 64;

export function isHiddenFromTree(name: string): boolean {
  return HIDDEN.has(name.toLowerCase()) || isSensitiveName(name) || UPLOAD_TEMP_NAME.test(name);
}

interface PendingDir {
  absolute: string;
  node: { children: TreeNode[] };
}

export async function listTree(workspace: string, maxDepth: number, maxNodes = MAX_TREE_NODES): Promise<TreeOutput> {
  const root = await realpath(workspace);
  const top: TreeNode[] = [];
  let level: PendingDir[] = [{ absolute: root, node: { children: top } }];
  let budget = maxNodes;
  let truncated = false;
  for (let depth = 1; depth <= maxDepth && level.length > 0; depth++) {
    const listings = await mapLimited(level, (dir) => readdir(dir.absolute, { withFileTypes: true }).catch(() => [] as Dirent[]));
    const next: PendingDir[] = [];
    for (const [i, dir] of level.entries()) {
      const entries = (listings[i] ?? []).filter((entry) => !isHiddenFromTree(entry.name)).sort(byName);
      if (entries.length > budget) {
        truncated = true;
        entries.splice(budget);
      }
      budget -= entries.length;
      const nodes = await mapLimited(entries, (entry) => nodeFor(root, dir.absolute, entry));
      nodes.sort(byTypeThenName);
      dir.node.children.push(...nodes.map((n) => n.node));
      if (depth < maxDepth) for (const n of nodes) if (n.descend) next.push({ absolute: n.descend, node: n.node as { children: TreeNode[] } });
    }
    level = next;
  }
  return truncated ? { tree: top, truncated: true } : { tree: top };
}

interface Built {
  node: TreeNode;
  /** Absolute path to list next, for real (not symlinked) directories. */
  descend?: string;
}

async function nodeFor(root: string, parent: string, entry: Dirent): Promise<Built> {
  const absolute = path.join(parent, entry.name);
  const rel = path.relative(root, absolute).split(path.sep).join('/');
  if (entry.isDirectory()) return { node: { name: entry.name, path: rel, type: 'dir', children: [] }, descend: absolute };
  if (entry.isSymbolicLink()) return { node: await symlinkNode(root, absolute, entry.name, rel) };
  const size = await stat(absolute).then((s) => s.size, () => 0);
  return { node: { name: entry.name, path: rel, type: 'file', size } };
}

async function symlinkNode(root: string, absolute: string, name: string, rel: string): Promise<TreeNode> {
  try {
    const target = await realpath(absolute);
    const targetRel = path.relative(root, target);
    const inside = targetRel !== '..' && !targetRel.startsWith(`..${path.sep}`) && !path.isAbsolute(targetRel);
    if (inside && !targetRel.split(path.sep).some(isSensitiveName)) {
      const stats = await stat(target);
      if (stats.isDirectory()) return { name, path: rel, type: 'dir', children: [] };
      return { name, path: rel, type: 'file', size: stats.size };
    }
  } catch {
    // dangling or looping: shown as an empty file
  }
  return { name, path: rel, type: 'file', size: 0 };
}

function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function byTypeThenName(a: Built, b: Built): number {
  if (a.node.type !== b.node.type) return a.node.type === 'dir' ? -1 : 1;
  return byName(a.node, b.node);
}

async function mapLimited<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let index = 0;
  const worker = async () => {
    while (index < items.length) {
      const i = index++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
  return out;
}
