/**
 * What the services keep on disk — the account database, the keys, the outbox, every tenant's
 * workspace and `agent.db` — is for the service's own user only: directories 0700, files 0600
 * (docs/security.md, The data directory). Most of it is written by code that picks its own
 * modes (PGlite, SQLite, the agents and their `exec` commands), so the process's umask is what
 * holds it; the directories the services keep their data in are tightened at every start, which
 * also closes what an older version (or a hand-made directory) left readable.
 */
import { chmod, mkdir } from 'node:fs/promises';
import type { Logger } from './log.js';

/** From now on this process, and every process it starts, creates directories 0700 and files 0600. */
export function createFilesPrivately(): void {
  process.umask(0o077);
}

/**
 * `dir` exists and only its owner may enter it. A directory the service may not change (owned by
 * another user, a read-only mount) is used as it is, with a warning: the operator chose it.
 */
export async function privateDir(dir: string, log: Logger): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPERM' && error.code !== 'EROFS') throw error;
    log.warn({ dir, code: error.code }, 'could not make the data directory private (mode 0700): other local users may read it');
  });
}
