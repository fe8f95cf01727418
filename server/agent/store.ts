/**
 * The agent store: SQLite `agent.db` at the workspace root (hidden from file access by the path
 * guard), WAL so that history writes stay cheap, migrations applied on open.
 *
 * Two connections to the file: Prisma's (schema, migrations, most queries) and `sql`, a plain
 * better-sqlite3 connection for the chat history's hot statements (chat/history.ts). Both run
 * synchronously in this thread, so they cannot deadlock as two processes could: a statement or
 * a `sql` transaction runs to its end before anything else does. The one overlap is a Prisma
 * interactive transaction, which holds the write lock across awaits; `sql` therefore never
 * busy-waits (timeout 0) and its writers retry asynchronously until the lock is free.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import Database from 'better-sqlite3';
import { applyMigrations, migrationsUpToDate, type MigrationSource, type RecordedMigration } from '../common/migrations.js';
import { PrismaClient } from '../generated/agent/client.js';

export type AgentDb = PrismaClient;
export type AgentSql = Database.Database;

export const AGENT_DB_FILE = 'agent.db';

const prismaDir = fileURLToPath(new URL('../../prisma/agent/', import.meta.url));
export const agentMigrations: MigrationSource = {
  schemaPath: path.join(prismaDir, 'schema.prisma'),
  migrationsDir: path.join(prismaDir, 'migrations'),
};

export interface AgentStore {
  db: AgentDb;
  sql: AgentSql;
  file: string;
  appliedMigrations: string[];
  close(): Promise<void>;
}

export function agentDbAdapter(file: string): PrismaBetterSqlite3 {
  return new PrismaBetterSqlite3({ url: `file:${file}`, timeout: 5_000 });
}

function recordedMigrations(raw: Database.Database): RecordedMigration[] {
  const table = raw.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_prisma_migrations'").get();
  if (!table) return [];
  return raw.prepare('SELECT migration_name, finished_at, rolled_back_at FROM _prisma_migrations').all() as RecordedMigration[];
}

/**
 * Sets WAL and brings the file up to `source`'s migrations; returns the ones it applied. An agent
 * starts at every first call after an idle stop, so the usual case (nothing to apply) is read
 * from `_prisma_migrations` here, without the schema engine.
 */
export async function migrateAgentDb(file: string, source: MigrationSource = agentMigrations): Promise<string[]> {
  const raw = new Database(file);
  let upToDate: boolean;
  try {
    // WAL is a property of the file: set it once, before any pooled connection opens it.
    raw.pragma('journal_mode = WAL');
    upToDate = await migrationsUpToDate(source, recordedMigrations(raw));
  } finally {
    raw.close();
  }
  // Prisma's migration engine wants the file to itself (it fails as busy with another connection open).
  return upToDate ? [] : applyMigrations(source, agentDbAdapter(file));
}

export async function openAgentStore(workspace: string): Promise<AgentStore> {
  const file = path.join(workspace, AGENT_DB_FILE);
  const appliedMigrations = await migrateAgentDb(file);
  const sql = new Database(file, { timeout: 0 });
  sql.pragma('synchronous = NORMAL');
  const db = new PrismaClient({ adapter: agentDbAdapter(file) });
  await db.$executeRawUnsafe('PRAGMA synchronous = NORMAL');
  return {
    db,
    sql,
    file,
    appliedMigrations,
    async close() {
      await db.$disconnect();
      sql.close();
    },
  };
}
