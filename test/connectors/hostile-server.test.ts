/**
 * Connectors against a hostile MCP server (a real loopback HTTP server speaking streamable HTTP,
 * written here to misbehave): what it can make the account service do is bounded
 * (docs/connectors.md, Bounds). A tool list that pages for ever, slowly or in a circle is read for
 * ten pages and 15 s at most and what was listed kept, the reason shown on the connector. Answers
 * are counted as they arrive and cut off past their limit, whatever their form (JSON, the event
 * stream answering a POST, one message of the GET stream, OAuth metadata), while a GET stream
 * carrying more than the limit in small messages stays up. The account service runs in this
 * process, so its memory is this test's.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountApi, bearer, uniqueEmail, type Pair } from '../support/account-api.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

interface JsonRpc {
  id?: number;
  method: string;
  params?: Record<string, unknown>;
}

interface Incoming {
  method: string;
  path: string;
  /** A POST's JSON-RPC message. */
  msg?: JsonRpc;
  /** This server's origin. */
  base: string;
}

/** How one behaviour of the hostile server answers a request (true: it answered). */
type Behaviour = (incoming: Incoming, res: http.ServerResponse) => boolean;

interface Counts {
  initializes: number;
  listPages: number;
  gets: number;
}

/** What a pumped answer came to: the bytes handed to the socket, and whether the client hung up before its end. */
interface Pumped {
  written: number;
  cut: boolean;
  done: Promise<void>;
}

const MB = 2 ** 20;
const tool = (name: string) => ({ name, description: name, inputSchema: { type: 'object' } });

/**
 * Writes `head`, `megabytes` MB made by `fill` (1 MB at a time, as the client reads), and `tail`;
 * `megabytes` is an upper bound on what a test has the server write.
 */
function pump(res: http.ServerResponse, head: string, megabytes: number, fill: (index: number) => string, tail: string): Pumped {
  const pumped: Pumped = { written: 0, cut: false, done: Promise.resolve() };
  pumped.done = new Promise((resolve) => {
    res.on('close', () => {
      pumped.cut = !res.writableFinished;
      resolve();
    });
  });
  res.write(head);
  let sent = 0;
  const next = () => {
    while (sent < megabytes && !res.destroyed) {
      const chunk = fill(sent++);
      pumped.written += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', next);
    }
    if (!res.destroyed) res.end(tail);
  };
  next();
  return pumped;
}

/**
 * A streamable HTTP server whose every request goes to the behaviour named by a segment of its path
 * (`/<behaviour>/mcp`, `/.well-known/…/<behaviour>`): initialize answers as any server does, the
 * rest as the behaviour says; GET streams are not offered (405) unless a behaviour takes them.
 */
async function startHostileServer(behaviours: Record<string, Behaviour>) {
  const counts: Record<string, Counts> = Object.fromEntries(Object.keys(behaviours).map((name) => [name, { initializes: 0, listPages: 0, gets: 0 }]));
  let base = '';
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', base).pathname;
    const name = path.split('/').find((segment) => Object.hasOwn(behaviours, segment)) ?? '';
    const behaviour = behaviours[name];
    const count = counts[name];
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (!behaviour || !count) return void res.writeHead(404).end();
      const msg = req.method === 'POST' ? (JSON.parse(Buffer.concat(chunks).toString()) as JsonRpc) : undefined;
      if (req.method === 'GET') count.gets++;
      if (msg?.method === 'initialize') count.initializes++;
      if (msg?.method === 'tools/list') count.listPages++;
      if (behaviour({ method: req.method ?? '', path, msg, base }, res)) return;
      if (!msg) return void res.writeHead(405).end();
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'initialize')
        return reply(res, msg, {
          protocolVersion: msg.params?.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: 'hostile', version: '1' },
        });
      if (msg.method === 'tools/list') return reply(res, msg, { tools: [tool('x')] });
      reply(res, msg, {});
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (name: string) => `${base}/${name}/mcp`,
    counts,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function json(res: http.ServerResponse, body: unknown): true {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  return true;
}

const reply = (res: http.ServerResponse, msg: JsonRpc, result: unknown) => json(res, { jsonrpc: '2.0', id: msg.id, result });

