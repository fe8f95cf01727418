/**
 * The agent store: SQLite `agent.db` in the agent's state directory, beside its workspace and
 * outside it (AGENT_STATE_DIR): a sandboxed agent's `exec` commands see the workspace and never
 * the state directory (docs/security.md, "Local agents run in a sandbox"). A workspace that still
 * holds `agent.db` from before is moved on open. The path guard keeps hiding the name from file
 * access. WAL so that history writes stay cheap, migrations applied on open.
 *
 * Two connections to the file: Prisma's (schema, migrations, most queries) and `sql`, a plain
 * better-sqlite3 connection for the chat history's hot statements (chat/history.ts) and for
 * what a start asks. Prisma connects, and compiles its query engine (Wasm, ~20 MB), at the first
 * ORM query, and a start makes none: an agent that only chats never loads it
 * (docs/performance.md, "An agent's start"). Both connections run
 * synchronously in this thread, so they cannot deadlock as two processes could: a statement or
 * a `sql` transaction runs to its end before anything else does. The one overlap is a Prisma
 * interactive transaction, which holds the write lock across awaits; `sql` therefore never
 * busy-waits (timeout 0) and its writers retry asynchronously until the lock is free.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import type { SqlDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import Database from 'better-sqlite3';
import { migrationsUpToDate, readMigrationScripts, type MigrationSource, type RecordedMigration } from '../common/committed-migrations.js';
import { PrismaClient } from '../generated/agent/client.js';

export type AgentDb = PrismaClient;
export type AgentSql = Database.Database;

export const AGENT_DB_FILE = 'agent.db';

const prismaDir = fileURLToPath(new URL('../../prisma/agent/', import.meta.url));
export const agentMigrations: MigrationSource = {
  schemaPath: path.join(prismaDir, 'schema.prisma'),
  migrationsDir: path.join(prismaDir, 'migrations'),
  // The history's full-text index (migration history_search) and the tables FTS5 keeps it in.
  externalTables: ['chat_messages_fts', ...['config', 'data', 'docsize', 'idx'].map((part) => `chat_messages_fts_${part}`)],
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

/** Prisma's connection, set up as `sql` is when Prisma opens it (a pragma holds per connection). */
function clientAdapter(file: string): SqlDriverAdapterFactory {
  const factory = agentDbAdapter(file);
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    async connect() {
      const connection = await factory.connect();
      await connection.executeScript('PRAGMA synchronous = NORMAL');
      return connection;
    },
  };
}

function recordedMigrations(raw: Database.Database): RecordedMigration[] {
  const table = raw.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_prisma_migrations'").get();
  if (!table) return [];
  return raw.prepare('SELECT migration_name, finished_at, rolled_back_at FROM _prisma_migrations').all() as RecordedMigration[];
}

/** `_prisma_migrations` as the schema engine creates it on SQLite, so that it takes over later. */
const MIGRATIONS_TABLE = `CREATE TABLE "_prisma_migrations" (
    "id"                    TEXT PRIMARY KEY NOT NULL,
    "checksum"              TEXT NOT NULL,
    "finished_at"           DATETIME,
    "migration_name"        TEXT NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        DATETIME,
    "started_at"            DATETIME NOT NULL DEFAULT current_timestamp,
    "applied_steps_count"   INTEGER UNSIGNED NOT NULL DEFAULT 0
)`;

/** The engine's timestamp format: `2026-01-02T03:04:05.678+00:00`. */
const engineTimestamp = () => new Date().toISOString().replace(/Z$/, '+00:00');

/**
 * A new workspace's empty database: every committed migration and its `_prisma_migrations` row,
 * as the engine would write them, in one transaction (a crash leaves the file empty, and the
 * next start begins again). This is every new agent's first start; the engine would leave its
 * Wasm code and allocations (about 30 MB) in the process for as long as the agent runs.
 */
async function installFresh(raw: Database.Database, source: MigrationSource): Promise<string[]> {
  const scripts = await readMigrationScripts(source);
  raw.transaction(() => {
    raw.exec(MIGRATIONS_TABLE);
    const record = raw.prepare(
      'INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name, started_at, applied_steps_count) VALUES (?, ?, ?, ?, ?, 1)',
    );
    for (const script of scripts) {
      const started = engineTimestamp();
      raw.exec(script.sql);
      record.run(randomUUID(), script.checksum, engineTimestamp(), script.name, started);
    }
  })();
  return scripts.map((script) => script.name);
}

/**
 * Sets WAL and brings the file up to `source`'s migrations; returns the ones it applied. An agent
 * starts at every first call after an idle stop, so the schema engine runs only for what needs
 * it: an empty file is installed directly (installFresh), a file that is up to date is read from
 * `_prisma_migrations`, and anything else (a missing migration, a failed one) goes to the engine.
 */
export async function migrateAgentDb(file: string, source: MigrationSource = agentMigrations): Promise<string[]> {
  const raw = new Database(file);
  let upToDate: boolean;
  try {
    // WAL is a property of the file: set it once, before any pooled connection opens it.
    raw.pragma('journal_mode = WAL');
    const empty = !raw.prepare('SELECT 1 FROM sqlite_master LIMIT 1').get();
    if (empty) return await installFresh(raw, source);
    upToDate = await migrationsUpToDate(source, recordedMigrations(raw));
  } finally {
    raw.close();
  }
  if (upToDate) return [];
  // Prisma's migration engine wants the file to itself (it fails as busy with another connection open).
  const { applyMigrations } = await import('../common/migrations.js');
  return applyMigrations(source, agentDbAdapter(file));
}

/** The SQLite files of a database besides the main one. */
const SIDE_FILES = ['-wal', '-shm', '-journal'];

/**
 * Moves `agent.db` from where it used to live (the workspace root) to the state directory: a
 * consistent copy (VACUUM INTO, WAL included) renamed into place, then the old files removed. A
 * crash in between leaves the old files beside a complete new one; the next open removes them.
 */
function moveLegacyStore(legacy: string, file: string, log?: { info(obj: object, msg: string): void }): void {
  if (!existsSync(legacy)) return;
  if (!existsSync(file)) {
    const copy = `${file}.moving`;
    rmSync(copy, { force: true });
    const raw = new Database(legacy);
    try {
      raw.prepare('VACUUM INTO ?').run(copy);
    } finally {
      raw.close();
    }
    renameSync(copy, file);
    log?.info({ from: legacy, to: file }, 'agent store moved out of the workspace');
  }
  for (const suffix of ['', ...SIDE_FILES]) rmSync(`${legacy}${suffix}`, { force: true });
}

/** Opens (creating and migrating) the store in `stateDir`; `workspace`: where an older one may still be. */
export async function openAgentStore(stateDir: string, workspace?: string, log?: { info(obj: object, msg: string): void }): Promise<AgentStore> {
  const file = path.join(stateDir, AGENT_DB_FILE);
  if (workspace && path.resolve(workspace) !== path.resolve(stateDir)) moveLegacyStore(path.join(workspace, AGENT_DB_FILE), file, log);
  const appliedMigrations = await migrateAgentDb(file);
  const sql = new Database(file, { timeout: 0 });
  sql.pragma('synchronous = NORMAL');
  const db = new PrismaClient({ adapter: clientAdapter(file) });
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
