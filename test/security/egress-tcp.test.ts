/**
 * The egress gateway's TCP address for agents in Kubernetes pods (EgressGateway.listenTcp with the
 * provisioner's token check, provisioners/kubernetes/objects.ts), driven as a hostile tenant
 * would: a real gateway on loopback, a real upstream standing in for the model host, and the
 * agent's own client (server/agent/net/egress.ts). Without its own valid token nobody gets
 * through, a token is bound to its agent, the operator's key is added on the way out but never
 * echoed, the agent's credential never leaves, and one agent's bounds hold across connections
 * without touching another's.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressGateway, type OpenGateway } from '../../server/account/agents/egress/gateway.js';
import { egressToken, egressTokenChecker } from '../../server/account/agents/provisioners/kubernetes/objects.js';
import { gatewayFetch } from '../../server/agent/net/egress.js';

const OPERATOR_KEY = 'sk-operator-egress-tcp-test';
const quiet = pino({ level: 'silent' }, new Writable({ write: (_c, _e, cb) => cb() }));

interface TestAgentRow {
  id: string;
  secret: string;
  userId: string | null;
}
const alice: TestAgentRow = { id: randomUUID(), secret: randomBytes(32).toString('base64url'), userId: randomUUID() };
const bob: TestAgentRow = { id: randomUUID(), secret: randomBytes(32).toString('base64url'), userId: randomUUID() };
/** An agent no user owns (a deleted account's): its token, however valid, reaches nothing. */
const unowned: TestAgentRow = { id: randomUUID(), secret: randomBytes(32).toString('base64url'), userId: null };
const agents = new Map([alice, bob, unowned].map((a) => [a.id, a]));

let upstream: http.Server;
let upstreamHost: string;
const seen: Array<{ url: string; headers: http.IncomingHttpHeaders }> = [];
let gateway: OpenGateway & { port: number };

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    if (req.url === '/hang/chat/completions') return;
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ headers: req.headers })));
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamHost = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const egress = new EgressGateway(
    [{ origin: new URL(`http://${upstreamHost}`), credentials: { authorization: `Bearer ${OPERATOR_KEY}` }, model: true }],
    quiet,
    {
      limits: { maxConnections: 1, idleTimeoutMs: 10_000, maxDurationMs: 60_000, maxBodyBytes: 1024 * 1024 },
    },
  );
  gateway = await egress.listenTcp(
    { host: '127.0.0.1', port: 0 },
    egressTokenChecker(async (id) => agents.get(id)),
  );
});

afterAll(async () => {
  await gateway?.close();
  upstream.closeAllConnections();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
});

/** A raw request to the gateway: the destination in Host, as the agent's client sends it. */
function send(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: gateway.port, method: 'POST', path, headers: { host: upstreamHost, ...headers }, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const proxyAuth = (token: string) => ({ 'proxy-authorization': `Bearer ${token}` });

describe('the egress gateway on TCP, for agents in pods', () => {
  it('refuses with 407 EGRESS_UNAUTHENTICATED, before anything reaches upstream: no token, a malformed one, a wrong MAC, another agent id with one’s own MAC, an unowned agent', async () => {
    const before = seen.length;
    const forged = egressToken(alice.id, bob.secret);
    const swapped = `${bob.id}.${egressToken(alice.id, alice.secret).split('.')[1]}`;
    const attempts: Array<Record<string, string>> = [
      {},
      proxyAuth('not-a-token'),
      proxyAuth(`${alice.id}.`),
      proxyAuth(forged),
      proxyAuth(swapped),
      proxyAuth(egressToken(unowned.id, unowned.secret)),
      proxyAuth(`${randomUUID()}.${'A'.repeat(43)}`),
      { 'proxy-authorization': `Basic ${Buffer.from('a:b').toString('base64')}` },
      // The agent's credential in the wrong header is not one.
      { authorization: `Bearer ${egressToken(alice.id, alice.secret)}` },
    ];
    for (const headers of attempts) {
      const res = await send('/v1/chat/completions', headers);
      expect(res.status, JSON.stringify(headers)).toBe(407);
      expect(JSON.parse(res.body).error.code).toBe('EGRESS_UNAUTHENTICATED');
    }
    expect(seen.length).toBe(before);
  });

  it('refuses a CONNECT tunnel without a valid token', async () => {
    const socket = net.connect(gateway.port, '127.0.0.1');
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('close', () => resolve(text));
      socket.write(`CONNECT ${upstreamHost} HTTP/1.1\r\nhost: ${upstreamHost}\r\n\r\n`);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 407 /);
  });

  it("forwards the agent's own client with its token: the operator's key added upstream, the agent's credential not passed on, the key not echoed by the gateway", async () => {
    const fetchViaGateway = gatewayFetch({ url: new URL(`http://127.0.0.1:${gateway.port}`), token: egressToken(alice.id, alice.secret) });
    const res = await fetchViaGateway(`http://${upstreamHost}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer agent-supplied-key', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [] }),
    });
    expect(res.status).toBe(200);
    const got = seen.at(-1);
    expect(got?.url).toBe('/v1/chat/completions');
    expect(got?.headers.authorization).toBe(`Bearer ${OPERATOR_KEY}`);
    expect(got?.headers['proxy-authorization']).toBeUndefined();
    expect(JSON.stringify(got?.headers)).not.toContain(alice.secret);
  });

  it("holds one agent's bound across its connections and leaves another agent's alone", async () => {
    // maxConnections 1: Alice's hanging request holds her one slot.
    const hanging = http.request({
      host: '127.0.0.1',
      port: gateway.port,
      method: 'POST',
      path: '/hang/chat/completions',
      headers: { host: upstreamHost, ...proxyAuth(egressToken(alice.id, alice.secret)) },
      agent: false,
    });
    hanging.on('error', () => undefined);
    hanging.end();
    await expect.poll(() => seen.some((s) => s.url === '/hang/chat/completions'), { timeout: 5_000 }).toBe(true);
    const second = await send('/again/chat/completions', proxyAuth(egressToken(alice.id, alice.secret)));
    expect(second.status).toBe(503);
    expect(JSON.parse(second.body).error.code).toBe('EGRESS_BUSY');
    const other = await send('/other/chat/completions', proxyAuth(egressToken(bob.id, bob.secret)));
    expect(other.status).toBe(200);
    hanging.destroy();
  });
});
