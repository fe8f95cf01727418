/**
 * The memory files (`MEMORY.md`, `USER.md`) as the Memory page works with them: read and
 * replace and delete. Only these two names (an enum, never a path from the caller), each through the
 * workspace path guard, so a symbolic link the model left under that name cannot lead outside the
 * workspace; a write reserves its bytes from the workspace quota as the file tools do.
 */
import { lstat, open, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { MEMORY_FILES, MEMORY_MAX_CHARS, type MemoryFile, type MemoryFileName } from '@contracts/agent/memory.js';
import { AppError, badRequest, notFound } from '../../common/errors.js';
import { resolveWorkspacePath } from '../files/guard.js';
import type { WorkspaceQuota } from '../files/quota.js';

/** Bytes read of a file at most: enough for MEMORY_MAX_CHARS characters of any UTF-8. */
const READ_MAX_BYTES = MEMORY_MAX_CHARS * 4;

async function readOne(workspace: string, name: MemoryFileName): Promise<MemoryFile> {
  const absent: MemoryFile = { name, exists: false, content: '', size: 0, truncated: false, updated_at: null };
  // A link out of the workspace reads as no file (the guard refuses it); deleting it removes the link.
  const resolved = await resolveWorkspacePath(workspace, name).catch((error: unknown) => {
    if (error instanceof AppError && error.status === 403) return undefined;
    throw error;
  });
  const absolute = resolved?.absolute;
  const info = absolute ? await stat(absolute).catch(() => undefined) : undefined;
  if (!absolute || !info?.isFile()) return absent;
  // Deleted between the two (the page's delete, or the model's) reads as no file too.
  const handle = await open(absolute, 'r').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (!handle) return absent;
  try {
    const buffer = Buffer.alloc(Math.min(info.size, READ_MAX_BYTES));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const text = buffer.subarray(0, bytesRead).toString('utf8');
    const truncated = info.size > bytesRead || text.length > MEMORY_MAX_CHARS;
    return { name, exists: true, content: text.slice(0, MEMORY_MAX_CHARS), size: info.size, truncated, updated_at: info.mtime.toISOString() };
  } finally {
    await handle.close();
  }
}

export function readMemoryFiles(workspace: string): Promise<MemoryFile[]> {
  return Promise.all(MEMORY_FILES.map((name) => readOne(workspace, name)));
}

/** Replaces the file's content (creating it), written beside it and renamed over it: a reader never sees half. */
export async function writeMemoryFile(workspace: string, quota: WorkspaceQuota, name: MemoryFileName, content: string): Promise<MemoryFile> {
  const { absolute } = await resolveWorkspacePath(workspace, name, { forWrite: true });
  const reservation = await quota.reserve(Buffer.byteLength(content));
  const temp = path.join(path.dirname(absolute), `.${name}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(temp, content, { encoding: 'utf8', flag: 'wx' });
    await rename(temp, absolute).catch((error: NodeJS.ErrnoException) => {
      // The model may have made a directory of that name.
      if (error.code === 'EISDIR' || error.code === 'ENOTEMPTY' || error.code === 'EEXIST') throw badRequest(`${name} is a directory`, 'NOT_A_FILE');
      throw error;
    });
  } finally {
    await unlink(temp).catch(() => undefined);
    reservation.commit();
  }
  return readOne(workspace, name);
}

/**
 * Removes the file, or a symbolic link of that name itself (never its target, wherever it
 * points: a link out of the workspace is then gone, which the path guard would not let the
 * workspace's own delete do).
 */
export async function deleteMemoryFile(workspace: string, quota: WorkspaceQuota, name: MemoryFileName): Promise<void> {
  const root = await resolveWorkspacePath(workspace, '');
  // `name` is one of two plain names: joined to the real root it stays a direct child of it.
  const file = path.join(root.absolute, name);
  const info = await lstat(file).catch(() => undefined);
  if (!info) throw notFound(`There is no ${name}`, 'FILE_NOT_FOUND');
  if (info.isDirectory()) throw badRequest(`${name} is a directory`, 'NOT_A_FILE');
  await quota.untracked(() =>
    unlink(file).catch((error: NodeJS.ErrnoException) => {
      // Another delete (the page's, the model's) got there between the look and the unlink.
      if (error.code === 'ENOENT') throw notFound(`There is no ${name}`, 'FILE_NOT_FOUND');
      throw error;
    }),
  );
}
