/**
 * The account store: PostgreSQL through @prisma/adapter-pg when DATABASE_URL is set (many
 * instances share it), otherwise embedded PGlite in the data directory (nothing to install).
 * Migrations are applied on open.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import type { SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import pg from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { applyMigrations, type MigrationSource } from '../common/migrations.js';
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
  close(): Promise<void>;
}

interface Opened {
  adapter: SqlMigrationAwareDriverAdapterFactory;
  driver: SqlDriver;
  kind: AccountStore['kind'];
  closeDriver(): Promise<void>;
}

async function openDriver(databaseUrl: string | undefined, dataDir: string): Promise<Opened> {
  if (databaseUrl) {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
    // An idle client that loses its server (restart, failover) must not crash the process.
    pool.on('error', () => undefined);
    const driver: SqlDriver = async ({ name, text }, values) => (await pool.query({ name, text, values })).rows;
    return { adapter: new PrismaPg(pool), driver, kind: 'postgres', closeDriver: () => pool.end() };
  }
  const dir = path.join(dataDir, 'account-db');
  await mkdir(dir, { recursive: true });
  const client = await PGlite.create(dir);
  const driver: SqlDriver = async ({ text }, params) => (await client.query(text, params)).rows;
  return { adapter: new PrismaPGlite(client), driver, kind: 'pglite', closeDriver: () => client.close() };
}

export async function openAccountStore(opts: { databaseUrl?: string; dataDir: string }): Promise<AccountStore> {
  const { adapter, driver, kind, closeDriver } = await openDriver(opts.databaseUrl, opts.dataDir);
  try {
    const appliedMigrations = await applyMigrations(accountMigrations, adapter);
    const db = new PrismaClient({ adapter });
    return {
      db,
      sql: hotSql(driver),
      kind,
      appliedMigrations,
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
