/**
 * The reference MCP server (`@modelcontextprotocol/server-everything`, streamable HTTP) as a process
 * of its own on loopback: what connector tests and bench/connectors.ts talk to.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { freePort } from './servers.js';

export interface EverythingServer {
  /** `http://127.0.0.1:<port>/mcp`. */
  url: string;
  process: ChildProcess;
  /** SIGKILL, as a crash. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

const entry = path.join(path.dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json')), 'dist/index.js');

export async function startEverythingServer(): Promise<EverythingServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [entry, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.resume();
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`server-everything did not start: ${seen}`)), 20_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('listening on port')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${seen}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const end = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return { url: `http://127.0.0.1:${port}/mcp`, process: child, kill: () => end('SIGKILL'), stop: () => end('SIGTERM') };
}
