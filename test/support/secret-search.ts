/**
 * Where a secret must not be: the processes of this user (environment and command line) and the
 * files under a directory (an account's data directory, agent workspaces included). Used by the
 * connector tests (test/connectors/oauth.test.ts, e2e/connectors.spec.ts) with an issued token.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/** Every file under `dir` that contains `needle` (as text). */
export async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const found: string[] = [];
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const content = await readFile(file).catch(() => Buffer.alloc(0));
    if (content.includes(needle)) found.push(file);
  }
  return found;
}

/** Processes of this user whose environment or command line carries `needle`. */
export async function processesContaining(needle: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of (await readdir('/proc')).filter((name) => /^\d+$/.test(name))) {
    for (const part of ['environ', 'cmdline']) {
      const content = await readFile(`/proc/${pid}/${part}`).catch(() => undefined);
      if (content?.includes(needle)) found.push(`${pid}/${part}`);
    }
  }
  return found;
}
