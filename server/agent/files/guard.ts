/**
 * The workspace path guard: the one place that turns a client- or model-supplied path into a file
 * the agent may touch. Used by the files endpoints and by every agent tool.
 *
 *   const { absolute, relative } = await resolveWorkspacePath(workspace, 'notes/a.md');
 *   const target = await resolveWorkspacePath(workspace, 'out/report.pdf', { forWrite: true });
 *
 * Rules (each is one explicit check below, in this order):
 *   1. the path is a string of at most MAX_PATH_LENGTH characters with no NUL byte   → 400 / 403
 *   2. it is relative: no leading `/` or `\`, no drive letter (`C:`)                  → 403
 *   3. `\` counts as a separator; `.`/`..` are resolved lexically and the result must stay
 *      inside the workspace                                                           → 403
 *   4. no component is a sensitive name (isSensitiveName: `.env`, `.env.*`, `agent.db` and its
 *      `-wal`/`-shm`/`-journal` siblings; any depth, any case)                        → 403
 *   5. symlinks are followed with realpath (for a path that does not exist yet: its deepest
 *      existing ancestor); the real location must be inside the real workspace and must not be
 *      a sensitive name either                                                         → 403
 *      A dangling symlink is refused (403): its target cannot be checked, and writing through it
 *      would create a file wherever it points.
 *   6. a file with more than one hard link must not be one of the protected files at the
 *      workspace root (`agent.db` and siblings, `.env`) under another name                → 403
 *
 * The guard never decodes: the HTTP layer decodes percent-escapes exactly once (express does, for
 * route parameters) and whatever arrives here is taken literally, so `%2e%2e` is a file name.
 * Existence is not checked: a missing file resolves, and the caller answers 404.
 */
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../common/errors.js';
import { AGENT_DB_FILE } from '../store.js';

export const MAX_PATH_LENGTH = 4096;

export interface ResolvedPath {
  /** Real absolute path (symlinks resolved), safe to open. */
  absolute: string;
  /** The same location relative to the real workspace root, `/`-separated; `''` for the root. */
  relative: string;
}

export interface ResolveOptions {
  /**
   * The caller will create or replace the file. Resolution is the same; the option exists so
   * that write-only rules have one place to go (today: none beyond the read rules).
   */
  forWrite?: boolean;
}

const SQLITE_SIBLINGS = ['', '-wal', '-shm', '-journal'];
const SENSITIVE_EXACT = new Set(['.env', ...SQLITE_SIBLINGS.map((suffix) => `${AGENT_DB_FILE}${suffix}`)]);

/** True for names the agent never serves, lists or writes: `.env`, `.env.*`, `agent.db{,-wal,-shm,-journal}`. */
export function isSensitiveName(name: string): boolean {
  const lower = name.toLowerCase();
  return SENSITIVE_EXACT.has(lower) || lower.startsWith('.env.');
}

export const forbiddenPath = (detail = 'Path is outside the workspace or names a protected file') => new AppError(403, 'FORBIDDEN_PATH', detail);

/** `C:`, `c:\`, `\\server\share`, `/abs`: anything that names a location on its own. */
const ABSOLUTE = /^(?:[a-zA-Z]:|[\\/])/;

/**
 * Resolves `relPath` (workspace-relative, already decoded once) against `workspace`; throws
 * AppError 403 `FORBIDDEN_PATH` or 400 `INVALID_PATH` when the rules above refuse it.
 */
export async function resolveWorkspacePath(workspace: string, relPath: string, _opts: ResolveOptions = {}): Promise<ResolvedPath> {
  // 1. shape
  if (typeof relPath !== 'string') throw new AppError(400, 'INVALID_PATH', 'Path must be a string');
  if (relPath.length > MAX_PATH_LENGTH) throw new AppError(400, 'INVALID_PATH', `Path is longer than ${MAX_PATH_LENGTH} characters`);
  if (relPath.includes('\0')) throw forbiddenPath('Path contains a NUL byte');
  // 2. relative only
  if (ABSOLUTE.test(relPath)) throw forbiddenPath('Absolute paths are not allowed');
  // 3. lexical containment (with `\` as a separator, whatever the platform)
  const segments = relPath.split(/[\\/]+/);
  const root = path.resolve(workspace);
  const lexical = path.resolve(root, ...segments);
  const lexicalRel = path.relative(root, lexical);
  if (escapes(lexicalRel)) throw forbiddenPath('Path escapes the workspace');
  // 4. sensitive names, as written
  if (hasSensitiveComponent(lexicalRel)) throw forbiddenPath('Path names a protected file');
  // 5. the real location
  const realRoot = await realpath(root);
  const real = await realLocation(lexical);
  const realRel = path.relative(realRoot, real);
  if (escapes(realRel)) throw forbiddenPath('Path leads outside the workspace');
  if (hasSensitiveComponent(realRel)) throw forbiddenPath('Path leads to a protected file');
  // 6. a hard link is the same file under another name
  if (await isHardLinkToProtected(realRoot, real)) throw forbiddenPath('Path is a hard link to a protected file');
  return { absolute: real, relative: realRel.split(path.sep).join('/') };
}

const ROOT_PROTECTED = ['.env', ...SQLITE_SIBLINGS.map((suffix) => `${AGENT_DB_FILE}${suffix}`)];

async function isHardLinkToProtected(realRoot: string, real: string): Promise<boolean> {
  const stats = await lstat(real).catch(() => undefined);
  if (!stats?.isFile() || stats.nlink < 2) return false;
  for (const name of ROOT_PROTECTED) {
    const protectedStats = await lstat(path.join(realRoot, name)).catch(() => undefined);
    if (protectedStats && protectedStats.ino === stats.ino && protectedStats.dev === stats.dev) return true;
  }
  return false;
}

function escapes(rel: string): boolean {
  return rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel);
}

function hasSensitiveComponent(rel: string): boolean {
  return rel !== '' && rel.split(path.sep).some(isSensitiveName);
}

/** realpath of `p`, or of its deepest existing ancestor with the missing rest appended. */
async function realLocation(p: string): Promise<string> {
  const missing: string[] = [];
  let current = p;
  for (;;) {
    try {
      const real = await realpath(current);
      return missing.length ? path.join(real, ...missing.reverse()) : real;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENAMETOOLONG') throw new AppError(400, 'INVALID_PATH', 'Path component is too long');
      if (code === 'ELOOP') throw forbiddenPath('Path is a symbolic link loop');
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
      // ENOENT from realpath also covers a dangling symlink: refuse it rather than guess.
      if (await isSymlink(current)) throw forbiddenPath('Path is a dangling symbolic link');
      const parent = path.dirname(current);
      if (parent === current) throw error;
      missing.push(path.basename(current));
      current = parent;
    }
  }
}

async function isSymlink(p: string): Promise<boolean> {
  try {
    return (await lstat(p)).isSymbolicLink();
  } catch {
    return false;
  }
}
