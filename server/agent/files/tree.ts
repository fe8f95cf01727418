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
import { lstatSync, type Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { isSensitiveName } from './guard.js';
import type { TreeNode, TreeOutput } from '@contracts/agent/files.js';
import { UPLOAD_TEMP_NAME } from './upload.js';

export const MAX_TREE_NODES = 20_000;
const HIDDEN = new Set(['.git', '__pycache__', 'node_modules']);
/** Directory reads / stats in flight at once (the libuv pool has 4 threads; more only queues). */
const CONCURRENCY = 64;
/** Synchronous stats between two yields to the event loop (≈ 1–2 ms of work). */
const STAT_SLICE = 500;

export function isHiddenFromTree(name: string): boolean {
  return HIDDEN.has(name.toLowerCase()) || isSensitiveName(name) || UPLOAD_TEMP_NAME.test(name);
}

interface PendingDir {
  absolute: string;
  /** Workspace-relative, `/`-separated; `''` for the root. */
  rel: string;
  node: { children: TreeNode[] };
}

export async function listTree(workspace: string, maxDepth: number, maxNodes = MAX_TREE_NODES): Promise<TreeOutput> {
  const root = await realpath(workspace);
  const top: TreeNode[] = [];
  let level: PendingDir[] = [{ absolute: root, rel: '', node: { children: top } }];
  let budget = maxNodes;
  let truncated = false;
  for (let depth = 1; depth <= maxDepth && level.length > 0; depth++) {
    const listings = await mapLimited(level, (dir) => readdir(dir.absolute, { withFileTypes: true }).catch(() => [] as Dirent[]));
    // The whole level at once: one batch of stats instead of one per directory.
    const work: Array<{ dir: PendingDir; entry: Dirent }> = [];
    for (const [i, dir] of level.entries()) {
      const entries = (listings[i] ?? []).filter((entry) => !isHiddenFromTree(entry.name)).sort(byName);
      if (entries.length > budget) {
        truncated = true;
        entries.splice(budget);
      }
      budget -= entries.length;
      for (const entry of entries) work.push({ dir, entry });
    }
    const built = await buildNodes(root, work);
    const next: PendingDir[] = [];
    const byDir = new Map<PendingDir, Built[]>();
    for (const [i, { dir }] of work.entries()) {
      const list = byDir.get(dir) ?? [];
      list.push(built[i] as Built);
      byDir.set(dir, list);
    }
    for (const [dir, nodes] of byDir) {
      nodes.sort(byTypeThenName);
      for (const n of nodes) {
        dir.node.children.push(n.node);
        if (n.descend && depth < maxDepth) next.push({ absolute: n.descend, rel: n.node.path, node: n.node as { children: TreeNode[] } });
      }
    }
    level = next;
  }
  return truncated ? { tree: top, truncated: true } : { tree: top };
}

/**
 * Nodes for one level. Plain files and directories need at most one stat each, done
 * synchronously (a few µs, where a thread-pool round trip costs ten times that) in slices of
 * STAT_SLICE with a yield between slices, so that a huge tree never holds the event loop for long.
 * Symlinks need realpath + stat and go through the async path.
 */
async function buildNodes(root: string, work: Array<{ dir: PendingDir; entry: Dirent }>): Promise<Built[]> {
  const out = new Array<Built>(work.length);
  const links: number[] = [];
  for (let i = 0; i < work.length; i++) {
    if (i > 0 && i % STAT_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const { dir, entry } = work[i] as { dir: PendingDir; entry: Dirent };
    const absolute = `${dir.absolute}${path.sep}${entry.name}`;
    const rel = dir.rel === '' ? entry.name : `${dir.rel}/${entry.name}`;
    if (entry.isDirectory()) out[i] = { node: { name: entry.name, path: rel, type: 'dir', children: [] }, descend: absolute };
    else if (entry.isSymbolicLink()) links.push(i);
    else {
      // lstat, not stat: also settles entries whose type the filesystem did not report (DT_UNKNOWN).
      const stats = lstatSync(absolute, { throwIfNoEntry: false });
      if (stats?.isDirectory()) out[i] = { node: { name: entry.name, path: rel, type: 'dir', children: [] }, descend: absolute };
      else if (stats?.isSymbolicLink()) links.push(i);
      else out[i] = { node: { name: entry.name, path: rel, type: 'file', size: stats?.size ?? 0 } };
    }
  }
  await mapLimited(links, async (i) => {
    const { dir, entry } = work[i] as { dir: PendingDir; entry: Dirent };
    out[i] = { node: await symlinkNode(root, path.join(dir.absolute, entry.name), entry.name, dir.rel === '' ? entry.name : `${dir.rel}/${entry.name}`) };
  });
  return out;
}

interface Built {
  node: TreeNode;
  /** Absolute path to list next, for real (not symlinked) directories. */
  descend?: string;
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
