/**
 * What a store's committed migrations are, and whether a database has them all: the question a
 * store asks at every open, answered from the migrations folder and `_prisma_migrations` without
 * the schema engine. migrations.ts (the engine, ~30 MB and a few hundred ms) is imported only
 * when the answer is no, so an agent that starts on an unchanged schema never loads it.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

export interface MigrationSource {
  /** The store's schema.prisma. */
  schemaPath: string;
  /** The folder holding `<timestamp>_<name>/migration.sql` and `migration_lock.toml`. */
  migrationsDir: string;
  /**
   * Tables the migrations create by hand that Prisma does not model (an FTS5 index and its shadow
   * tables): a new migration's diff leaves them alone instead of dropping them.
   */
  externalTables?: string[];
}

/** The committed migrations' folder names, oldest first. */
export async function migrationNames(source: MigrationSource): Promise<string[]> {
  const entries = await readdir(source.migrationsDir, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** The committed migrations with their SQL, oldest first, and the checksum Prisma records for each. */
export async function readMigrationScripts(source: MigrationSource): Promise<Array<{ name: string; sql: string; checksum: string }>> {
  return Promise.all(
    (await migrationNames(source)).map(async (name) => {
      const sql = await readFile(path.join(source.migrationsDir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/** A row of `_prisma_migrations`, as far as telling what is applied goes. */
export interface RecordedMigration {
  migration_name: string;
  finished_at: unknown;
  rolled_back_at: unknown;
}

/**
 * True when `applyMigrations` would have nothing to do: every committed migration is recorded
 * as finished, and no attempt is recorded as failed (the engine refuses to go on past a failed
 * one, and that refusal must not be skipped). Anything else, including a database that has no
 * `_prisma_migrations` yet, is for the engine. Checksums are not compared, as deploy does not.
 */
export async function migrationsUpToDate(source: MigrationSource, recorded: RecordedMigration[]): Promise<boolean> {
  const finished = new Set<string>();
  for (const row of recorded) {
    if (row.rolled_back_at != null) continue;
    if (row.finished_at == null) return false;
    finished.add(row.migration_name);
  }
  return (await migrationNames(source)).every((name) => finished.has(name));
}
