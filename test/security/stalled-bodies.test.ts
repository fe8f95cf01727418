/**
 * Stalled request bodies cannot hold agents busy (docs/security.md, "Stalled bodies"). With
 * AGENT_MAX_RUNNING=2, two guests each sent `PATCH /api/v1/agent/chats/c1` with
 * `Content-Length: 1000` and 9 bytes of body and held it: neither service had a body timeout, the
 * agent counted a request that was still receiving its body as work in flight, so both agents
 * stayed "busy" and every other user got 503 AGENT_CAPACITY for as long as the two liked. Now a
 * body must arrive within REQUEST_BODY_TIMEOUT (408), an upload must keep progressing instead
 * (408 UPLOAD_STALLED), a request still receiving its body does not make its agent busy, and one
 * user holds at most AGENT_REQUESTS_PER_USER requests to their agent at once (429).
 *
 * Stalled requests are written byte by byte on raw sockets. That a stalled request has reached
 * its agent is read from the account service's own outgoing connections (it runs in this process):
 * the proxy pipes each request to its agent through node:http's global agent.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenPair } from '@contracts/account/tokens.js';
import { until } from '../chat/helpers.js';
import { testDeviceId } from '../support/devices.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, startTestAgent, type TestAccount, type TestAgent } from '../support/servers.js';

const BODY_TIMEOUT_S = 3;
const UPLOAD_IDLE_S = 1;

let model: ScriptedModel;
let account: TestAccount;
let agent: TestAgent;

beforeAll(async () => {
  model = await startScriptedModel({ responder: () => ({ text: 'ok' }) });
  account = await startTestAccount('pglite', {
    AGENT_PROVISIONER: 'local',
    AGENT_IDLE_TIMEOUT: '0',
    AGENT_MAX_RUNNING: '2',
    AGENT_STOP_GRACE: '0.5',
    AGENT_REQUESTS_PER_USER: '2',
    REQUEST_BODY_TIMEOUT: String(BODY_TIMEOUT_S),
    UPLOAD_IDLE_TIMEOUT_SECONDS: String(UPLOAD_IDLE_S),
    MODEL: model.modelSpec,
  });
  agent = await startTestAgent({ REQUEST_BODY_TIMEOUT: '0.5' });
});
afterAll(async () => {
  await agent?.stop();
  await account?.stop();
  await model?.close();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A request on its own socket: the head, then `body` (its pieces `pause` ms apart when it is an
 * array); `declared` is its Content-Length, which may promise more than is sent. `continued`
 * resolves when the server answers `100 Continue` (the request has reached its handler), `answer`
 * with the final answer, or with status 0 when the connection ends without one.
 */
