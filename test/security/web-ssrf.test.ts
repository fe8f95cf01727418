/**
 * A hostile page, prompt or tenant aims the agent's `web_fetch` at the service's own network. The
 * real egress gateway (its Unix socket, as an agent reaches it) answers `POST /web/fetch` on its
 * own host; each SSRF spelling of a non-public address — decimal, hex, octal, short, mapped and
 * other IPv6 forms, trailing dots, userinfo, 0.0.0.0, a name resolving to loopback, non-http
 * schemes, redirect chains into private space, this service's own port — must be refused with its
 * reason, and the "private" server listening on loopback must never see a request. One loopback
 * page server is made "public" by AGENT_WEB_TEST_PUBLIC (its port only), so that the redirect,
 * size and time caps can be proven on answers that really arrive.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { GATEWAY_SELF_HOST } from '@contracts/agent/model-source.js';
import { WEB_FETCH_HEADERS, WEB_FETCH_MAX_BYTES } from '@contracts/agent/web.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressGateway, type OpenGateway } from '../../server/account/agents/egress/gateway.js';
import { WebTools, type WebPolicy } from '../../server/account/agents/egress/web.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'web-ssrf-'));
const sockets = { agent: path.join(dir, 'egress.sock'), exec: path.join(dir, 'exec.sock') };
const log = pino({ level: 'silent' });
const listen = async (server: http.Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

/** What must never be reached: it counts every request it gets. */
let secretHits = 0;
const secret = http.createServer((_req, res) => {
  secretHits++;
  res.end('internal secret');
});
/** Stands for this service itself: listed as "public" too, and still refused. */
const self = http.createServer((_req, res) => res.end('the account service'));
/** The one "public" page server: redirects, big, slow and compressed answers. */
let T = 0;
/** When each slow answer's connection was closed (by the gateway). */
const slowClosed: number[] = [];
/** When each request for a page that never answers arrived. */
const hanging: number[] = [];
const bomb = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 1 });
const pages = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://pages');
  const to = url.searchParams.get('to');
  if (url.pathname === '/redirect' && to) return void res.writeHead(302, { location: to }).end();
  if (url.pathname.startsWith('/chain/')) {
    const left = Number(url.pathname.split('/')[2]);
    return void res.writeHead(301, { location: left > 0 ? `/chain/${left - 1}` : '/hello' }).end();
  }
  if (url.pathname === '/hello') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('hello from a public page');
  if (url.pathname === '/huge') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let left = 160; // 10 MB
    const pump = () => {
      while (left > 0 && res.write(chunk)) left--;
      if (left-- > 0) res.once('drain', pump);
      else res.end();
    };
    return pump();
  }
  if (url.pathname === '/bomb') {
    // 64 MB of zeros in about 64 KB of gzip: the cap counts what comes out of the decoder.
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
    return void res.end(bomb);
  }
  if (url.pathname === '/hang') {
    hanging.push(Date.now());
    res.once('close', () => slowClosed.push(Date.now()));
    return;
  }
  if (url.pathname === '/slow') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('first part;');
    const timer = setInterval(() => res.write('.'), 200);
    res.once('close', () => {
      clearInterval(timer);
      slowClosed.push(Date.now());
    });
    return;
  }
  res.writeHead(404).end();
});

let S = 0;
let P = 0;
let open: OpenGateway;
const policy = (over: Partial<WebPolicy> = {}): WebPolicy => ({
  enabled: true,
  allowDomains: [],
  denyDomains: ['denied.example'],
  search: undefined,
  timeoutMs: 1500,
  maxRedirects: 3,
  testPublic: [`127.0.0.1:${P}`, `127.0.0.1:${S}`],
  ...over,
});

beforeAll(async () => {
  T = await listen(secret);
  S = await listen(self);
  P = await listen(pages);
  const web = new WebTools(policy(), { ports: [S], hosts: ['accounts.example'] }, log);
  const gateway = new EgressGateway([], log, { limits: { maxConnections: 32, idleTimeoutMs: 10_000, maxDurationMs: 60_000, maxBodyBytes: 1 << 20 }, web });
  open = await gateway.open(sockets, { agentId: 'agent-web', userId: 'user-web' });
});
afterAll(async () => {
  await open?.close();
  for (const server of [secret, self, pages]) {
    server.closeAllConnections();
    server.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  cut: boolean;
}

/** A request to the gateway's own host, as the agent's web tools send it. */
function ask(pathname: string, body: unknown, { socketPath = sockets.agent, method = 'POST' } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request({ socketPath, path: pathname, method, headers: { host: GATEWAY_SELF_HOST, 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      const done = (cut: boolean) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), cut });
      res.once('end', () => done(false));
      res.once('error', () => done(true));
      res.once('aborted', () => done(true));
    });
    req.once('error', reject);
    req.end(method === 'POST' ? payload : undefined);
  });
}
const fetchVia = (url: string) => ask('/web/fetch', { url });
const errorOf = (answer: Answer) => (JSON.parse(answer.body.toString()) as { error: { code: string; message: string } }).error;

