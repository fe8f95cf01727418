/**
 * Deleting and renaming (moving) workspace files: `POST /files/delete`, `POST /files/move`
 * (docs/api.md, "Workspace files"). Both take workspace-relative paths through the path guard,
 * like every other file operation, so nothing outside the workspace or protected in it
 * (`.env`, `agent.db`) is ever named; there is no user or tenant in the input: each agent owns
 * one workspace, and the account service reaches only the caller's own agent.
 *
 * - Files only: a directory is refused (400 NOT_A_FILE), and so is the workspace root.
 * - A symbolic link is removed or renamed itself, never its target.
 * - A move never replaces an existing file unless asked (`overwrite: true`); without it the new
 *   name is taken with link(), which fails atomically when the name exists (409 FILE_EXISTS), so a
 *   file written meanwhile under that name is never lost. Missing parent directories of the new
 *   name are created.
 * - The quota walks the tree again after either (what was freed is measured, not guessed).
 */
import type { Stats } from 'node:fs';
import { link, lstat, mkdir, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { FileDeleted, FileMoved, FileMoveInput } from '@contracts/agent/files.js';
import { AppError, badRequest, conflict, notFound } from '../../common/errors.js';
import { resolveWorkspacePath } from './guard.js';
import type { WorkspaceQuota } from './quota.js';
import { UPLOAD_TEMP_NAME } from './upload.js';

const fileNotFound = () => notFound('No such file in the workspace', 'FILE_NOT_FOUND');

/**
 * The path as the guard accepted it, without following a symbolic link at its end: the parent's
 * real location plus the last name. Removing or renaming that touches the link, not its target.
 */
async function ownLocation(workspace: string, relPath: string): Promise<{ absolute: string; relative: string; stats: Stats }> {
  const resolved = await resolveWorkspacePath(workspace, relPath, { forWrite: true });
  if (resolved.relative === '') throw badRequest('The workspace root is not a file', 'NOT_A_FILE');
  const name = path.basename(relPath.replace(/[\\/]+$/, ''));
  if (name === '.' || name === '..' || name === '') throw badRequest('The path names a directory, not a file', 'NOT_A_FILE');
  // The parent resolved by the guard too: its real location is inside the workspace.
  const parentRel = path.posix.dirname(relPath.replace(/\\/g, '/'));
  const parent = await resolveWorkspacePath(workspace, parentRel === '.' ? '' : parentRel);
  const absolute = path.join(parent.absolute, name);
  let stats: Stats;
  try {
    stats = await lstat(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw fileNotFound();
    throw error;
  }
  if (stats.isDirectory()) throw badRequest('The path names a directory, not a file', 'NOT_A_FILE');
  // An upload in progress is the uploader's, not a file of the workspace (the tree hides it too).
  if (UPLOAD_TEMP_NAME.test(name)) throw fileNotFound();
  return { absolute, relative: parent.relative ? `${parent.relative}/${name}` : name, stats };
}

export async function deleteWorkspaceFile(workspace: string, relPath: string, quota?: WorkspaceQuota): Promise<FileDeleted> {
  const target = await ownLocation(workspace, relPath);
  const remove = async () => {
    try {
      await unlink(target.absolute);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw fileNotFound();
      throw error;
    }
  };
  if (quota) await quota.untracked(remove);
  else await remove();
  return { path: target.relative, deleted: true };
}

export async function moveWorkspaceFile(workspace: string, input: FileMoveInput, quota?: WorkspaceQuota): Promise<FileMoved> {
  const from = await ownLocation(workspace, input.from);
  // The new name: through the guard (containment, protected names), its parent made if missing.
  const to = await resolveWorkspacePath(workspace, input.to, { forWrite: true });
  if (to.relative === '') throw badRequest('The workspace root is not a file', 'NOT_A_FILE');
  const name = path.basename(to.absolute);
  if (UPLOAD_TEMP_NAME.test(name)) throw new AppError(403, 'FORBIDDEN_PATH', 'That name is reserved for uploads in progress');
  const move = async () => {
    await mkdir(path.dirname(to.absolute), { recursive: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'EEXIST' || error.code === 'ENOTDIR') throw conflict('A parent of the new name is a file, not a directory', 'NOT_A_DIRECTORY');
      throw error;
    });
    // The parent may have been made through a link that leads elsewhere meanwhile: check again.
    await resolveWorkspacePath(workspace, input.to, { forWrite: true });
    const existing = await lstat(to.absolute).catch(() => undefined);
    if (existing?.isDirectory()) throw conflict('A directory of that name exists', 'FILE_EXISTS');
    if (to.absolute === from.absolute) return;
    if (input.overwrite) {
      // rename() replaces an existing file in one step.
      await rename(from.absolute, to.absolute);
      return;
    }
    try {
      await link(from.absolute, to.absolute);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw conflict(`${input.to} exists; send overwrite: true to replace it`, 'FILE_EXISTS');
      throw error;
    }
    await unlink(from.absolute);
  };
  if (quota) await quota.untracked(move);
  else await move();
  return { from: from.relative, path: to.relative, name };
}
