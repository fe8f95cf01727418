/**
 * `/dev/outbox` (DEV_OUTBOX=1, no SMTP_URL, not production) lists every sign-in mail: links and
 * codes that open their accounts. The attack: a stranger on the network (the service listening
 * on HOST=0.0.0.0, as in a container or on a shared machine) or behind a reverse proxy on the
 * same machine reads someone's sign-in code there and signs in as them. It is served to callers
 * on this machine only, and the start says so.
 */
import { request } from 'node:http';
import os from 'node:os';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestAccount, type TestAccount } from '../support/servers.js';

const VICTIM = 'victim@example.com';

/** An address of this machine that is not loopback (the service is reached over the network from it). */
const networkAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((entry) => entry !== undefined && !entry.internal && entry.family === 'IPv4')?.address;

function get(host: string, port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    // The client's own end on the same address: the service sees the caller as `host`.
    const req = request({ host, port, path, headers, localAddress: host }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the development outbox', () => {
  let account: TestAccount;
  let port: number;
  const lines: Array<{ msg: string; host?: string }> = [];

  beforeAll(async () => {
    const log = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()));
          done();
        },
      }),
    );
    account = await startTestAccount('pglite', { DEV_OUTBOX: '1', HOST: '0.0.0.0', LOG_LEVEL: 'info' }, { log });
    port = Number(new URL(account.url).port);
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/auth/login/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: VICTIM }),
    });
    expect(res.status).toBe(200);
    await account.services.mail.idle();
  });
  afterAll(() => account?.stop());

  it('a developer on this machine reads the outbox', async () => {
    for (const path of ['/dev/outbox', '/dev/outbox.json']) {
      const res = await get('127.0.0.1', port, path);
      expect(res.status).toBe(200);
      expect(res.body).toContain(VICTIM);
    }
  });

  it.skipIf(networkAddress === undefined)('a stranger on the network cannot read sign-in codes from /dev/outbox (HOST=0.0.0.0)', async () => {
    for (const path of ['/dev/outbox', '/dev/outbox.json']) {
      const res = await get(networkAddress!, port, path);
      expect(res.status).toBe(403);
      expect(res.body).not.toContain(VICTIM);
      expect(JSON.parse(res.body)).toMatchObject({ code: 'FORBIDDEN' });
    }
  });

  it('a stranger relayed by a reverse proxy on this machine cannot read /dev/outbox', async () => {
    const relayed: Record<string, string>[] = [{ 'x-forwarded-for': '203.0.113.9' }, { forwarded: 'for=203.0.113.9' }];
    for (const headers of relayed) {
      const res = await get('127.0.0.1', port, '/dev/outbox.json', headers);
      expect(res.status).toBe(403);
      expect(res.body).not.toContain(VICTIM);
    }
  });

  it('the start says the outbox is on, and for whom', () => {
    const line = lines.find((entry) => entry.msg.includes('/dev/outbox'));
    expect(line?.msg).toMatch(/this machine only/);
    expect(line?.host).toBe('0.0.0.0');
  });
});
