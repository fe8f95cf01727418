/**
 * The workspace boundary for the agent's tools. Stand-in for the canonical guard of the files
 * issue (server/agent/files/guard.ts): every tool imports it from here only, so swapping the
 * import is a one-line change.
 *
 * Refused with 403 PATH_FORBIDDEN: absolute paths, NUL bytes, anything that resolves outside
 * the workspace (after the realpath of the nearest existing ancestor, so symlinks cannot lead
 * out), and sensitive names at any depth (`.env`, `.env.*`, `agent.db` and its -wal/-shm/-journal
 * siblings), case-insensitive.
 */
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../common/errors.js';

const SENSITIVE = [/^\.env(\..*)?$/i, /^agent\.db(-wal|-shm|-journal)?$/i];

export const isSensitiveName = (name: string) => SENSITIVE.some((re) => re.test(name));

const forbidden = (detail: string) => new AppError(403, 'PATH_FORBIDDEN', detail);

function inside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}

/** The real absolute path of `relPath` inside `workspace`, or AppError 403 PATH_FORBIDDEN. */
export async function resolveWorkspacePath(workspace: string, relPath: string, opts: { forWrite?: boolean } = {}): Promise<string> {
  if (typeof relPath !== 'string') throw forbidden('Path must be a string');
  if (relPath.includes('\0')) throw forbidden('Path contains a NUL byte');
  if (path.isAbsolute(relPath) || /^[a-zA-Z]:[\\/]/.test(relPath) || relPath.startsWith('\\')) {
    throw forbidden('Absolute paths are not allowed; use a workspace-relative path');
  }
  const root = await realpath(workspace);
  const wanted = path.resolve(root, relPath || '.');
  if (!inside(root, wanted)) throw forbidden('Path escapes the workspace');
  const relSegments = path.relative(root, wanted).split(path.sep).filter(Boolean);
  if (relSegments.some(isSensitiveName)) throw forbidden('Path names a protected file');

  // Resolve symlinks: realpath of the nearest existing ancestor, then the missing tail.
  let existing = wanted;
  const tail: string[] = [];
  while (!(await exists(existing))) {
    tail.unshift(path.basename(existing));
    existing = path.dirname(existing);
  }
  const real = path.join(await realpath(existing), ...tail);
  if (!inside(root, real)) throw forbidden('Path escapes the workspace');
  if (path.relative(root, real).split(path.sep).filter(Boolean).some(isSensitiveName)) throw forbidden('Path names a protected file');
  if (opts.forWrite && real === root) throw forbidden('Cannot write to the workspace root');
  return real;
}

/** Workspace-relative, forward slashes (what events and the model see). */
export async function workspaceRelative(workspace: string, absolute: string): Promise<string> {
  return path.relative(await realpath(workspace), absolute).split(path.sep).join('/') || '.';
}
