/**
 * The agent store's migrations at start: a new (empty) database is installed without the schema
 * engine and ends up exactly as the engine would leave it; an up-to-date one opens without it;
 * a missing or failed migration goes to the engine. The engine's JS glue is wrapped to count
 * how often an engine is created; everything else is the real thing on real SQLite files.
 */
import { readdirSync } from 'node:fs';
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { agentDbAdapter, agentMigrations, migrateAgentDb, openAgentStore } from '../../server/agent/store.js';
import { applyMigrations, type MigrationSource } from '../../server/common/migrations.js';
import { tempDir } from '../support/servers.js';

/** The agent migrations in the repository, oldest first. */
const COMMITTED = readdirSync(path.resolve('prisma/agent/migrations'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();

const engine = vi.hoisted(() => ({ starts: 0 }));
vi.mock('@prisma/schema-engine-wasm/schema_engine_bg', async (importOriginal) => {
  const glue = await importOriginal<typeof import('@prisma/schema-engine-wasm/schema_engine_bg')>();
  const counted = new Proxy(glue.SchemaEngine, {
    get(target, key, receiver) {
      if (key !== 'new') return Reflect.get(target, key, receiver);
      return (...args: Parameters<typeof target.new>) => {
        engine.starts++;
        return target.new(...args);
      };
    },
  });
  return { ...glue, SchemaEngine: counted };
});

const cleanup: string[] = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function dir(prefix: string): Promise<string> {
  const made = await tempDir(prefix);
  cleanup.push(made);
  return made;
}

/** The agent's migrations plus one more, as a later release would ship them. */
async function withExtraMigration(sql = 'CREATE TABLE "probes" ("id" INTEGER NOT NULL PRIMARY KEY);\n'): Promise<MigrationSource> {
  const root = await dir('agent-prisma');
  await cp(path.dirname(agentMigrations.schemaPath), root, { recursive: true });
  const source = { schemaPath: path.join(root, 'schema.prisma'), migrationsDir: path.join(root, 'migrations') };
  await mkdir(path.join(source.migrationsDir, '20300101000000_probe'));
  await writeFile(path.join(source.migrationsDir, '20300101000000_probe', 'migration.sql'), sql);
  return source;
}

function read<T>(file: string, sql: string): T[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

const tables = (file: string) => read<{ name: string }>(file, "SELECT name FROM sqlite_master WHERE type = 'table'").map((t) => t.name);
const schemaOf = (file: string) => read(file, 'SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name');
interface MigrationRow {
  id: string;
  checksum: string;
  migration_name: string;
  started_at: string;
  finished_at: string | null;
  rolled_back_at: string | null;
  logs: string | null;
  applied_steps_count: number;
}
const recorded = (file: string) => read<MigrationRow>(file, 'SELECT * FROM _prisma_migrations ORDER BY started_at');

describe('agent store migrations at start', { timeout: 60_000 }, () => {
  it('a new workspace is installed without the engine, and reopening it does not start the engine either', async () => {
    const workspace = await dir('agent-ws');
    const before = engine.starts;
    const first = await openAgentStore(workspace);
    expect(first.appliedMigrations).toEqual(COMMITTED);
    await first.db.chatMessage.create({ data: { chatId: 'c', type: 'user', content: 'kept' } });
    await first.close();

    const again = await openAgentStore(workspace);
    expect(again.appliedMigrations).toEqual([]);
    expect(await again.db.chatMessage.count()).toBe(1);
    await again.close();
    expect(engine.starts).toBe(before);
  });

  it('an agent.db left at the workspace root by an older version moves to the state directory, history and all, and leaves nothing behind', async () => {
    const workspace = await dir('agent-ws');
    const stateDir = await dir('agent-state');
    const old = await openAgentStore(workspace);
    await old.db.chatMessage.create({ data: { chatId: 'c', type: 'user', content: 'moved with it' } });
    await old.close();

    const moved = await openAgentStore(stateDir, workspace);
    expect(moved.file).toBe(path.join(stateDir, 'agent.db'));
    expect((await moved.db.chatMessage.findMany()).map((m) => m.content)).toEqual(['moved with it']);
    await moved.close();
    expect(readdirSync(workspace).filter((name) => name.startsWith('agent.db'))).toEqual([]);
    // A stray agent.db in the workspace later is not the store: it is removed, the store kept.
    await writeFile(path.join(workspace, 'agent.db'), 'planted');
    const again = await openAgentStore(stateDir, workspace);
    expect(await again.db.chatMessage.count()).toBe(1);
    await again.close();
    expect(readdirSync(workspace)).toEqual([]);
  });

  it('the direct install leaves the database as the engine does: same schema, same record', async () => {
    const direct = path.join(await dir('agent-db'), 'agent.db');
    const byEngine = path.join(await dir('agent-db'), 'agent.db');
    await migrateAgentDb(direct);
    expect(await applyMigrations(agentMigrations, agentDbAdapter(byEngine))).toEqual(COMMITTED);
    expect(schemaOf(direct)).toEqual(schemaOf(byEngine));
    const [ours] = recorded(direct);
    const [theirs] = recorded(byEngine);
    const shape = (row: MigrationRow) => ({
      ...row,
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      started_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/),
      finished_at: expect.stringMatching(/\+00:00$/),
    });
    expect(ours).toEqual(shape(theirs!));
    expect(theirs).toEqual(shape(ours!));
    expect(ours!.checksum).toBe(theirs!.checksum);
  });

  it('a failing migration leaves a new database empty, so the next start installs it cleanly', async () => {
    const file = path.join(await dir('agent-db'), 'agent.db');
    const broken = await withExtraMigration('CREATE TABLE "probes" ("id" INTEGER NOT NULL PRIMARY KEY);\nTHIS IS NOT SQL;\n');
    await expect(migrateAgentDb(file, broken)).rejects.toThrow(/syntax error/);
    expect(schemaOf(file)).toEqual([]);
    expect(await migrateAgentDb(file)).toEqual(COMMITTED);
    expect(recorded(file).map((row) => row.migration_name)).toEqual(COMMITTED);
  });

  it('a database that lacks a newer migration gets it through the engine, then opens without it', async () => {
    const file = path.join(await dir('agent-db'), 'agent.db');
    expect(await migrateAgentDb(file)).toEqual(COMMITTED);
    const source = await withExtraMigration();
    const before = engine.starts;
    expect(await migrateAgentDb(file, source)).toEqual(['20300101000000_probe']);
    expect(engine.starts).toBe(before + 1);
    expect(tables(file)).toContain('probes');
    expect(recorded(file).map((row) => row.migration_name)).toEqual([...COMMITTED, '20300101000000_probe']);
    expect(await migrateAgentDb(file, source)).toEqual([]);
    expect(engine.starts).toBe(before + 1);
  });

  it('a failed attempt on record is left to the engine, which refuses to go on', async () => {
    const file = path.join(await dir('agent-db'), 'agent.db');
    const source = await withExtraMigration();
    await migrateAgentDb(file);
    await migrateAgentDb(file, source);
    // As a crash in the middle of the migration leaves it: started, never finished.
    const db = new Database(file);
    db.prepare("UPDATE _prisma_migrations SET finished_at = NULL WHERE migration_name = '20300101000000_probe'").run();
    db.close();
    const before = engine.starts;
    await expect(migrateAgentDb(file, source)).rejects.toThrow(/failed/i);
    expect(engine.starts).toBe(before + 1);
  });

  it('WAL is set on the file whichever path is taken', async () => {
    const workspace = await dir('agent-ws');
    for (let open = 0; open < 2; open++) {
      const store = await openAgentStore(workspace);
      await store.close();
      const db = new Database(store.file, { readonly: true });
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      db.close();
    }
  });
});
