/**
 * What an agent's start loads: what /health and the first requests need, and no more
 * (docs/performance.md, "An agent's start"). Neither a new workspace nor a restart on an unchanged
 * schema loads the migration engine (the Wasm schema engine and migrations.ts around it); the
 * model clients load at the first chat; Prisma's query compiler at the first ORM query, which
 * neither a start nor a chat makes. Each of those modules is wrapped to record its first import;
 * everything else is a real agent over real HTTP and the scripted model on loopback. The agent is
 * started here without test/support/servers.ts, whose account service would load migrations.ts
 * for its own store.
 */
import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startAgent, type RunningAgent } from '../../server/agent/app.js';
import { loadAgentConfig } from '../../server/agent/config.js';
import { agentMigrations, migrateAgentDb } from '../../server/agent/store.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';

const loaded = vi.hoisted(() => ({ migrationEngine: false, schemaEngine: false, modelClients: false, queryCompiler: false }));
vi.mock('../../server/common/migrations.js', async (importOriginal) => {
  loaded.migrationEngine = true;
  return importOriginal();
});
vi.mock('@prisma/schema-engine-wasm/schema_engine_bg', async (importOriginal) => {
  loaded.schemaEngine = true;
  return importOriginal();
});
vi.mock('../../server/agent/model/model.js', async (importOriginal) => {
  loaded.modelClients = true;
  return importOriginal();
});
vi.mock('@prisma/client/runtime/query_compiler_small_bg.sqlite.wasm-base64.mjs', async (importOriginal) => {
  loaded.queryCompiler = true;
  return importOriginal();
});

let model: ScriptedModel | undefined;
const running: RunningAgent[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(running.map((agent) => agent.close()));
  await model?.close();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), `${prefix}-`));
  dirs.push(dir);
  return dir;
}

const secret = randomBytes(24).toString('hex');
const auth = { authorization: `Bearer ${secret}` };

async function start(env: Record<string, string>): Promise<RunningAgent> {
  // Heartbeats on, as an agent runs by default: a start reads and stores the next one's time and
  // asks when the next scheduled task is due, all without an ORM query.
  const config = loadAgentConfig({ AGENT_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', AGENT_SECRET: secret, ...env });
  const agent = await startAgent(config);
  running.push(agent);
  return agent;
}

describe("what an agent's start loads", () => {
  it('a new workspace and a restart on it load no migration engine; the model clients load at the first chat, Prisma’s query compiler at the first ORM query', async () => {
    model = await startScriptedModel({ responder: () => ({ text: 'hello back' }) });
    const env = { MODEL: model.modelSpec, AGENT_WORKSPACE: await tempDir('agent-ws'), AGENT_STATE_DIR: await tempDir('agent-state') };
    const first = await start(env);
    expect((await fetch(`${first.url}/health`)).status).toBe(200);
    await first.close();

    const agent = await start(env);
    expect((await fetch(`${agent.url}/health`)).status).toBe(200);
    expect((await fetch(`${agent.url}/chats`, { headers: auth })).status).toBe(200);
    expect(loaded).toEqual({ migrationEngine: false, schemaEngine: false, modelClients: false, queryCompiler: false });

    const reply = await fetch(`${agent.url}/chat`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: 'c1', message: 'hello' }),
    });
    expect(await reply.text()).toContain('hello back');
    expect(loaded).toEqual({ migrationEngine: false, schemaEngine: false, modelClients: true, queryCompiler: false });

    // The first ORM query (the subagent list) compiles Prisma's query engine; nothing else changes.
    const subagents = await fetch(`${agent.url}/subagents`, { headers: auth });
    expect(subagents.status).toBe(200);
    expect(loaded).toEqual({ migrationEngine: false, schemaEngine: false, modelClients: true, queryCompiler: true });
  });

  it('a store that lacks a committed migration loads the engine to apply it', async () => {
    const prismaDir = await tempDir('agent-prisma');
    await cp(path.dirname(agentMigrations.schemaPath), prismaDir, { recursive: true });
    const source = { schemaPath: path.join(prismaDir, 'schema.prisma'), migrationsDir: path.join(prismaDir, 'migrations') };
    const file = path.join(await tempDir('agent-db'), 'agent.db');
    await migrateAgentDb(file, source);
    expect(loaded.migrationEngine).toBe(false);

    await mkdir(path.join(source.migrationsDir, '20300101000000_probe'));
    await writeFile(path.join(source.migrationsDir, '20300101000000_probe', 'migration.sql'), 'CREATE TABLE "probes" ("id" INTEGER NOT NULL PRIMARY KEY);\n');
    expect(await migrateAgentDb(file, source)).toEqual(['20300101000000_probe']);
    expect(loaded).toMatchObject({ migrationEngine: true, schemaEngine: true });
  });
});
