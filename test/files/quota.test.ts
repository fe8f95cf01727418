/**
 * The workspace quota keeps its last walk and counts the agent's own writes (server/agent/files/
 * quota.ts): hostile parallel writers must still never get past it together, exec's writes must be
 * seen at once, and a file rewritten in place must not be refused for bytes counted twice.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkspaceQuota } from '../../server/agent/files/quota.js';
import { execTool } from '../../server/agent/tools/exec.js';
import type { ExecResult as ShellResult } from '../../server/agent/tools/shell.js';
import { fileTools } from '../../server/agent/tools/files.js';
import { startTestAgent, tempDir, type TestAgent } from '../support/servers.js';

const MB = 1024 * 1024;
/** What the exec tool answers: the shell's result, with the quota's error when it is over. */
type ExecResult = ShellResult & { error?: { code: string } };
const ctx = { signal: new AbortController().signal, emit: () => undefined };

/** Bytes of regular files under `dir`, as they take up disk. */
async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const info = await stat(path.join(entry.parentPath, entry.name));
    total += Math.min(info.size, info.blocks * 512);
  }
  return total;
}

describe('uploads racing for the last of the quota', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await startTestAgent({ AGENT_WORKSPACE_QUOTA_MB: '2' });
  });
  afterAll(async () => agent?.stop());

  it('share what is left: of 8 parallel 700 KB uploads into 2 MB at most two land, the rest 507 and give their room back', async () => {
    const upload = async (n: number) => {
      const form = new FormData();
      form.append('file', new Blob([Buffer.alloc(700 * 1024, n)]), `part-${n}.bin`);
      const res = await fetch(`${agent.url}/files/upload`, { method: 'POST', headers: agent.auth, body: form });
      return { status: res.status, body: (await res.json()) as { code?: string } };
    };
    const results = await Promise.all(Array.from({ length: 8 }, (_, n) => upload(n)));
    const ok = results.filter((r) => r.status === 200);
    expect(ok.length).toBeLessThanOrEqual(2);
    for (const refused of results.filter((r) => r.status !== 200)) expect(refused).toMatchObject({ status: 507, body: { code: 'QUOTA_EXCEEDED' } });
    expect(await diskBytes(agent.workspace)).toBeLessThanOrEqual(2 * MB);
    // The refused ones gave back what they held (racers may all lose, but not for good).
    if (ok.length < 2) expect((await upload(100)).status).toBe(200);
  });
});

describe('the agent tools and the quota', () => {
  let ws: string;
  beforeAll(async () => {
    ws = await tempDir('quota-ws');
  });
  afterAll(async () => rm(ws, { recursive: true, force: true }));

  it('parallel write_file calls together stay within the quota', async () => {
    const dir = path.join(ws, 'parallel');
    const quota = new WorkspaceQuota(ws, 1 * MB);
    const tools = fileTools(ws, quota);
    const content = 'w'.repeat(300 * 1024);
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, n) => tools.write_file!.execute({ path: `parallel/f${n}.txt`, content }, ctx)));
    const written = results.filter((r) => r.status === 'fulfilled').length;
    expect(written).toBeGreaterThanOrEqual(1);
    expect(written).toBeLessThanOrEqual(3);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ appCode: 'QUOTA_EXCEEDED' });
    expect(await diskBytes(ws)).toBeLessThanOrEqual(MB);
    await rm(dir, { recursive: true, force: true });
  });

  it('a file rewritten in place is not refused for bytes counted twice', async () => {
    const quota = new WorkspaceQuota(ws, 1 * MB);
    const tools = fileTools(ws, quota);
    // Counted, ten rewrites are 3 MB; on disk they stay 300 KB, which a walk confirms before any refusal.
    const content = 'r'.repeat(300 * 1024);
    for (let i = 0; i < 10; i++) await tools.write_file!.execute({ path: 'rewritten.txt', content }, ctx);
    expect(await diskBytes(ws)).toBeLessThanOrEqual(MB);
    await rm(path.join(ws, 'rewritten.txt'));
  });

  it("sees exec's writes at once: a filler makes the next write_file 507, and deleting makes room again", async () => {
    const quota = new WorkspaceQuota(ws, 1 * MB);
    const tools = { ...fileTools(ws, quota), ...execTool(ws, { timeoutMs: 10_000, quota }) };
    // A walk is cached first, so only the exec's own bookkeeping can make the next check see its file.
    await tools.write_file!.execute({ path: 'small.txt', content: 'x' }, ctx);
    const filled = (await tools.exec!.execute({ command: 'head -c 1200000 /dev/urandom > filler.bin; echo done' }, ctx)) as ExecResult;
    expect(filled.output).toContain('done');
    expect(filled.error?.code).toBe('QUOTA_EXCEEDED');
    await expect(tools.write_file!.execute({ path: 'more.txt', content: 'y' }, ctx)).rejects.toMatchObject({ appCode: 'QUOTA_EXCEEDED' });
    const cleared = (await tools.exec!.execute({ command: 'rm filler.bin; echo gone' }, ctx)) as ExecResult;
    expect(cleared.error).toBeUndefined();
    expect(await tools.write_file!.execute({ path: 'more.txt', content: 'y' }, ctx)).toContain('wrote 1 bytes');
  });
});
