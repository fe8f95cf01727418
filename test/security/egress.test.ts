/**
 * The egress gateway's bounds and its two sockets (server/account/agents/egress/gateway.ts),
 * driven as a hostile tenant would: a real gateway on Unix sockets in a temporary directory, a
 * real upstream on loopback standing in for the model host and another allow-listed host. A tenant may not hold more tunnels
 * and requests than the cap, keep them silent or open forever, push bodies past the limit, or
 * get the operator's key added to (or echoed back to) anything its exec commands send.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EgressGateway, type EgressLimit, type EgressLimits, type GatewayOwner, type OpenGateway } from '../../server/account/agents/egress/gateway.js';

const OPERATOR_KEY = 'sk-operator-egress-test';

/** An allow-listed host that is not the model's: the bounds are tried on it. */
let upstream: http.Server;
let upstreamHost: string;
/** The model host, with the operator's key: it answers only generation calls (test/security/egress-model-routes.test.ts). */
let model: http.Server;
let modelHost: string;
/** A second allow-listed host that is not the model's: tunnels go there (none may go to the model host). */
let tunnelTarget: http.Server;
let tunnelHost: string;
/** Headers of each request the upstream got, and the body bytes it received. */
const seen: Array<{ url: string; headers: http.IncomingHttpHeaders; bodyBytes: number }> = [];

beforeAll(async () => {
  const handler: http.RequestListener = (req, res) => {
    const entry = { url: req.url ?? '', headers: req.headers, bodyBytes: 0 };
    seen.push(entry);
    req.on('data', (chunk: Buffer) => (entry.bodyBytes += chunk.length));
    if (req.url === '/hang') return; // never answers
    if (req.url === '/drip') {
      // Busy forever: a byte every 50 ms.
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('.'), 50);
      res.on('close', () => clearInterval(timer));
      return;
    }
    req.on('end', () => {
      // Echoes what arrived, as a hostile or careless endpoint could.
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ headers: req.headers, bodyBytes: entry.bodyBytes }));
    });
  };
  upstream = http.createServer(handler);
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamHost = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  model = http.createServer(handler);
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
  modelHost = `127.0.0.1:${(model.address() as AddressInfo).port}`;
  tunnelTarget = http.createServer((_req, res) => res.end('tunnel target'));
  await new Promise<void>((resolve) => tunnelTarget.listen(0, '127.0.0.1', resolve));
  tunnelHost = `127.0.0.1:${(tunnelTarget.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const server of [upstream, model, tunnelTarget]) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

const dir = mkdtempSync(path.join(os.tmpdir(), 'egress-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sockets = { agent: path.join(dir, 'egress.sock'), exec: path.join(dir, 'exec-egress.sock') };

let open: OpenGateway | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

const roomy: EgressLimits = { maxConnections: 32, idleTimeoutMs: 10_000, maxDurationMs: 60_000, maxBodyBytes: 1024 * 1024 };

/** A gateway to the model host (with the operator's key), the upstream and the tunnel target, its log lines and the limits it reported. */
async function startGateway(
  limits: Partial<EgressLimits> = {},
  owner: GatewayOwner = { agentId: 'agent-1' },
): Promise<{ logs: string[]; limited: EgressLimit[] }> {
  const logs: string[] = [];
  const limited: EgressLimit[] = [];
  const log = pino(
    { level: 'warn' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs.push(chunk.toString());
        done();
      },
    }),
  );
  const gateway = new EgressGateway(
    [
      { origin: new URL(`http://${modelHost}`), credentials: { authorization: `Bearer ${OPERATOR_KEY}` }, model: true },
      { origin: new URL(`http://${upstreamHost}`), credentials: {} },
      { origin: new URL(`http://${tunnelHost}`), credentials: {} },
    ],
    log,
    { limits: { ...roomy, ...limits }, onLimited: (limit) => limited.push(limit) },
  );
  open = await gateway.open(sockets, owner);
  return { logs, limited };
}

interface Answer {
  status: number;
  body: string;
}

