/**
 * `npm start`: the whole product on embedded defaults — the account service (PGlite under
 * DATA_DIR unless DATABASE_URL is set) and one agent whose secret is generated once into
 * DATA_DIR/agent-secret. Each runs as its own process, as in production; if one dies, both stop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const dataDir = path.resolve(process.env.DATA_DIR || './data');
mkdirSync(dataDir, { recursive: true });

const secretFile = path.join(dataDir, 'agent-secret');
if (!existsSync(secretFile)) writeFileSync(secretFile, randomBytes(32).toString('hex'), { mode: 0o600 });
const agentSecret = process.env.AGENT_SECRET || readFileSync(secretFile, 'utf8').trim();

const host = process.env.HOST || '127.0.0.1';
const accountPort = process.env.PORT || '3000';
const agentPort = process.env.AGENT_PORT || '3100';

const children: ChildProcess[] = [];
let stopping = false;

function run(name: string, entry: string, env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], { env: { ...process.env, ...env }, stdio: 'inherit' });
  child.on('exit', (code, signal) => {
    if (stopping) return;
    console.error(`${name} exited (${signal ?? code}); stopping the rest`);
    stop(typeof code === 'number' && code !== 0 ? code : 1);
  });
  children.push(child);
  return child;
}

function stop(exitCode: number): void {
  stopping = true;
  const alive = children.filter((c) => c.exitCode === null && c.signalCode === null);
  if (alive.length === 0) process.exit(exitCode);
  let left = alive.length;
  for (const child of alive) {
    child.once('exit', () => --left === 0 && process.exit(exitCode));
    child.kill('SIGTERM');
  }
}

process.once('SIGINT', () => stop(0));
process.once('SIGTERM', () => stop(0));

run('account', 'server/account/main.ts', { DATA_DIR: dataDir, HOST: host, PORT: accountPort });
run('agent', 'server/agent/main.ts', {
  HOST: host,
  AGENT_PORT: agentPort,
  AGENT_SECRET: agentSecret,
  AGENT_WORKSPACE: process.env.AGENT_WORKSPACE || path.join(dataDir, 'workspace'),
});

console.log(
  [
    '',
    `  account API   http://${host}:${accountPort}/api/v1   (OpenAPI: /api/v1/openapi.json, tRPC: /trpc)`,
    `  agent         http://${host}:${agentPort}            (secret in ${secretFile})`,
    `  data          ${dataDir}`,
    '',
  ].join('\n'),
);
