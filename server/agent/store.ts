/**
 * The agent store: SQLite `agent.db` at the workspace root (hidden from file access by the path
 * guard), WAL so that history writes stay cheap, migrations applied on open.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import Database from 'better-sqlite3';
import { applyMigrations, type MigrationSource } from '../common/migrations.js';
import { PrismaClient } from '../generated/agent/client.js';

export type AgentDb = PrismaClient;

export const AGENT_DB_FILE = 'agent.db';

const prismaDir = fileURLToPath(new URL('../../prisma/agent/', import.meta.url));
export const agentMigrations: MigrationSource = {
  schemaPath: path.join(prismaDir, 'schema.prisma'),
  migrationsDir: path.join(prismaDir, 'migrations'),
};

export interface AgentStore {
  db: AgentDb;
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
  const appliedMigrations = await applyMigrations(agentMigrations, agentDbAdapter(file));
  const db = new PrismaClient({ adapter: agentDbAdapter(file) });
  await db.$executeRawUnsafe('PRAGMA synchronous = NORMAL');
  return {
    db,
    file,
    appliedMigrations,
    close: () => db.$disconnect(),
  };
}
