import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelSpec } from '@contracts/agent/model-spec.js';
import { loadAgentConfig } from '../../server/agent/config.js';
import { execTool } from '../../server/agent/tools/exec.js';
import { EXEC_OUTPUT_MAX_BYTES, type ExecResult } from '../../server/agent/tools/shell.js';
import { fileTools } from '../../server/agent/tools/files.js';
import { WorkspaceQuota } from '../../server/agent/files/quota.js';
import type { ChatEvent } from '@contracts/agent/chat.js';
import { toolResults } from '../support/scripted-model.js';
import { tempDir } from '../support/servers.js';
import { events } from '../support/sse.js';
import { startChatRig } from './helpers.js';

/** A quota no test here comes near. */
const roomy = (ws: string) => new WorkspaceQuota(ws, 1024 * 1024 * 1024);

let root: string;
let ws: string;
beforeAll(async () => {
  root = await tempDir('tools');
  ws = path.join(root, 'ws');
  await mkdir(path.join(ws, 'docs'), { recursive: true });
  await writeFile(path.join(root, 'outside.txt'), 'outside');
  await writeFile(path.join(ws, 'docs', 'a.txt'), 'alpha');
  await symlink(path.join(root, 'outside.txt'), path.join(ws, 'link-out'));
  await symlink(root, path.join(ws, 'dir-out'));
  await symlink(path.join(ws, 'docs', 'a.txt'), path.join(ws, 'link-in'));
  await writeFile(path.join(ws, '.env.production'), 'K=V');
  await symlink(path.join(ws, '.env.production'), path.join(ws, 'innocent'));
});
afterAll(async () => {
  const { rm } = await import('node:fs/promises');
  await rm(root, { recursive: true, force: true });
});

// The guard itself has its own corpus (test/files/hostile-paths.test.ts); these check that the tools use it.
describe('tools stay inside the workspace', () => {
  const ctx = { signal: new AbortController().signal, emit: () => undefined };

  it.each(['docs/a.txt', './docs/../docs/a.txt', 'link-in'])('read_file reads %s', async (rel) => {
    expect(await fileTools(ws, roomy(ws)).read_file!.execute({ path: rel }, ctx)).toBe('alpha');
  });

  it.each([
    '../outside.txt',
    '/etc/passwd',
    'docs/../../outside.txt',
    'link-out',
    'dir-out/outside.txt',
    '.env',
    '.ENV',
    '.env.production',
    'docs/.env.local',
    'agent.db',
    'Agent.DB-shm',
    'deep/x/agent.db-wal',
    'innocent',
    'a\u0000b',
    'C:\\Windows',
  ])('read_file, write_file and send_file refuse %s with 403 FORBIDDEN_PATH', async (rel) => {
    const tools = fileTools(ws, roomy(ws));
    await expect(tools.read_file!.execute({ path: rel }, ctx)).rejects.toMatchObject({ status: 403, appCode: 'FORBIDDEN_PATH' });
    await expect(tools.write_file!.execute({ path: rel, content: 'x' }, ctx)).rejects.toMatchObject({ status: 403, appCode: 'FORBIDDEN_PATH' });
    await expect(tools.send_file!.execute({ path: rel }, ctx)).rejects.toMatchObject({ status: 403, appCode: 'FORBIDDEN_PATH' });
    expect(await readFile(path.join(root, 'outside.txt'), 'utf8')).toBe('outside');
  });
});

describe('file tools', () => {
  const ctx = (emitted: ChatEvent[] = []) => ({ signal: new AbortController().signal, emit: (e: ChatEvent) => emitted.push(e) });

  it('list_files hides protected files and follows depth', async () => {
    const listing = (await fileTools(ws, roomy(ws)).list_files!.execute({}, ctx())) as string;
    expect(listing).toContain('docs/');
    expect(listing).toContain('docs/a.txt (5 bytes)');
    expect(listing).not.toMatch(/\.env/);
  });

  it('write_file through a symlinked directory is refused and writes nothing outside', async () => {
    await expect(fileTools(ws, roomy(ws)).write_file!.execute({ path: 'dir-out/pwned.txt', content: 'x' }, ctx())).rejects.toMatchObject({
      appCode: 'FORBIDDEN_PATH',
    });
    await expect(readFile(path.join(root, 'pwned.txt'))).rejects.toThrow();
  });

  it('read_file caps what it returns, send_file emits a file event', async () => {
    await writeFile(path.join(ws, 'big.txt'), 'z'.repeat(150_000));
    const text = (await fileTools(ws, roomy(ws)).read_file!.execute({ path: 'big.txt' }, ctx())) as string;
    expect(text.length).toBeLessThan(100_100);
    expect(text).toMatch(/truncated: 150000 bytes/);
    const emitted: ChatEvent[] = [];
    await fileTools(ws, roomy(ws)).send_file!.execute({ path: './docs/a.txt' }, ctx(emitted));
    expect(emitted).toEqual([{ type: 'file', path: 'docs/a.txt', caption: '' }]);
  });
});