describe('web_fetch refuses every spelling of a non-public address, with the reason', () => {
  const refused: Array<[string, RegExp]> = [
    ['http://127.0.0.1:PORT/', /127\.0\.0\.1 is a loopback address/],
    ['http://2130706433:PORT/', /loopback/], // decimal
    ['http://0x7f000001:PORT/', /loopback/], // hex
    ['http://0x7f.0.0.1:PORT/', /loopback/],
    ['http://0177.0.0.1:PORT/', /loopback/], // octal
    ['http://127.1:PORT/', /loopback/], // short
    ['http://127.0.0.1.:PORT/', /loopback/], // trailing dot
    ['http://[::1]:PORT/', /loopback/],
    ['http://[::ffff:127.0.0.1]:PORT/', /carries 127\.0\.0\.1, a loopback/], // mapped
    ['http://[::ffff:7f00:1]:PORT/', /carries 127\.0\.0\.1/],
    ['http://[::127.0.0.1]:PORT/', /carries 127\.0\.0\.1/], // compatible
    ['http://[64:ff9b::7f00:1]:PORT/', /carries 127\.0\.0\.1/], // NAT64
    ['http://[2002:7f00:1::]:PORT/', /carries 127\.0\.0\.1/], // 6to4
    ['http://0.0.0.0:PORT/', /unspecified address/],
    ['http://0:PORT/', /unspecified address/],
    ['http://[::]:PORT/', /unspecified address/],
    ['http://localhost:PORT/', /localhost resolves to (127\.0\.0\.1|::1)/], // after DNS
    ['http://169.254.169.254/latest/meta-data/', /metadata/],
    ['http://2852039166/latest/meta-data/', /metadata/],
    ['http://[fd00:ec2::254]/', /metadata/],
    ['http://100.100.100.200/', /metadata/],
    ['http://10.0.0.5/', /private network/],
    ['http://172.16.0.1/', /private network/],
    ['http://192.168.1.1/', /private network/],
    ['http://100.64.0.1/', /carrier-grade NAT/],
    ['http://169.254.1.1/', /link-local/],
    ['http://[fe80::1]/', /link-local/],
    ['http://[fc00::1]/', /private network/],
    ['http://224.0.0.1/', /multicast/],
    ['http://255.255.255.255/', /broadcast/],
    ['http://240.0.0.1/', /reserved/],
  ];
  it.each(refused)('%s: 403 WEB_ADDRESS_REFUSED', async (spelt, reason) => {
    const url = spelt.replace(':PORT/', `:${T}/`);
    const answer = await fetchVia(url);
    expect(answer.status, url).toBe(403);
    const error = errorOf(answer);
    expect(error.code).toBe('WEB_ADDRESS_REFUSED');
    expect(error.message).toMatch(reason);
  });

  const badUrls: Array<[string, RegExp]> = [
    ['http://user:pw@127.0.0.1:PORT/', /user name or password/], // userinfo
    ['http://public.example@127.0.0.1:PORT/', /user name or password/],
    ['http://127.0.0.1:PORT@public.example/', /user name or password/],
    ['file:///etc/passwd', /file: URLs are not fetched/],
    ['gopher://127.0.0.1:PORT/', /gopher: URLs/],
    ['ftp://ftp.example/', /ftp: URLs/],
    ['data:text/plain,hello', /data: URLs/],
    ['javascript:alert(1)', /javascript: URLs/],
    ['not a url', /Not a URL/],
  ];
  it.each(badUrls)('%s: 400 WEB_URL_REFUSED', async (spelt, reason) => {
    const answer = await fetchVia(spelt.replace(':PORT', `:${T}`));
    expect(answer.status).toBe(400);
    expect(errorOf(answer)).toMatchObject({ code: 'WEB_URL_REFUSED', message: expect.stringMatching(reason) });
  });

  it('a trailing-dot name reaches nothing either (refused after DNS, or not resolved at all)', async () => {
    const answer = await fetchVia(`http://localhost.:${T}/`);
    expect(['WEB_ADDRESS_REFUSED', 'WEB_FETCH_FAILED']).toContain(errorOf(answer).code);
  });

  it("this service's own port and names are refused even when listed as public", async () => {
    const own = await fetchVia(`http://127.0.0.1:${S}/`);
    expect(own.status).toBe(403);
    expect(errorOf(own).message).toMatch(new RegExp(`port ${S} is this service itself`));
    const byName = await fetchVia('https://accounts.example./api/v1/me');
    expect(errorOf(byName)).toMatchObject({ code: 'WEB_ADDRESS_REFUSED', message: 'accounts.example is this service itself' });
  });

  it("the operator's deny list holds before any resolution, subdomains included", async () => {
    for (const url of ['http://denied.example/', 'https://www.DENIED.example./x']) {
      expect(errorOf(await fetchVia(url))).toMatchObject({ code: 'WEB_DOMAIN_REFUSED' });
    }
  });

  it('an allow list lets nothing else through', () => {
    const strict = new WebTools(policy({ allowDomains: ['docs.example'] }), { ports: [], hosts: [] }, log);
    expect(() => strict.check('https://docs.example/a')).not.toThrow();
    expect(() => strict.check('https://api.docs.example/a')).not.toThrow();
    expect(() => strict.check('https://docs.example.evil/a')).toThrow(/not on the operator's allow list/);
    expect(() => strict.check('https://evildocs.example/a')).toThrow(/not on the operator's allow list/);
  });

  it('AGENT_WEB_TEST_PUBLIC never opens a cloud-metadata address', () => {
    const loose = new WebTools(policy({ testPublic: ['169.254.169.254:80', '[fd00:ec2::254]:80', '10.0.0.5:80'] }), { ports: [], hosts: [] }, log);
    expect(() => loose.check('http://169.254.169.254/latest/meta-data/')).toThrow(/metadata/);
    expect(() => loose.check('http://[fd00:ec2::254]/')).toThrow(/metadata/);
    expect(() => loose.check('http://10.0.0.5/')).not.toThrow();
  });

  afterAll(() => expect(secretHits).toBe(0));
});

describe('redirects are followed by the gateway, each one judged again', () => {
  it('a public page answers through the gateway, with its status and final URL', async () => {
    const answer = await fetchVia(`http://127.0.0.1:${P}/chain/2`);
    expect(answer.status).toBe(200);
    expect(answer.body.toString()).toBe('hello from a public page');
    expect(answer.headers[WEB_FETCH_HEADERS.status]).toBe('200');
    expect(answer.headers[WEB_FETCH_HEADERS.url]).toBe(`http://127.0.0.1:${P}/hello`);
  });

  it.each([
    ['http://127.0.0.1:PORT/', 'WEB_ADDRESS_REFUSED', /redirected to http:\/\/127\.0\.0\.1:\d+\/: 127\.0\.0\.1 is a loopback address/],
    ['http://2130706433:PORT/', 'WEB_ADDRESS_REFUSED', /loopback/],
    ['http://[::ffff:127.0.0.1]:PORT/', 'WEB_ADDRESS_REFUSED', /carries 127\.0\.0\.1/],
    ['http://169.254.169.254/latest/meta-data/iam/', 'WEB_ADDRESS_REFUSED', /metadata/],
    ['http://localhost:PORT/', 'WEB_ADDRESS_REFUSED', /resolves to/],
    ['file:///etc/passwd', 'WEB_URL_REFUSED', /file: URLs/],
    ['http://u:p@127.0.0.1:PORT/', 'WEB_URL_REFUSED', /user name or password/],
    ['http://denied.example/', 'WEB_DOMAIN_REFUSED', /deny list/],
  ])('into %s: refused', async (to, code, reason) => {
    const target = to.replace(':PORT/', `:${T}/`);
    const answer = await fetchVia(`http://127.0.0.1:${P}/redirect?to=${encodeURIComponent(target)}`);
    expect(errorOf(answer)).toMatchObject({ code, message: expect.stringMatching(reason) });
    expect(secretHits).toBe(0);
  });

  it('a chain longer than AGENT_WEB_MAX_REDIRECTS: 502 WEB_TOO_MANY_REDIRECTS', async () => {
    const answer = await fetchVia(`http://127.0.0.1:${P}/chain/5`);
    expect(answer.status).toBe(502);
    expect(errorOf(answer).code).toBe('WEB_TOO_MANY_REDIRECTS');
  });
});

describe('size and time caps', () => {
  it('a 10 MB body arrives cut at WEB_FETCH_MAX_BYTES', async () => {
    const answer = await fetchVia(`http://127.0.0.1:${P}/huge`);
    expect(answer.status).toBe(200);
    expect(answer.body.length).toBe(WEB_FETCH_MAX_BYTES);
  });

  it('a compressed bomb is cut at the same size after decoding', async () => {
    const answer = await fetchVia(`http://127.0.0.1:${P}/bomb`);
    expect(answer.body.length).toBe(WEB_FETCH_MAX_BYTES);
  });

  it('a body still trickling in at the time cap is cut off', async () => {
    const started = Date.now();
    const answer = await fetchVia(`http://127.0.0.1:${P}/slow`);
    expect(answer.cut).toBe(true);
    expect(answer.body.toString()).toMatch(/^first part;/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('an agent that goes away (its run stopped) ends the fetch at once, not at the time cap: mid-body and before any answer', async () => {
    const web = new WebTools(policy({ timeoutMs: 30_000 }), { ports: [], hosts: [] }, log);
    const gateway = new EgressGateway([], log, { limits: { maxConnections: 4, idleTimeoutMs: 60_000, maxDurationMs: 60_000, maxBodyBytes: 1 << 20 }, web });
    const socket = path.join(dir, 'gone.sock');
    const opened = await gateway.open({ agent: socket }, { agentId: 'a4', userId: 'u4' });
    const post = (page: string) => {
      const req = http.request({ socketPath: socket, path: '/web/fetch', method: 'POST', headers: { host: GATEWAY_SELF_HOST } });
      req.once('error', () => {});
      req.end(JSON.stringify({ url: `http://127.0.0.1:${P}/${page}` }));
      return req;
    };
    const until = async (done: () => boolean) => {
      for (const deadline = Date.now() + 5_000; !done() && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
    };
    try {
      // Mid-body: the first bytes came, then the agent left.
      let before = slowClosed.length;
      const slow = post('slow');
      await new Promise<void>((resolve) => slow.once('response', (res) => res.once('data', () => resolve())));
      slow.destroy();
      let left = Date.now();
      await until(() => slowClosed.length > before);
      expect(slowClosed.length).toBe(before + 1);
      expect(slowClosed.at(-1)! - left).toBeLessThan(2_000);
      // Before any answer: the page holds its headers back.
      before = slowClosed.length;
      const asked = hanging.length;
      const hang = post('hang');
      await until(() => hanging.length > asked);
      hang.destroy();
      left = Date.now();
      await until(() => slowClosed.length > before);
      expect(slowClosed.length).toBe(before + 1);
      expect(slowClosed.at(-1)! - left).toBeLessThan(2_000);
    } finally {
      await opened.close();
    }
  });

  it('a page that never answers: 504 WEB_TIMEOUT', async () => {
    const silent = http.createServer(() => {});
    const port = await listen(silent);
    const web = new WebTools(policy({ testPublic: [`127.0.0.1:${port}`], timeoutMs: 300 }), { ports: [], hosts: [] }, log);
    const gateway = new EgressGateway([], log, { limits: { maxConnections: 4, idleTimeoutMs: 10_000, maxDurationMs: 60_000, maxBodyBytes: 1 << 20 }, web });
    const socket = path.join(dir, 'silent.sock');
    const opened = await gateway.open({ agent: socket }, { agentId: 'a2', userId: 'u2' });
    try {
      const answer = await ask('/web/fetch', { url: `http://127.0.0.1:${port}/` }, { socketPath: socket });
      expect(answer.status).toBe(504);
      expect(errorOf(answer).code).toBe('WEB_TIMEOUT');
    } finally {
      await opened.close();
      silent.closeAllConnections();
      silent.close();
    }
  });
});

describe('the request itself', () => {
  it('GET, a malformed body or one over 16 KB are refused', async () => {
    expect((await ask('/web/fetch', '', { method: 'GET' })).status).toBe(405);
    expect(errorOf(await ask('/web/fetch', '{nope')).code).toBe('MALFORMED_JSON');
    expect(errorOf(await ask('/web/fetch', { url: 'x'.repeat(20_000) })).code).toBe('EGRESS_BODY_TOO_LARGE');
    expect(errorOf(await ask('/web/fetch', { link: 'http://a.example/' })).code).toBe('VALIDATION_FAILED');
  });

  it("exec commands' relay socket does not get the web tools (nor a search without a provider)", async () => {
    expect(errorOf(await ask('/web/fetch', { url: `http://127.0.0.1:${P}/hello` }, { socketPath: sockets.exec })).code).toBe('EGRESS_DENIED');
    expect(errorOf(await ask('/web/search', { query: 'x' })).code).toBe('WEB_SEARCH_NOT_CONFIGURED');
  });

  it('AGENT_WEB=off refuses both tools', async () => {
    const web = new WebTools(policy({ enabled: false }), { ports: [], hosts: [] }, log);
    expect(web.offered).toEqual([]);
    const gateway = new EgressGateway([], log, { limits: { maxConnections: 4, idleTimeoutMs: 10_000, maxDurationMs: 60_000, maxBodyBytes: 1 << 20 }, web });
    const socket = path.join(dir, 'off.sock');
    const opened = await gateway.open({ agent: socket }, { agentId: 'a3', userId: 'u3' });
    try {
      expect(errorOf(await ask('/web/fetch', { url: `http://127.0.0.1:${P}/hello` }, { socketPath: socket })).code).toBe('WEB_DISABLED');
    } finally {
      await opened.close();
    }
  });
});
