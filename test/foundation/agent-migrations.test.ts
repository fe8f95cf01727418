/**
 * The agent store's start-up migration check: the schema engine runs only when a migration is
 * missing (or an attempt failed), and a store that is up to date opens without it. The engine's
 * JS glue is wrapped to count how often an engine is created; everything else is the real thing
 * on a real SQLite file.
 */
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { agentMigrations, migrateAgentDb, openAgentStore } from '../../server/agent/store.js';
import type { MigrationSource } from '../../server/common/migrations.js';
import { tempDir } from '../support/servers.js';

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
async function withExtraMigration(): Promise<MigrationSource> {
  const root = await dir('agent-prisma');
  await cp(path.dirname(agentMigrations.schemaPath), root, { recursive: true });
  const source = { schemaPath: path.join(root, 'schema.prisma'), migrationsDir: path.join(root, 'migrations') };
  await mkdir(path.join(source.migrationsDir, '20300101000000_probe'));
  await writeFile(path.join(source.migrationsDir, '20300101000000_probe', 'migration.sql'), 'CREATE TABLE "probes" ("id" INTEGER NOT NULL PRIMARY KEY);\n');
  return source;
}

const tables = (file: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((t) => t.name);
  } finally {
    db.close();
  }
};

describe('agent store migrations at start', { timeout: 60_000 }, () => {
  it('a fresh workspace is migrated by the engine; reopening it does not start the engine', async () => {
    const workspace = await dir('agent-ws');
    const before = engine.starts;
    const first = await openAgentStore(workspace);
    expect(first.appliedMigrations).toEqual(['20261122185109_init']);
    expect(engine.starts).toBe(before + 1);
    await first.db.chatMessage.create({ data: { chatId: 'c', type: 'user', content: 'kept' } });
    await first.close();

    const again = await openAgentStore(workspace);
    expect(again.appliedMigrations).toEqual([]);
    expect(engine.starts).toBe(before + 1);
    expect(await again.db.chatMessage.count()).toBe(1);
    await again.close();
  });

  it('a database that lacks a newer migration gets it through the engine, then opens without it', async () => {
    const file = path.join(await dir('agent-db'), 'agent.db');
    expect(await migrateAgentDb(file)).toEqual(['20261122185109_init']);
    const source = await withExtraMigration();
    const before = engine.starts;
    expect(await migrateAgentDb(file, source)).toEqual(['20300101000000_probe']);
    expect(engine.starts).toBe(before + 1);
    expect(tables(file)).toContain('probes');
    expect(await migrateAgentDb(file, source)).toEqual([]);
    expect(engine.starts).toBe(before + 1);
  });

  it('a failed attempt on record is left to the engine, which refuses to go on', async () => {
    const file = path.join(await dir('agent-db'), 'agent.db');
    const source = await withExtraMigration();
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
