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
import { applyMigrations, type MigrationSource } from '../common/migrations.js';
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

export async function openAgentStore(workspace: string): Promise<AgentStore> {
  const file = path.join(workspace, AGENT_DB_FILE);
  // WAL is a property of the file: set it once, before any pooled connection opens it.
  const raw = new Database(file);
  raw.pragma('journal_mode = WAL');
  raw.close();
  // Prisma's migration engine wants the file to itself (it fails as busy with another connection open).
  const appliedMigrations = await applyMigrations(agentMigrations, agentDbAdapter(file));
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