describe('connectors: a hostile MCP server cannot make the service work without bound', () => {
  let hostile: Awaited<ReturnType<typeof startHostileServer>>;
  let account: TestAccount;
  let api: ReturnType<typeof accountApi>;
  let user: Pair;
  const pumped: Partial<Record<'json' | 'event' | 'stream' | 'note' | 'metadata', Pumped>> = {};

  beforeAll(async () => {
    const toolCall =
      (answer: (msg: JsonRpc, res: http.ServerResponse) => void): Behaviour =>
      ({ msg }, res) => {
        if (msg?.method !== 'tools/call') return false;
        answer(msg, res);
        return true;
      };
    hostile = await startHostileServer({
      // Page after page, never a tool, always another page.
      endless: ({ msg }, res) => msg?.method === 'tools/list' && reply(res, msg, { tools: [], nextCursor: `page-${Math.random()}` }),
      // One tool a page, and the third page points back at the second.
      circle: ({ msg }, res) => {
        if (msg?.method !== 'tools/list') return false;
        const cursor = msg.params?.cursor as string | undefined;
        return reply(res, msg, { tools: [tool(`t-${cursor ?? 'first'}`)], nextCursor: cursor === 'b' ? 'a' : cursor === 'a' ? 'b' : 'a' });
      },
      // A page every 2 s, one tool each, without end: the 15 s of the whole listing end it.
      slow: ({ msg }, res) => {
        if (msg?.method !== 'tools/list') return false;
        const page = Number(msg.params?.cursor ?? 0);
        setTimeout(() => reply(res, msg, { tools: [tool(`t${page}`)], nextCursor: String(page + 1) }), 2_000);
        return true;
      },
      // A tool result of 64 MB, as JSON.
      'big-json': toolCall((msg, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        pumped.json = pump(res, `{"jsonrpc":"2.0","id":${msg.id},"result":{"content":[{"type":"text","text":"`, 64, () => 'A'.repeat(MB), '"}]}}');
      }),
      // A tool result of 64 MB as one event of the POST's event stream.
      'big-event': toolCall((msg, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        pumped.event = pump(
          res,
          `event: message\ndata: {"jsonrpc":"2.0","id":${msg.id},"result":{"content":[{"type":"text","text":"`,
          64,
          () => 'A'.repeat(MB),
          '"}]}}\n\n',
        );
      }),
      // A GET stream of 12 MB in notifications of 1 KB, then still open; tool calls answer.
      chatty: ({ method }, res) => {
        if (method !== 'GET') return false;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const note = `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'n'.repeat(940) } })}\n\n`;
        pumped.stream = pump(res, '', 12, () => note.repeat(Math.floor(MB / note.length)), '');
        return true;
      },
      // One notification of 64 MB on the GET stream.
      'big-note': ({ method }, res) => {
        if (method !== 'GET') return false;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        pumped.note = pump(
          res,
          'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"',
          64,
          () => 'A'.repeat(MB),
          '"}}\n\n',
        );
        return true;
      },
      // 128 tools of a few bytes.
      many: ({ msg }, res) => msg?.method === 'tools/list' && reply(res, msg, { tools: Array.from({ length: 128 }, (_, i) => tool(`m${i}`)) }),
      // 20 tools whose schemas are 30 KB each (under the 32 KB a schema may have).
      fat: ({ msg }, res) =>
        msg?.method === 'tools/list' &&
        reply(res, msg, {
          tools: Array.from({ length: 20 }, (_, i) => ({ ...tool(`f${i}`), inputSchema: { type: 'object', description: 'F'.repeat(30_000) } })),
        }),
      // Asks for a sign-in; its authorization server's metadata is 16 MB.
      'big-metadata': ({ method, path, base }, res) => {
        if (method === 'POST') {
          res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${base}/big-metadata/prm"` }).end();
          return true;
        }
        if (path.endsWith('/prm')) return json(res, { resource: `${base}/big-metadata/mcp`, authorization_servers: [`${base}/big-metadata`] });
        if (!path.startsWith('/.well-known/')) return false;
        res.writeHead(200, { 'content-type': 'application/json' });
        pumped.metadata = pump(res, '{"issuer":"', 16, () => 'A'.repeat(MB), '"}');
        return true;
      },
    });
    account = await startTestAccount('pglite', { CONNECTORS_ALLOW_PRIVATE: '1' });
    api = accountApi(account);
    user = await api.email(uniqueEmail('hostile'));
  }, 120_000);
  afterAll(async () => {
    await account?.stop();
    await hostile?.close();
  });

  const add = async (name: string) =>
    api.json<{ id: string; status: string }>(await api.post('/connectors', { name, url: hostile.url(name) }, bearer(user)), 201);
  const shown = async (id: string) =>
    (
      await api.json<{ connectors: Array<{ id: string; tools: Array<{ name: string }>; error?: string }> }>(await api.get('/connectors', bearer(user)))
    ).connectors.find((connector) => connector.id === id);

  it('a tool list without end is read for 10 pages, the connector added and the cut said on it', async () => {
    const started = Date.now();
    const created = await add('endless');
    expect(created.status).toBe('connected');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(hostile.counts.endless?.listPages).toBe(10);
    const connector = await shown(created.id);
    expect(connector?.tools).toEqual([]);
    expect(connector?.error).toMatch(/past 10 pages/);
  });

  it('a tool list that comes back to a page it sent stops there, its tools kept', async () => {
    const created = await add('circle');
    expect(hostile.counts.circle?.listPages).toBe(3);
    const connector = await shown(created.id);
    expect(connector?.tools.map((t) => t.name)).toEqual(['t-first', 't-a', 't-b']);
    expect(connector?.error).toMatch(/came back to a page/);
  });

  it('a tool list slower than 15 s in all ends there, the tools listed by then kept', async () => {
    const started = Date.now();
    const created = await add('slow');
    expect(Date.now() - started).toBeLessThan(20_000);
    const connector = await shown(created.id);
    const names = connector?.tools.map((t) => t.name) ?? [];
    expect(names.length).toBeGreaterThanOrEqual(5);
    expect(names).toEqual(names.map((_, page) => `t${page}`));
    expect(connector?.error).toMatch(/more than 15 s/);
  }, 30_000);

  /** One tool call as the user's agent makes it (connectors.ts `call`, which the egress gateway hands it to). */
  const call = async (connectorId: string, name: string) => {
    const row = await account.services.store.db.connector.findUniqueOrThrow({ where: { id: connectorId } });
    return account.services.connectors.call(row.userId, name, {}, AbortSignal.timeout(60_000));
  };
  const textOf = (result: { content: Array<{ type: string; text?: string }> }) => result.content.map((item) => item.text ?? '').join('');

  it.each([
    ['json', 'as JSON'],
    ['event', 'as one event of the event stream answering the POST'],
  ] as const)('a 64 MB tool result %s is cut off as it arrives past the result limit and its margin (5 MB), and the model told so', async (kind, _how) => {
    const created = await add(`big-${kind}`);
    const rss = process.memoryUsage().rss;
    const result = await call(created.id, `big-${kind}__x`);
    await pumped[kind]?.done;
    expect(result.is_error).toBe(true);
    expect(textOf(result)).toMatch(/answer passed 5 MB/);
    expect(pumped[kind]?.cut).toBe(true);
    expect(pumped[kind]?.written).toBeLessThan(32 * MB);
    // The account service runs in this process: it never held the answer.
    expect(process.memoryUsage().rss - rss).toBeLessThan(48 * MB);
  });

  it('a GET stream is bounded per message, not in all: 12 MB of small notifications leave the connection standing', async () => {
    const created = await add('chatty');
    await expect.poll(() => pumped.stream?.written ?? 0, { timeout: 30_000 }).toBeGreaterThanOrEqual(11 * MB);
    const result = await call(created.id, 'chatty__x');
    expect(result.is_error).toBe(false);
    expect(pumped.stream?.cut).toBe(false);
    expect(hostile.counts.chatty).toMatchObject({ initializes: 1, gets: 1 });
  });

  it('but one message of 64 MB on a GET stream is cut off past 5 MB', async () => {
    await add('big-note');
    await expect.poll(() => pumped.note?.cut, { timeout: 30_000 }).toBe(true);
    expect(pumped.note?.written).toBeLessThan(32 * MB);
  });

  it("an agent is offered 96 of its user's connector tools and 256 KB of them at most, oldest connector first", async () => {
    const offered = async (names: string[]) => {
      const someone = await api.email(uniqueEmail('tools'));
      for (const name of names) await api.post('/connectors', { name, url: hostile.url(name) }, bearer(someone));
      return account.services.connectors.agentTools((await api.me(someone)).user_id);
    };
    const byCount = await offered(['many', 'fat']);
    expect(byCount.map((t) => t.name)).toEqual(Array.from({ length: 96 }, (_, i) => `many__m${i}`));
    const bySize = await offered(['fat', 'many']);
    expect(bySize.map((t) => t.name)).toEqual(Array.from({ length: 8 }, (_, i) => `fat__f${i}`));
    expect(Buffer.byteLength(JSON.stringify(bySize))).toBeLessThanOrEqual(256 * 1024);
  });

  it('an authorization server whose metadata passes 256 KB is cut off there, and the connector refused with the reason', async () => {
    const res = await api.post('/connectors', { name: 'big-metadata', url: hostile.url('big-metadata') }, bearer(user));
    expect(res.status).toBe(502);
    const body = (await res.json()) as { code: string; detail: string };
    expect(body.code).toBe('CONNECTOR_UNREACHABLE');
    expect(body.detail).toMatch(/answer passed 256 KB/);
    await pumped.metadata?.done;
    expect(pumped.metadata?.cut).toBe(true);
    expect(pumped.metadata?.written).toBeLessThan(8 * MB);
  });
});

