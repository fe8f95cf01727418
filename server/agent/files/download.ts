/**
 * Reading workspace files: `statWorkspaceFile` (what `GET /files/{path}` needs for its headers)
 * and `readWorkspaceFile` (the bytes of an inclusive range, streamed in chunks, never the whole
 * file in memory). Both go through the path guard.
 */
import { constants, type Stats } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import { contentType } from 'mime-types';
import { AppError, conflict, notFound } from '../../common/errors.js';
import { resolveWorkspacePath } from './guard.js';
import type { FileInfo } from '@contracts/agent/files.js';

const CHUNK_BYTES = 256 * 1024;

const fileNotFound = () => notFound('No such file in the workspace', 'FILE_NOT_FOUND');

/** Strong ETag from inode, size and mtime (ns precision where the filesystem has it). */
export function etagOf(stats: Stats): string {
  return `"${stats.ino.toString(36)}-${stats.size.toString(36)}-${Math.round(stats.mtimeMs * 1000).toString(36)}"`;
}

function contentTypeOf(name: string): string {
  return contentType(path.extname(name)) || 'application/octet-stream';
}

async function statRegular(absolute: string): Promise<Stats> {
  let stats: Stats;
  try {
    stats = await stat(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw fileNotFound();
    throw error;
  }
  // Directories (and sockets, fifos, devices) are not files: 404, as for a missing file.
  if (!stats.isFile()) throw fileNotFound();
  return stats;
}

export async function statWorkspaceFile(workspace: string, relPath: string): Promise<FileInfo> {
  const resolved = await resolveWorkspacePath(workspace, relPath);
  const stats = await statRegular(resolved.absolute);
  const name = path.basename(resolved.absolute);
  return {
    path: resolved.relative,
    name,
    size: stats.size,
    content_type: contentTypeOf(name),
    modified: stats.mtime.toISOString(),
    etag: etagOf(stats),
  };
}

export interface ReadRequest {
  path: string;
  /** First byte, default 0. */
  start?: number;
  /** Last byte (inclusive), default the last byte of the file; clamped to it. */
  end?: number;
  /** When given, the file must still be the one this ETag describes (409 `FILE_CHANGED` otherwise). */
  etag?: string;
}

/**
 * Checks the request now (guard, existence, ETag) and returns the bytes as a lazy async
 * iterable: the file is opened on the first read and closed when the iteration ends or is
 * abandoned (`return()`), so a caller that never reads holds no file descriptor.
 */
export async function readWorkspaceFile(workspace: string, request: ReadRequest): Promise<AsyncIterable<Uint8Array>> {
  const resolved = await resolveWorkspacePath(workspace, request.path);
  const stats = await statRegular(resolved.absolute);
  if (request.etag !== undefined && request.etag !== etagOf(stats)) throw fileChanged();
  const start = request.start ?? 0;
  const last = Math.min(request.end ?? stats.size - 1, stats.size - 1);
  if (start > last && !(start === 0 && stats.size === 0)) {
    throw new AppError(416, 'RANGE_NOT_SATISFIABLE', `Range starts beyond the end of the file (${stats.size} bytes)`);
  }
  const expected = etagOf(stats);
  return chunks(resolved.absolute, start, last, expected);
}

const fileChanged = () => conflict('The file changed while it was being read', 'FILE_CHANGED');

async function* chunks(absolute: string, start: number, last: number, expectedEtag: string): AsyncGenerator<Uint8Array> {
  // O_NOFOLLOW: the guard resolved every symlink; refuse one swapped in since.
  const handle = await open(absolute, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    if (etagOf(await handle.stat()) !== expectedEtag) throw fileChanged();
    let position = start;
    while (position <= last) {
      const buffer = new Uint8Array(Math.min(CHUNK_BYTES, last - position + 1));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) throw fileChanged(); // truncated under us: never pad or lie about length
      position += bytesRead;
      // A plain Uint8Array (not a Buffer): superjson can carry it to tRPC clients.
      yield bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
    }
  } finally {
    await handle.close();
  }
}