/**
 * One request on a gateway socket, to the upstream (or with `model`, a generation call to the
 * model host); `absolute` sends it in proxy form, as exec's HTTP clients do.
 */
function request(
  socketPath: string,
  opts: { path?: string; headers?: Record<string, string>; body?: Buffer; chunked?: boolean; absolute?: boolean; model?: boolean } = {},
): Promise<Answer> {
  const target = opts.path ?? (opts.model ? '/v1/chat/completions' : '/echo');
  const host = opts.model ? modelHost : upstreamHost;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        socketPath,
        method: opts.body || opts.model ? 'POST' : 'GET',
        path: opts.absolute ? `http://${host}${target}` : target,
        headers: { host, ...opts.headers },
        agent: false,
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (opts.body && opts.chunked) {
      // No content-length: the gateway only learns the size as the body streams.
      const half = opts.body.length >> 1;
      req.write(opts.body.subarray(0, half));
      setTimeout(() => req.end(opts.body?.subarray(half)), 50);
    } else req.end(opts.body);
  });
}

/** A request that stays in flight; resolves with how it ended (`closed` when the gateway cut it). */
function pending(socketPath: string, target: string): { ended: Promise<string>; abort(): void } {
  const req = http.request({ socketPath, path: target, headers: { host: upstreamHost }, agent: false });
  const ended = new Promise<string>((resolve) => {
    req.on('response', (res) => {
      res.on('data', () => undefined);
      res.on('end', () => resolve(`status ${res.statusCode}`));
      res.on('error', () => resolve('closed'));
      res.on('aborted', () => resolve('closed'));
    });
    req.on('error', () => resolve('closed'));
  });
  req.end();
  return { ended, abort: () => req.destroy() };
}

