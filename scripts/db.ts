/**
 * Database chores over Prisma's Wasm schema engine (no native binary needed):
 *   npm run db:generate                         generate both Prisma clients
 *   npm run db:migrate [-- --store account|agent]   apply committed migrations (the configured stores)
 *   npm run db:migration -- NAME [--store account|agent]   write the next migration from schema.prisma
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { store: { type: 'string', default: 'account' } },
});
const [command, name] = positionals;
const store = values.store;
if (store !== 'account' && store !== 'agent') throw new Error(`--store must be account or agent, not ${store}`);

async function generate(): Promise<void> {
  // `prisma generate` does not run the schema engine, but insists that its binary exists.
  const stub = path.join(tmpdir(), 'prisma-schema-engine-stub');
  writeFileSync(stub, '');
  for (const schema of ['prisma/account/schema.prisma', 'prisma/agent/schema.prisma']) {
    execFileSync(process.execPath, ['node_modules/prisma/build/index.js', 'generate', '--schema', schema], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: stub, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
    });
  }
  console.log('generated Prisma clients in server/generated/');
}

async function migrate(): Promise<void> {
  if (store === 'account') {
    const { openAccountStore } = await import('../server/account/store.js');
    const { loadAccountConfig } = await import('../server/account/config.js');
    const config = loadAccountConfig(process.env);
    const opened = await openAccountStore(config);
    console.log(`account store (${opened.kind}): applied ${opened.appliedMigrations.length} migration(s) ${opened.appliedMigrations.join(', ')}`);
    await opened.close();
  } else {
    const { openAgentStore } = await import('../server/agent/store.js');
    const { agentEnv } = await import('../server/agent/config.js');
    const { parseConfig } = await import('../server/common/config.js');
    const env = parseConfig(agentEnv.pick({ AGENT_WORKSPACE: true, AGENT_STATE_DIR: true }), process.env);
    const workspace = path.resolve(env.AGENT_WORKSPACE);
    // As the agent does (server/agent/config.ts): the state directory beside the workspace.
    const stateDir = path.resolve(env.AGENT_STATE_DIR ?? `${workspace}.state`);
    const { mkdirSync } = await import('node:fs');
    mkdirSync(stateDir, { recursive: true });
    const opened = await openAgentStore(stateDir, workspace);
    console.log(`agent store ${opened.file}: applied ${opened.appliedMigrations.length} migration(s) ${opened.appliedMigrations.join(', ')}`);
    await opened.close();
  }
}

async function migration(): Promise<void> {
  if (!name || !/^\w[\w-]{0,60}$/.test(name)) throw new Error('usage: npm run db:migration -- NAME [--store account|agent]');
  const { createMigration } = await import('../server/common/migrations.js');
  // The diff replays committed migrations on a throw-away in-memory shadow database.
  if (store === 'account') {
    const { accountMigrations } = await import('../server/account/store.js');
    const client = await PGlite.create();
    const dir = await createMigration(accountMigrations, new PrismaPGlite(client), name);
    await client.close();
    console.log(dir ? `wrote ${path.relative(process.cwd(), dir)}/migration.sql` : 'schema unchanged: no migration written');
  } else {
    const { agentMigrations, agentDbAdapter } = await import('../server/agent/store.js');
    const dir = await createMigration(agentMigrations, agentDbAdapter(':memory:'), name);
    console.log(dir ? `wrote ${path.relative(process.cwd(), dir)}/migration.sql` : 'schema unchanged: no migration written');
  }
}

const commands: Record<string, () => Promise<void>> = { generate, migrate, migration };
const run = command ? commands[command] : undefined;
if (!run) {
  console.error('usage: tsx scripts/db.ts generate | migrate [--store account|agent] | migration NAME [--store account|agent]');
  process.exit(2);
}
await run();