function rawRequest(
  base: string,
  head: { method: string; path: string; headers: Record<string, string>; declared: number },
  body: string | Buffer[],
  pause = 0,
): { socket: net.Socket; continued: Promise<void>; answer: Promise<RawAnswer> } {
  const url = new URL(base);
  const socket = net.connect(Number(url.port), url.hostname);
  const lines = [
    `${head.method} ${head.path} HTTP/1.1`,
    `Host: ${url.host}`,
    `Content-Length: ${head.declared}`,
    ...Object.entries(head.headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  let continued!: () => void;
  const continuedPromise = new Promise<void>((resolve) => {
    continued = resolve;
  });
  const answer = new Promise<RawAnswer>((resolve) => {
    let received = Buffer.alloc(0);
    const parse = (): RawAnswer | undefined => {
      let text = received.toString('latin1');
      while (text.startsWith('HTTP/1.1 100')) {
        continued();
        text = text.slice(text.indexOf('\r\n\r\n') + 4);
      }
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const [statusLine, ...headerLines] = text.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      const rest = text.slice(end + 4);
      const length = Number(headers['content-length'] ?? -1);
      if (length >= 0 && rest.length < length) return undefined;
      return { status: Number(statusLine?.split(' ')[1]), headers, body: length >= 0 ? rest.slice(0, length) : rest };
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const parsed = parse();
      if (parsed) resolve(parsed);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(parse() ?? { status: 0, headers: {}, body: '' }));
  });
  if (typeof body === 'string') socket.write(body);
  else
    void (async () => {
      for (const piece of body) {
        if (socket.destroyed) return;
        socket.write(piece);
        await new Promise((r) => setTimeout(r, pause));
      }
    })();
  return { socket, continued: continuedPromise, answer };
}

/** `promise`, or a failure after `ms`: a stalled request that is never cut must fail the test, not hang it. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms).unref())]);
}

const codeOf = (answer: RawAnswer) => (JSON.parse(answer.body || '{}') as { code?: string }).code;

async function guest(label: string): Promise<TokenPair> {
  const res = await fetch(`${account.url}/api/v1/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: testDeviceId(label) }),
  });
  return (await res.json()) as TokenPair;
}
const bearer = (pair: TokenPair) => ({ authorization: `Bearer ${pair.access_token}` });
const listChats = (pair: TokenPair) => fetch(`${account.url}/api/v1/agent/chats`, { headers: bearer(pair) });

/** The stalled request: a rename that promises 1000 bytes and sends 9. */
const stalledRename = (pair: TokenPair) =>
  rawRequest(
    account.url,
    { method: 'PATCH', path: '/api/v1/agent/chats/c1', headers: { ...bearer(pair), 'Content-Type': 'application/json' }, declared: 1000 },
    '{"title":',
  );

/** Requests the account service has piped to agents and not finished (node:http's global agent). */
const inFlightToAgents = () => Object.values(http.globalAgent.sockets).reduce((n, sockets) => n + (sockets?.length ?? 0), 0);

describe('stalled bodies', () => {
  it('a body that stops arriving is cut with 408 REQUEST_TIMEOUT, on the account service and on an agent', async () => {
    const started = Date.now();
    const onAccount = rawRequest(
      account.url,
      { method: 'POST', path: '/api/v1/auth/guest', headers: { 'Content-Type': 'application/json' }, declared: 100 },
      '{"dev',
    );
    const answer = await within(onAccount.answer, 20_000, 'account');
    expect(answer.status).toBe(408);
    expect(codeOf(answer)).toBe('REQUEST_TIMEOUT');
    expect(Date.now() - started).toBeGreaterThanOrEqual(BODY_TIMEOUT_S * 1000 - 100);

    const onAgent = rawRequest(
      agent.url,
      { method: 'PATCH', path: '/chats/c1', headers: { ...agent.auth, 'Content-Type': 'application/json' }, declared: 1000 },
      '{"title":',
    );
    const agentAnswer = await within(onAgent.answer, 20_000, 'agent');
    expect(agentAnswer.status).toBe(408);
    expect(codeOf(agentAnswer)).toBe('REQUEST_TIMEOUT');
  });

  it('a request still receiving its body does not make its agent busy', async () => {
    const stalled = rawRequest(
      agent.url,
      { method: 'PATCH', path: '/chats/c1', headers: { ...agent.auth, 'Content-Type': 'application/json', Expect: '100-continue' }, declared: 1000 },
      '',
    );
    // `100 Continue` comes when the request has been handed to the app: it is in flight now.
    await within(stalled.continued, 20_000, '100 Continue');
    const lifecycle = (await (await fetch(`${agent.url}/lifecycle`, { headers: agent.auth })).json()) as { busy: boolean; activity: { requests: number } };
    expect(lifecycle).toMatchObject({ busy: false, activity: { requests: 0 } });
    stalled.socket.destroy();
  });

  it('two guests holding stalled bodies at AGENT_MAX_RUNNING=2 do not keep a third user out (no 503 AGENT_CAPACITY)', async () => {
    const [a, b, c] = [await guest('stalled-a'), await guest('stalled-b'), await guest('stalled-c')];
    expect((await listChats(a)).status).toBe(200);
    expect((await listChats(b)).status).toBe(200);
    const held = [stalledRename(a), stalledRename(b)];
    await until(() => inFlightToAgents() >= 2, 20_000);

    const third = await listChats(c);
    expect(third.status, JSON.stringify(await third.clone().json())).toBe(200);
    // The stalled requests end: cut by their deadline, or with the agent that was stopped for the third user.
    for (const { answer } of held) expect([408, 502]).toContain((await within(answer, 20_000, 'stalled rename')).status);
  });

  it('one user holds at most AGENT_REQUESTS_PER_USER requests to their agent at once: 429 TOO_MANY_AGENT_REQUESTS with Retry-After', async () => {
    const [d, e] = [await guest('stalled-d'), await guest('stalled-e')];
    expect((await listChats(d)).status).toBe(200);
    const base = inFlightToAgents();
    const held = [stalledRename(d), stalledRename(d)];
    await until(() => inFlightToAgents() >= base + 2, 20_000);

    const refused = await listChats(d);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ code: 'TOO_MANY_AGENT_REQUESTS' });
    // Others are not affected, and the slots come back when the stalled requests end.
    expect((await listChats(e)).status).toBe(200);
    for (const { answer } of held) expect([408, 502]).toContain((await within(answer, 20_000, 'stalled rename')).status);
    await until(async () => (await listChats(d)).status === 200, 20_000);
  });

  it('an upload is held to progress, not to the deadline: a slow one that keeps going lands, a stalled one is cut with 408 UPLOAD_STALLED', async () => {
    const f = await guest('stalled-uploader');
    // Its agent runs first: starting one takes this process's event loop (client and server alike) for a moment.
    expect((await listChats(f)).status).toBe(200);
    const boundary = 'stalled-bodies-boundary';
    const content = Buffer.alloc(48 * 1024, 'x');
    const opening = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.txt"\r\nContent-Type: text/plain\r\n\r\n`);
    const closing = Buffer.from(`\r\n--${boundary}--\r\n`);
    const body = Buffer.concat([opening, content, closing]);
    const head = (declared: number) => ({
      method: 'POST',
      path: '/api/v1/agent/files/upload',
      headers: { ...bearer(f), 'Content-Type': `multipart/form-data; boundary=${boundary}` },
      declared,
    });
    // 1 KiB every 100 ms: about 5 s in all, longer than REQUEST_BODY_TIMEOUT, and 10 KiB per idle window.
    const pieces: Buffer[] = [];
    for (let at = 0; at < body.length; at += 1024) pieces.push(body.subarray(at, at + 1024));
    const slow = rawRequest(account.url, head(body.length), pieces, 100);
    const landed = await within(slow.answer, 60_000, 'slow upload');
    expect(landed.status, landed.body).toBe(200);
    expect(JSON.parse(landed.body)).toMatchObject({ name: 'slow.txt', size: content.length });

    const stalled = rawRequest(account.url, head(body.length), [body.subarray(0, 4096)]);
    const cut = await within(stalled.answer, 20_000, 'stalled upload');
    expect(cut.status).toBe(408);
    expect(codeOf(cut)).toBe('UPLOAD_STALLED');
  });
});