/** A CONNECT on a gateway socket: the status line it got, and the socket (tunnel) when 200. */
function connect(socketPath: string, target = tunnelHost): Promise<{ status: number; socket: net.Socket; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      resolve({ status: Number(head.split(' ')[1]), socket, closed });
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.on('close', () => resolve({ status: Number(head.split(' ')[1]) || 0, socket, closed }));
    socket.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n\r\n`);
  });
}

const within = <T>(promise: Promise<T>, ms: number): Promise<T> =>
  Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms))]);

describe("the operator's key", () => {
  it("is added on the agent's own socket, replacing what the agent sent", async () => {
    await startGateway();
    const answer = await request(sockets.agent, { model: true, headers: { authorization: 'Bearer agent-sent' } });
    expect(answer.status).toBe(200);
    expect(seen.at(-1)?.headers.authorization).toBe(`Bearer ${OPERATOR_KEY}`);
  });

  it("is never added on the exec relay's socket, in origin or proxy form, nor echoed back", async () => {
    await startGateway();
    for (const absolute of [false, true]) {
      const bare = await request(sockets.exec, { absolute, model: true });
      expect(bare.status).toBe(200);
      expect(seen.at(-1)?.headers.authorization).toBeUndefined();
      expect(bare.body).not.toContain(OPERATOR_KEY);
      // A command's own key passes untouched: it pays for its own calls.
      const own = await request(sockets.exec, { absolute, model: true, headers: { authorization: 'Bearer command-own' } });
      expect(seen.at(-1)?.headers.authorization).toBe('Bearer command-own');
      expect(own.body).not.toContain(OPERATOR_KEY);
    }
  });
});

describe('a warm-pool agent nobody has claimed', () => {
  it('reaches nothing: not its model with the operator key, not a tunnel, not on the exec socket; once claimed, it does', async () => {
    const owner: GatewayOwner = { agentId: 'pooled', unclaimed: true };
    await startGateway({}, owner);
    const before = seen.length;
    for (const socket of [sockets.agent, sockets.exec]) {
      const answer = await request(socket, { model: true, headers: { authorization: 'Bearer agent-sent' } });
      expect(answer.status).toBe(403);
      expect(answer.body).toContain('EGRESS_DENIED');
      const tunnel = await connect(socket);
      expect(tunnel.status).toBe(403);
      tunnel.socket.destroy();
    }
    expect(seen.length).toBe(before);
    // What LaunchedAgent.claim does: the same gateway, read at each request.
    owner.userId = 'claimant';
    owner.unclaimed = false;
    expect((await request(sockets.agent, { model: true })).status).toBe(200);
    expect(seen.at(-1)?.headers.authorization).toBe(`Bearer ${OPERATOR_KEY}`);
  });
});

describe('per-agent bounds', () => {
  it('caps tunnels and requests in flight across both sockets: 503 EGRESS_BUSY, logged once, counted each time', async () => {
    const { logs, limited } = await startGateway({ maxConnections: 3 });
    const hanging = [pending(sockets.agent, '/hang'), pending(sockets.exec, '/hang')];
    const tunnel = await connect(sockets.exec);
    expect(tunnel.status).toBe(200);
    // Wait until both requests reached the upstream, so all three slots are taken.
    for (let i = 0; i < 100 && seen.filter((s) => s.url === '/hang').length < 2; i++) await new Promise((r) => setTimeout(r, 20));

    for (const socketPath of [sockets.agent, sockets.exec]) {
      const refused = await request(socketPath);
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'EGRESS_BUSY' } });
    }
    const refusedTunnel = await connect(sockets.exec);
    expect(refusedTunnel.status).toBe(503);
    expect(limited.filter((l) => l === 'connections')).toHaveLength(3);
    expect(logs.filter((line) => line.includes('too many tunnels and requests'))).toHaveLength(1);

    // A slot freed is a slot usable again.
    tunnel.socket.destroy();
    await tunnel.closed;
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await request(sockets.agent)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(200);
    for (const h of hanging) h.abort();
  });

  it('cuts a silent tunnel and a request whose upstream never answers after the idle timeout', async () => {
    const { limited } = await startGateway({ idleTimeoutMs: 300 });
    const tunnel = await connect(sockets.exec);
    expect(tunnel.status).toBe(200);
    const hanging = pending(sockets.agent, '/hang');
    const started = Date.now();
    await within(tunnel.closed, 5_000);
    expect(await within(hanging.ended, 5_000)).toBe('closed');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(limited.filter((l) => l === 'idle').length).toBeGreaterThanOrEqual(2);
  });

  it('cuts a busy tunnel and a busy stream at the maximum duration', async () => {
    const { limited } = await startGateway({ idleTimeoutMs: 5_000, maxDurationMs: 400 });
    const tunnel = await connect(sockets.exec);
    expect(tunnel.status).toBe(200);
    // Traffic all along, so only the duration can end it.
    const chatter = setInterval(() => tunnel.socket.write('GET /echo HTTP/1.1\r\nhost: x\r\n\r\n'), 50);
    tunnel.socket.on('data', () => undefined);
    const drip = pending(sockets.agent, '/drip');
    try {
      await within(tunnel.closed, 5_000);
      expect(await within(drip.ended, 5_000)).toBe('closed');
    } finally {
      clearInterval(chatter);
    }
    expect(limited.filter((l) => l === 'duration')).toHaveLength(2);
  });

  it('refuses a plain request body over the limit with 413, declared or streamed, and forwards one within it', async () => {
    const { limited } = await startGateway({ maxBodyBytes: 1024 });
    const before = seen.length;
    const declared = await request(sockets.exec, { body: Buffer.alloc(4096, 'a') });
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body)).toMatchObject({ error: { code: 'EGRESS_BODY_TOO_LARGE' } });
    expect(seen.length).toBe(before); // never reached the upstream

    const streamed = await request(sockets.exec, { body: Buffer.alloc(64 * 1024, 'b'), chunked: true });
    expect(streamed.status).toBe(413);
    // The upstream got at most the first half before the gateway cut it, never the whole body.
    expect(seen.at(-1)?.bodyBytes ?? 0).toBeLessThan(64 * 1024);

    const small = await request(sockets.agent, { body: Buffer.alloc(1000, 'c') });
    expect(small.status).toBe(200);
    expect(JSON.parse(small.body)).toMatchObject({ bodyBytes: 1000 });
    expect(limited.filter((l) => l === 'body')).toHaveLength(2);
  });
});
