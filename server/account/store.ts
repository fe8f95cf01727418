/**
 * The account store: PostgreSQL through @prisma/adapter-pg when DATABASE_URL is set (many
 * instances share it), otherwise embedded PGlite in the data directory (nothing to install).
 * Migrations are applied on open; the schema engine (server/common/migrations.ts) is loaded and run
 * only when `_prisma_migrations` says something is left to apply, as the agent store does: every
 * service start and every `npm run admin` / `agents` run opens the store, and nearly always on an
 * unchanged schema.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';
import { PrismaPg } from '@prisma/adapter-pg';
import type { SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import pg from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { migrationsUpToDate, type MigrationSource, type RecordedMigration } from '../common/committed-migrations.js';
import { PrismaClient } from '../generated/account/client.js';
import { hotSql, type HotSql, type SqlDriver } from './hot-sql.js';

export type AccountDb = PrismaClient;

const prismaDir = fileURLToPath(new URL('../../prisma/account/', import.meta.url));
export const accountMigrations: MigrationSource = {
  schemaPath: path.join(prismaDir, 'schema.prisma'),
  migrationsDir: path.join(prismaDir, 'migrations'),
};

export interface AccountStore {
  db: AccountDb;
  /** The same database without Prisma's client layer, for the hot-path statements (hot-sql.ts). */
  sql: HotSql;
  /** `postgres` or `pglite`, for logs and for tests that must know. */
  kind: 'postgres' | 'pglite';
  appliedMigrations: string[];
  /**
   * Runs `work` unless another instance is doing work under the same `key` right now (a PostgreSQL
   * advisory lock held on a connection of its own for the whole run); resolves false when skipped.
   * PGlite serves one instance by construction, so there it always runs.
   */
  exclusively(key: number, work: () => Promise<void>): Promise<boolean>;
  close(): Promise<void>;
}

interface Opened {
  adapter: SqlMigrationAwareDriverAdapterFactory;
  /** Applies the migrations (on PostgreSQL over connections of their own, closed afterwards). */
  migrate(): Promise<string[]>;
  driver: SqlDriver;
  kind: AccountStore['kind'];
  exclusively: AccountStore['exclusively'];
  closeDriver(): Promise<void>;
}

/**
 * PGlite's file system (Emscripten's) sets every file's mode itself, with a chmod after creating
 * it: 0666 for the cluster it unpacks, 0644 for each new relation. That chmod bypasses the
 * process's umask (docs/security.md, "The data directory"), so here every mode it sets keeps its
 * owner's bits only: files 0600, directories 0700, now and for whatever it creates later.
 */
class PrivateNodeFS extends NodeFS {
  override async init(pg: PGlite, opts: Parameters<NodeFS['init']>[1]) {
    const { emscriptenOpts } = await super.init(pg, opts);
    const ownerOnly = (mod: { FS: { chmod(path: string, mode: number, dontFollow?: boolean): void } }) => {
      const chmod = mod.FS.chmod.bind(mod.FS);
      mod.FS.chmod = (path, mode, dontFollow) => chmod(path, mode & ~0o077, dontFollow);
    };
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), ownerOnly] } };
  }
}

async function openDriver(databaseUrl: string | undefined, dataDir: string): Promise<Opened> {
  if (databaseUrl) {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
    // An idle client that loses its server (restart, failover) must not crash the process.
    pool.on('error', () => undefined);
    const driver: SqlDriver = async ({ name, text }, values) => (await pool.query({ name, text, values })).rows;
    const exclusively = async (key: number, work: () => Promise<void>) => {
      const client = await pool.connect();
      // The lock's connection sits idle while `work` runs: losing the server then must not crash
      // the process (an idle checked-out client reports it as an 'error' event); the lock ends with it.
      let lost: Error | undefined;
      const onLost = (error: Error) => {
        lost = error;
      };
      client.on('error', onLost);
      try {
        const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [key]);
        if (!rows[0]?.locked) return false;
        try {
          await work();
        } finally {
          await client.query('SELECT pg_advisory_unlock($1)', [key]);
        }
        return true;
      } finally {
        client.off('error', onLost);
        // A broken connection is destroyed, not handed back to the pool.
        client.release(lost);
      }
    };
    // Prisma's engine takes a session advisory lock to migrate and never releases it: on a pooled
    // connection it would outlive the migration and block every other instance's start (a rolling
    // restart) until this one stops. Its own pool, ended afterwards, ends the lock with it.
    const migrate = async () => {
      const migrationPool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
      migrationPool.on('error', () => undefined);
      try {
        const { applyMigrations } = await import('../common/migrations.js');
        return await applyMigrations(accountMigrations, new PrismaPg(migrationPool));
      } finally {
        await migrationPool.end();
      }
    };
    return { adapter: new PrismaPg(pool), migrate, driver, kind: 'postgres', exclusively, closeDriver: () => pool.end() };
  }
  const dir = path.join(dataDir, 'account-db');
  await mkdir(dir, { recursive: true });
  const client = await PGlite.create({ fs: new PrivateNodeFS(dir) });
  const driver: SqlDriver = async ({ text }, params) => (await client.query(text, params)).rows;
  const exclusively = async (_key: number, work: () => Promise<void>) => {
    await work();
    return true;
  };
  const adapter = new PrismaPGlite(client);
  const migrate = async () => {
    const { applyMigrations } = await import('../common/migrations.js');
    return applyMigrations(accountMigrations, adapter);
  };
  return { adapter, migrate, driver, kind: 'pglite', exclusively, closeDriver: () => client.close() };
}

/** True when every committed migration is recorded as finished; a database without `_prisma_migrations` yet is not. */
async function upToDate(driver: SqlDriver): Promise<boolean> {
  const recorded = await driver({ name: 'recorded_migrations', text: 'SELECT migration_name, finished_at, rolled_back_at FROM "_prisma_migrations"' }, []).then(
    (rows) => rows as RecordedMigration[],
    () => undefined,
  );
  return recorded !== undefined && (await migrationsUpToDate(accountMigrations, recorded));
}

export async function openAccountStore(opts: { databaseUrl?: string; dataDir: string }): Promise<AccountStore> {
  const { adapter, migrate, driver, kind, exclusively, closeDriver } = await openDriver(opts.databaseUrl, opts.dataDir);
  try {
    const appliedMigrations = (await upToDate(driver)) ? [] : await migrate();
    const db = new PrismaClient({ adapter });
    return {
      db,
      sql: hotSql(driver),
      kind,
      appliedMigrations,
      exclusively,
      async close() {
        await db.$disconnect();
        await closeDriver();
      },
    };
  } catch (error) {
    await closeDriver().catch(() => undefined);
    throw error;
  }
}
