/**
 * Real Prisma migrations without Prisma's native schema engine: the same engine, compiled to
 * Wasm (@prisma/schema-engine-wasm), driven over our driver adapters. `applyMigrations` is what
 * `prisma migrate deploy` does (records `_prisma_migrations`); `createMigration` is what
 * `prisma migrate dev --create-only` does, diffing the committed migrations (replayed on an
 * in-memory shadow database) against the schema.
 *
 * The engine costs about 30 MB and a few hundred ms to instantiate, and what it leaves behind
 * stays for the life of the process, so a store that opens at every process start asks
 * `migrationsUpToDate` (committed-migrations.ts) first, over its own driver, and loads this module
 * and the engine only when something is left to apply (or something is off that the engine must
 * judge).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { bindMigrationAwareSqlAdapterFactory, type SqlDriverAdapter, type SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import type { MigrationList, SchemaEngine } from '@prisma/schema-engine-wasm';
import { migrationNames, type MigrationSource } from './committed-migrations.js';

export type { MigrationSource } from './committed-migrations.js';

type EngineGlue = typeof import('@prisma/schema-engine-wasm/schema_engine_bg');

let engineModule: Promise<EngineGlue> | undefined;

/**
 * The engine's timers still pending. It sets timeouts as it works (a 10 s one on every run) and
 * its glue has no way to clear one, so each kept the process alive for its full length after the
 * work was done: `npm run admin`, `agents` and `db:migrate` lingered 10 s before
 * exiting. Cleared when the last engine is freed, when none of them can still matter.
 */
const engineTimers = new Set<ReturnType<typeof setTimeout>>();
let enginesRunning = 0;

/** The glue as the Wasm's import object, its `setTimeout` recording each timer in engineTimers. */
function trackingTimers(glue: EngineGlue): WebAssembly.ModuleImports {
  const imports: Record<string, unknown> = { ...glue };
  for (const name of Object.keys(glue).filter((key) => key.startsWith('__wbg_setTimeout_'))) {
    imports[name] = (callback: () => void, ms: number) => {
      const timer = setTimeout(() => {
        engineTimers.delete(timer);
        callback();
      }, ms >>> 0);
      engineTimers.add(timer);
      return timer;
    };
  }
  return imports as WebAssembly.ModuleImports;
}

/** Node 20 cannot import .wasm, so instantiate it by hand with its JS glue as the import object. */
function loadEngineModule(): Promise<EngineGlue> {
  engineModule ??= (async () => {
    const engineGlue = await import('@prisma/schema-engine-wasm/schema_engine_bg');
    const entry = createRequire(import.meta.url).resolve('@prisma/schema-engine-wasm');
    const bytes = await readFile(path.join(path.dirname(entry), 'schema_engine_bg.wasm'));
    const { instance } = await WebAssembly.instantiate(bytes, { './schema_engine_bg.js': trackingTimers(engineGlue) });
    engineGlue.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
    return engineGlue;
  })();
  return engineModule;
}

/**
 * The engine replays SQLite migrations on the shadow database through `executeRaw`, which
 * better-sqlite3 limits to one statement; a parameterless multi-statement query is a script.
 */
function acceptScripts(adapter: SqlDriverAdapter): SqlDriverAdapter {
  if (adapter.provider !== 'sqlite') return adapter;
  const executeRaw = adapter.executeRaw.bind(adapter);
  adapter.executeRaw = async (query) => {
    if (query.args.length > 0 || !/;\s*\S/.test(query.sql)) return executeRaw(query);
    await adapter.executeScript(query.sql);
    return 0;
  };
  return adapter;
}

/**
 * Runs `work` on an engine over `factory`, then closes every connection the engine opened: the
 * engine does not close them itself, and an open SQLite connection would keep the file locked.
 */