describe('connectors: a kept connection unused for CONNECTOR_IDLE_TIMEOUT is closed', () => {
  it('a call soon after the last reuses it; one after the idle time opens a new one', async () => {
    const server = await startHostileServer({ plain: () => false });
    // The idle time is at least twice the call timeout: 2 s here, looked at every second.
    const account = await startTestAccount('pglite', { CONNECTORS_ALLOW_PRIVATE: '1', CONNECTOR_CALL_TIMEOUT: '1', CONNECTOR_IDLE_TIMEOUT: '1' });
    try {
      const api = accountApi(account);
      const user = await api.email(uniqueEmail('idle'));
      const created = await api.json<{ id: string }>(await api.post('/connectors', { name: 'plain', url: server.url('plain') }, bearer(user)), 201);
      const row = await account.services.store.db.connector.findUniqueOrThrow({ where: { id: created.id } });
      const call = () => account.services.connectors.call(row.userId, 'plain__x', {}, AbortSignal.timeout(10_000));
      expect((await call()).is_error).toBe(false);
      expect(server.counts.plain?.initializes).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      expect((await call()).is_error).toBe(false);
      expect(server.counts.plain?.initializes).toBe(2);
    } finally {
      await account.stop();
      await server.close();
    }
  });
});

describe("connectors: an answer that is not an MCP server's has a time limit, whole", () => {
  it('OAuth metadata trickled a byte at a time is cut off at the limit; an MCP event stream is not', async () => {
    const { connectorFetch } = await import('../../server/account/connectors/network.js');
    const timers: NodeJS.Timeout[] = [];
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': req.headers.accept?.includes('text/event-stream') ? 'text/event-stream' : 'application/json' });
      timers.push(setInterval(() => res.write(req.headers.accept?.includes('text/event-stream') ? ': keep-alive\n\n' : ' '), 100));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const fetchFn = connectorFetch(true, MB, 10_000, 1_000);
    try {
      const started = Date.now();
      const metadata = await fetchFn(url, { headers: { accept: 'application/json' } });
      await expect(metadata.text()).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(5_000);
      // An MCP GET stream lives as long as its connection: still open past the limit.
      const stream = await fetchFn(url, { headers: { accept: 'text/event-stream' } });
      const reader = stream.body!.getReader();
      const until = Date.now() + 2_000;
      while (Date.now() < until) expect((await reader.read()).done).toBe(false);
      await reader.cancel();
    } finally {
      for (const timer of timers) clearInterval(timer);
      server.closeAllConnections();
      server.close();
    }
  });
});