describe('exec', () => {
  const exec = (command: string, timeoutMs = 5_000, signal = new AbortController().signal) =>
    execTool(ws, { timeoutMs, quota: roomy(ws) }).exec!.execute({ command }, { signal, emit: () => undefined }) as Promise<ExecResult>;

  it('runs in the workspace and reports the exit code', async () => {
    const result = await exec('pwd; cat docs/a.txt; exit 3');
    expect(result.exit_code).toBe(3);
    expect(result.output).toContain('alpha');
    expect(result.output.split('\n')[0]).toBe(await import('node:fs/promises').then((f) => f.realpath(ws)));
  });

  it('kills a command at its timeout, with its children', async () => {
    const started = Date.now();
    const result = await exec('sleep 5 & sleep 5; echo never', 200);
    expect(result.timed_out).toBe(true);
    expect(result.output).not.toContain('never');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('caps the output', async () => {
    const result = await exec('head -c 200000 /dev/zero | tr "\\0" "x"');
    expect(result.truncated).toBe(true);
    expect(result.output.length).toBe(EXEC_OUTPUT_MAX_BYTES);
  });

  it('does not pass the agent secrets on', async () => {
    process.env.AGENT_SECRET_TEST_PROBE = 'leak';
    process.env.SOME_API_KEY = 'leak';
    try {
      const result = await exec('env');
      expect(result.output).not.toContain('leak');
    } finally {
      delete process.env.AGENT_SECRET_TEST_PROBE;
      delete process.env.SOME_API_KEY;
    }
  });

  it('stops with the run', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const result = await exec('sleep 5', 5_000, controller.signal);
    expect(result.signal).toBe('SIGKILL');
  });

  it('is not offered to the model with AGENT_EXEC=off, and a call to it is a tool error', async () => {
    const rig = await startChatRig({ AGENT_EXEC: 'off' });
    try {
      rig.model.queue({ toolCalls: [{ name: 'exec', args: { command: 'touch pwned' } }] }, { text: 'no exec' });
      const frames = await rig.chat('noexec', 'run something');
      expect(events(frames).map((e) => e.type)).toEqual(['tool_use', 'text', 'done']);
      expect(rig.model.requests[0]!.tools!.map((t) => t.function.name)).not.toContain('exec');
      expect(toolResults(rig.model.requests[1]!)[0]!.content).toMatch(/unavailable tool/);
      await expect(readFile(path.join(rig.agent.workspace, 'pwned'))).rejects.toThrow();
    } finally {
      await rig.stop();
    }
  });
});

describe('MODEL and chat configuration', () => {
  it('parses the three MODEL forms', () => {
    expect(parseModelSpec('openai-compatible:http://127.0.0.1:11434/v1/#llama3.2:3b')).toEqual({
      provider: 'openai-compatible',
      baseURL: 'http://127.0.0.1:11434/v1',
      modelId: 'llama3.2:3b',
    });
    expect(parseModelSpec('openai:gpt-4.1-mini')).toEqual({ provider: 'openai', modelId: 'gpt-4.1-mini' });
    expect(parseModelSpec('anthropic:claude-sonnet-4-5')).toEqual({ provider: 'anthropic', modelId: 'claude-sonnet-4-5' });
  });

  it.each([
    [{ MODEL: 'gpt-4' }, 'MODEL'],
    [{ MODEL: 'openai-compatible:ftp://x#m' }, 'MODEL'],
    [{ MODEL: 'openai-compatible:http://x' }, 'MODEL'],
    [{ MODEL: 'anthropic:' }, 'MODEL'],
    [{ AGENT_EXEC: 'maybe' }, 'AGENT_EXEC'],
    [{ AGENT_RUN_TIMEOUT: '0' }, 'AGENT_RUN_TIMEOUT'],
    [{ AGENT_MAX_STEPS: '1.5' }, 'AGENT_MAX_STEPS'],
    [{ AGENT_KEEPALIVE_INTERVAL: '-1' }, 'AGENT_KEEPALIVE_INTERVAL'],
  ])('refuses %o naming %s', (env, name) => {
    expect(() => loadAgentConfig({ AGENT_SECRET: 'a-long-enough-secret', ...env })).toThrow(new RegExp(`${name}: `));
  });

  it('has defaults: exec on, 2 s keepalive, 600 s run timeout, 20 steps', () => {
    const { chat } = loadAgentConfig({ AGENT_SECRET: 'a-long-enough-secret' });
    expect(chat).toMatchObject({ model: undefined, execEnabled: true, keepaliveMs: 2_000, runTimeoutMs: 600_000, maxSteps: 20, streamGraceMs: 30_000 });
  });
});
