/**
 * TRUST_PROXY decides whose `X-Forwarded-For` is believed, and so which address the rate limits
 * and sign-up caps count. The attacks: an operator writes `1` (one proxy in front) and gets the
 * address 0.0.0.1 instead, so every client behind the proxy shares the proxy's bucket; or writes
 * `true`, which either crashes the service at start or, worse, would let every client choose its
 * own address. Anything that is not a hop count, a range keyword, an address or a CIDR block
 * stops the service at start with one line naming the variable.
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAccountConfig } from '../../server/account/config.js';
import { ConfigError } from '../../server/common/config.js';
import { createHttpApp, finishHttpApp, listen, type RunningServer } from '../../server/common/http.js';
import { createLogger } from '../../server/common/log.js';
import { serviceEntry } from '../support/entries.js';
import { tempDir } from '../support/servers.js';

function startAccountProcess(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, serviceEntry('account'), {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', PORT: '0', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

/** The client address the service sees (`req.ip`) for a request from loopback with this X-Forwarded-For. */
function clientAddress(server: RunningServer, forwardedFor: string): Promise<string> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path: '/ip', headers: { 'x-forwarded-for': forwardedFor } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('TRUST_PROXY', () => {
  const servers: RunningServer[] = [];
  async function serverWith(trustProxy: string | undefined): Promise<RunningServer> {
    const config = loadAccountConfig(trustProxy === undefined ? {} : { TRUST_PROXY: trustProxy });
    const app = createHttpApp(createLogger('test', 'silent'), { trustProxy: config.trustProxy });
    app.get('/ip', (req, res) => {
      res.type('text').send(req.ip);
    });
    finishHttpApp(app);
    const server = await listen(app, '127.0.0.1', 0);
    servers.push(server);
    return server;
  }
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  it.each([
    ['true', /every sender/],
    ['yes', /every sender/],
    ['*', /every sender/],
    ['localhost', /"localhost" is not a hop count/],
    ['0x7f000001', /"0x7f000001"/],
    ['10.0.0.0/33', /"10.0.0.0\/33"/],
    ['10.0.0.1/8/8', /"10.0.0.1\/8\/8"/],
    ['fe80::1%eth0', /"fe80::1%eth0"/],
    ['127.0.0.1, nginx', /"nginx"/],
    ['-1', /"-1"/],
    ['1.5', /"1.5"/],
    [',', /is not a hop count/],
  ])('refuses TRUST_PROXY=%s (a value express would misread or crash on) naming the variable', (value, reason) => {
    expect(() => loadAccountConfig({ TRUST_PROXY: value })).toThrow(ConfigError);
    expect(() => loadAccountConfig({ TRUST_PROXY: value })).toThrow(/TRUST_PROXY: /);
    expect(() => loadAccountConfig({ TRUST_PROXY: value })).toThrow(reason);
  });

  it('TRUST_PROXY=true stops the service at start with one line naming the variable, not a crash', async () => {
    const { code, stderr } = await startAccountProcess({ TRUST_PROXY: 'true', DATA_DIR: await tempDir('trust-proxy') });
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^account: Invalid configuration: TRUST_PROXY: /);
  });

  it.each([
    ['1', 1],
    ['2', 2],
    ['0', undefined],
    ['loopback', ['loopback']],
    ['loopback, linklocal,uniquelocal', ['loopback', 'linklocal', 'uniquelocal']],
    ['10.0.0.1, 10.1.0.0/16, fd00::/8, ::1', ['10.0.0.1', '10.1.0.0/16', 'fd00::/8', '::1']],
  ])('accepts TRUST_PROXY=%s', (value, expected) => {
    expect(loadAccountConfig({ TRUST_PROXY: value }).trustProxy).toEqual(expected);
  });

  describe('which address the service counts', () => {
    let none: RunningServer;
    let oneHop: RunningServer;
    let loopback: RunningServer;
    let elsewhere: RunningServer;
    beforeAll(async () => {
      [none, oneHop, loopback, elsewhere] = await Promise.all([serverWith(undefined), serverWith('1'), serverWith('loopback'), serverWith('10.9.9.9')]);
    });

    it('TRUST_PROXY=1 means one proxy in front (not the address 0.0.0.1): the proxy-added address counts, not one the client forged before it', async () => {
      expect(await clientAddress(oneHop, '203.0.113.7')).toBe('203.0.113.7');
      // The client sent "198.51.100.1" itself; the proxy appended the address it saw.
      expect(await clientAddress(oneHop, '198.51.100.1, 203.0.113.7')).toBe('203.0.113.7');
    });

    it('no TRUST_PROXY, or a proxy list that does not name the sender: a forged X-Forwarded-For is ignored', async () => {
      expect(await clientAddress(none, '203.0.113.7')).toBe('127.0.0.1');
      expect(await clientAddress(elsewhere, '203.0.113.7')).toBe('127.0.0.1');
    });

    it('TRUST_PROXY=loopback believes a proxy on this machine', async () => {
      expect(await clientAddress(loopback, '203.0.113.7')).toBe('203.0.113.7');
    });
  });
});
