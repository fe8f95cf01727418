import { cp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { afterEach, describe, expect, it } from 'vitest';
import { accountMigrations } from '../../server/account/store.js';
import { agentDbAdapter, agentMigrations } from '../../server/agent/store.js';
import { applyMigrations, createMigration, type MigrationSource } from '../../server/common/migrations.js';
import { tempDir } from '../support/servers.js';

const cleanup: string[] = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A copy of a store's prisma folder that the test may change. */
async function copyOf(source: MigrationSource): Promise<MigrationSource> {
  const dir = await tempDir('prisma-copy');
  cleanup.push(dir);
  await cp(path.dirname(source.schemaPath), dir, { recursive: true });
  return { ...source, schemaPath: path.join(dir, 'schema.prisma'), migrationsDir: path.join(dir, 'migrations') };
}

const extraModel = '\nmodel Probe {\n  id   Int    @id @default(autoincrement())\n  note String\n\n  @@map("probes")\n}\n';

// The Wasm schema engine diffs a whole schema on one core: tens of seconds on a busy 2-core machine.
describe('migrations over the Wasm schema engine', { timeout: 120_000 }, () => {
  it('committed account migrations match the account schema (nothing left to generate)', async () => {
    const client = await PGlite.create();
    expect(await createMigration(await copyOf(accountMigrations), new PrismaPGlite(client), 'noop')).toBeUndefined();
    await client.close();
  });

  it('committed agent migrations match the agent schema', async () => {
    expect(await createMigration(await copyOf(agentMigrations), agentDbAdapter(':memory:'), 'noop')).toBeUndefined();
  });

  it('a schema change becomes one new migration that applies on PGlite', async () => {
    const source = await copyOf(accountMigrations);
    await writeFile(source.schemaPath, (await readFile(source.schemaPath, 'utf8')) + extraModel);
    const shadow = await PGlite.create();
    const dir = await createMigration(source, new PrismaPGlite(shadow), 'add probe', new Date('2030-01-01T00:00:00Z'));
    await shadow.close();
    expect(path.basename(dir ?? '')).toBe('20300101000000_add_probe');
    expect(await readFile(path.join(dir ?? '', 'migration.sql'), 'utf8')).toMatch(/CREATE TABLE "probes"/);

    const db = await PGlite.create();
    const applied = await applyMigrations(source, new PrismaPGlite(db));
    expect(applied.at(-1)).toBe('20300101000000_add_probe');
    expect(await applyMigrations(source, new PrismaPGlite(db))).toEqual([]);
    const { rows } = await db.query<{ n: number }>('select count(*)::int as n from probes');
    expect(rows[0]?.n).toBe(0);
    await db.close();
  });

  it('a schema change becomes one new migration that applies on SQLite', async () => {
    const source = await copyOf(agentMigrations);
    await writeFile(source.schemaPath, (await readFile(source.schemaPath, 'utf8')) + extraModel);
    const dir = await createMigration(source, agentDbAdapter(':memory:'), 'add-probe');
    expect(await readFile(path.join(dir ?? '', 'migration.sql'), 'utf8')).toMatch(/CREATE TABLE "probes"/);
    const file = path.join(path.dirname(source.schemaPath), 'probe.db');
    const applied = await applyMigrations(source, agentDbAdapter(file));
    const committed = (await readdir(agentMigrations.migrationsDir)).filter((name) => /^\d+_/.test(name));
    expect(applied).toHaveLength(committed.length + 1);
    expect(applied.at(-1)).toMatch(/_add_probe$/);
  });
});