async function withEngine<T>(source: MigrationSource, factory: SqlMigrationAwareDriverAdapterFactory, work: (engine: SchemaEngine) => Promise<T>): Promise<T> {
  const glue = await loadEngineModule();
  const schema = await readFile(source.schemaPath, 'utf8');
  const opened: SqlDriverAdapter[] = [];
  const track = async (connection: Promise<SqlDriverAdapter>) => {
    const adapter = await connection;
    opened.push(adapter);
    return adapter;
  };
  const tracked: SqlMigrationAwareDriverAdapterFactory = {
    provider: factory.provider,
    adapterName: factory.adapterName,
    connect: () => track(factory.connect()),
    connectToShadowDb: () => track(factory.connectToShadowDb().then(acceptScripts)),
  };
  const log = () => undefined;
  enginesRunning += 1;
  try {
    const engine = await glue.SchemaEngine.new({ datamodels: [[source.schemaPath, schema]] }, log, bindMigrationAwareSqlAdapterFactory(tracked));
    try {
      return await work(engine);
    } finally {
      engine.free();
      await Promise.all(opened.map((adapter) => adapter.dispose().catch(() => undefined)));
    }
  } finally {
    enginesRunning -= 1;
    if (enginesRunning === 0) {
      for (const timer of engineTimers) clearTimeout(timer);
      engineTimers.clear();
    }
  }
}

async function readMigrations(source: MigrationSource): Promise<MigrationList> {
  const directories = await migrationNames(source);
  const lockPath = path.join(source.migrationsDir, 'migration_lock.toml');
  return {
    baseDir: source.migrationsDir,
    lockfile: { path: 'migration_lock.toml', content: await readFile(lockPath, 'utf8').catch(() => null) },
    shadowDbInitScript: '',
    migrationDirectories: await Promise.all(
      directories.map(async (dir) => {
        const file = path.join(source.migrationsDir, dir, 'migration.sql');
        const content = await readFile(file, 'utf8').then(
          (value) => ({ tag: 'ok' as const, value }),
          (error: Error) => ({ tag: 'error' as const, value: error.message }),
        );
        return { path: dir, migrationFile: { path: 'migration.sql', content } };
      }),
    ),
  };
}

const filtersOf = (source: MigrationSource) => ({ externalTables: source.externalTables ?? [], externalEnums: [] });

/** Applies every committed migration not yet recorded in the database; returns their names. */
export async function applyMigrations(source: MigrationSource, adapter: SqlMigrationAwareDriverAdapterFactory): Promise<string[]> {
  const migrationsList = await readMigrations(source);
  return withEngine(source, adapter, async (engine) => {
    const { appliedMigrationNames } = await engine.applyMigrations({ migrationsList, filters: filtersOf(source) });
    return appliedMigrationNames;
  });
}

/**
 * Writes `<timestamp>_<name>/migration.sql` with the SQL that takes the committed migrations to
 * the current schema. Returns the new folder, or undefined when the schema has not changed.
 */
export async function createMigration(
  source: MigrationSource,
  adapter: SqlMigrationAwareDriverAdapterFactory,
  name: string,
  now = new Date(),
): Promise<string | undefined> {
  const migrationsList = await readMigrations(source);
  const schema = await readFile(source.schemaPath, 'utf8');
  const from = migrationsList.migrationDirectories.length ? ({ tag: 'migrations', ...migrationsList } as const) : ({ tag: 'empty' } as const);
  const stdout = await withEngine(source, adapter, async (engine) => {
    const diff = await engine.diff({
      from,
      to: { tag: 'schemaDatamodel', files: [{ path: source.schemaPath, content: schema }] },
      script: true,
      exitCode: null,
      filters: filtersOf(source),
    });
    return diff.stdout;
  });
  if (!stdout || /^-- This is an empty migration\.\s*$/.test(stdout.trim())) return undefined;
  const stamp = now.toISOString().replace(/\D/g, '').slice(0, 14);
  const dir = path.join(source.migrationsDir, `${stamp}_${name.replace(/\W+/g, '_').toLowerCase()}`);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'migration.sql'), stdout);
  if (migrationsList.lockfile.content === null) {
    const provider = adapter.provider === 'sqlite' ? 'sqlite' : 'postgresql';
    await writeFile(
      path.join(source.migrationsDir, 'migration_lock.toml'),
      `# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "${provider}"\n`,
    );
  }
  return dir;
}
