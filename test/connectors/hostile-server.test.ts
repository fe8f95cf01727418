/**
 * Connectors against a hostile MCP server (a real loopback HTTP server speaking streamable HTTP,
 * written here to misbehave): what it can make the account service do is bounded
 * (docs/connectors.md, Bounds). A tool list that pages for ever or in a circle is read for ten
 * pages at most and what was listed kept, the reason shown on the connector.
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

/** How one path of the hostile server answers a request, and what it counts. */
type Behaviour = (msg: JsonRpc, res: http.ServerResponse) => boolean;

interface Counts {
  listPages: number;
}

const tool = (name: string) => ({ name, description: name, inputSchema: { type: 'object' } });

/**
 * A streamable HTTP server at `/<behaviour>/mcp`: initialize answers as any server does, the rest as
 * the behaviour says; GET streams are not offered (405) unless a behaviour takes them.
 */
async function startHostileServer(behaviours: Record<string, Behaviour>) {
  const counts: Record<string, Counts> = Object.fromEntries(Object.keys(behaviours).map((name) => [name, { listPages: 0 }]));
  const server = http.createServer((req, res) => {
    const name = req.url?.split('/')[1] ?? '';
    const behaviour = behaviours[name];
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (!behaviour || req.method !== 'POST') return void res.writeHead(behaviour ? 405 : 404).end();
      const msg = JSON.parse(Buffer.concat(chunks).toString()) as JsonRpc;
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === 'tools/list') (counts[name] as Counts).listPages++;
      if (behaviour(msg, res)) return;
      if (msg.method === 'initialize')
        return reply(res, msg, {
          protocolVersion: msg.params?.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: 'hostile', version: '1' },
        });
      reply(res, msg, {});
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (name: string) => `${base}/${name}/mcp`,
    counts,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function reply(res: http.ServerResponse, msg: JsonRpc, result: unknown): true {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  return true;
}

describe('connectors: a hostile MCP server cannot make the service work without bound', () => {
  let hostile: Awaited<ReturnType<typeof startHostileServer>>;
  let account: TestAccount;
  let api: ReturnType<typeof accountApi>;
  let user: Pair;

  beforeAll(async () => {
    hostile = await startHostileServer({
      // Page after page, never a tool, always another page.
      endless: (msg, res) => msg.method === 'tools/list' && reply(res, msg, { tools: [], nextCursor: `page-${Math.random()}` }),
      // One tool a page, and the third page points back at the second.
      circle: (msg, res) => {
        if (msg.method !== 'tools/list') return false;
        const cursor = msg.params?.cursor as string | undefined;
        return reply(res, msg, { tools: [tool(`t-${cursor ?? 'first'}`)], nextCursor: cursor === 'b' ? 'a' : cursor === 'a' ? 'b' : 'a' });
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
});
