/**
 * Slow and stuck clients of the agent: a slowloris upload (stalled, or trickling bytes) is cut
 * with 408 UPLOAD_STALLED and leaves no partial file; the agent keeps serving others meanwhile.
 */
import { readdir } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../chat/helpers.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';

async function partFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (entry.name.endsWith('.part')) out.push(path.join(entry.parentPath, entry.name));
  return out;
}

/** Opens an upload by hand, sends `head` bytes of the body, then calls `then` with the socket. */
function rawUpload(agent: TestAgent, drip: (write: (s: string) => void) => void): Promise<{ status: number; ms: number; text: string }> {
  const url = new URL(agent.url);
  const boundary = 'slowloris';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(
        `POST /files/upload HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${agent.secret}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${head.length + 1_000_000}\r\n\r\n${head}${'x'.repeat(2000)}`,
      );
      drip((s) => {
        if (!socket.destroyed) socket.write(s);
      });
    });
    let text = '';
    socket.on('data', (d) => (text += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), ms: Date.now() - started, text }));
    setTimeout(() => {
      socket.destroy();
      reject(new Error('the agent never cut the upload'));
    }, 15_000);
  });
}

describe('slow clients', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await startTestAgent({ UPLOAD_IDLE_TIMEOUT_SECONDS: '1' });
  });
  afterAll(() => agent.stop());

  it('a stalled upload is cut with 408 and leaves no partial file', async () => {
    const result = await rawUpload(agent, () => undefined);
    expect(result.status).toBe(408);
    expect(result.text).toContain('UPLOAD_STALLED');
    expect(result.ms).toBeLessThan(5_000);
    await until(async () => (await partFiles(agent.workspace)).length === 0);
  });

  it('a trickling upload (one byte every 100 ms) is cut too, while others are served', async () => {
    let timer: NodeJS.Timeout | undefined;
    const pending = rawUpload(agent, (write) => {
      timer = setInterval(() => write('y'), 100);
    });
    // Meanwhile the agent answers others.
    expect((await fetch(`${agent.url}/health`)).status).toBe(200);
    const result = await pending;
    clearInterval(timer);
    expect(result.status).toBe(408);
    expect(result.ms).toBeLessThan(5_000);
    await until(async () => (await partFiles(agent.workspace)).length === 0);
  });

  it('a normal upload on the same agent still works', async () => {
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(200_000, 1)]), 'ok.bin');
    const res = await fetch(`${agent.url}/files/upload`, { method: 'POST', headers: agent.auth, body: form });
    expect(res.status).toBe(200);
  });
});
