/**
 * Connectors against the reference MCP server (`@modelcontextprotocol/server-everything`, streamable
 * HTTP, started here on loopback): the REST API with its hostile cases, and a real sandboxed agent,
 * driven by the scripted model, calling the server's tools through the egress gateway (echo,
 * get-sum, an image, a long-running tool, and the server killed mid-call), and how soon a change
 * made elsewhere or here reaches the calls.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountApi, bearer, uniqueEmail, type Pair } from '../support/account-api.js';
import { startEverythingServer, type EverythingServer } from '../support/mcp-everything.js';
import { lastUserText, startScriptedModel, type ModelRequest, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

interface Created {
  id: string;
  name: string;
  url: string;
  status: string;
  authorize_url?: string;
}
interface Listed {
  connectors: Array<{ id: string; name: string; status: string; tools: Array<{ name: string; enabled: boolean }> }>;
}

/** What the user asks → the tool call the scripted model makes. */
const CALLS: Record<string, { name: string; args: unknown }> = {
  'echo please': { name: 'everything__echo', args: { message: 'hello from the agent' } },
  'add please': { name: 'everything__get-sum', args: { a: 19, b: 23 } },
  'image please': { name: 'everything__get-tiny-image', args: {} },
  'long please': { name: 'everything__trigger-long-running-operation', args: { duration: 1, steps: 2 } },
  'doomed please': { name: 'doomed__trigger-long-running-operation', args: { duration: 20, steps: 20 } },
  'second echo please': { name: 'second__echo', args: { message: 'hello from the agent' } },
};

/** The tool result the model was sent for the last call of a request. */
const toolResult = (request: ModelRequest | undefined) => String(request?.messages.findLast((m) => m.role === 'tool')?.content ?? '');

describe('connectors: the reference MCP server, through the API and a real agent', () => {
  let server: EverythingServer;
  let doomed: EverythingServer;
  let model: ScriptedModel;
  let account: TestAccount;
  let api: ReturnType<typeof accountApi>;
  let alice: Pair;
  let mallory: Pair;

  beforeAll(async () => {
    [server, doomed] = await Promise.all([startEverythingServer(), startEverythingServer()]);
    model = await startScriptedModel({
      responder: (request) => {
        if (request.messages.at(-1)?.role === 'tool') return { text: `the tool said: ${toolResult(request).slice(0, 200)}` };
        const call = CALLS[lastUserText(request)];
        return call ? { toolCalls: [call] } : { text: 'ok' };
      },
    });
    account = await startTestAccount('pglite', {
      AGENT_PROVISIONER: 'local',
      AGENT_IDLE_TIMEOUT: '0',
      MODEL: model.modelSpec,
      CONNECTORS_ALLOW_PRIVATE: '1',
      CONNECTOR_CALL_TIMEOUT: '30',
    });
    api = accountApi(account);
    [alice, mallory] = await Promise.all([api.email(uniqueEmail('alice')), api.email(uniqueEmail('mallory'))]);
  }, 120_000);
  afterAll(async () => {
    await account?.stop();
    await model?.close();
    await server?.stop();
    await doomed?.stop();
  });

  const chat = async (pair: Pair, message: string) => {
    const res = await api.post('/agent/chat', { message, chat_id: `c-${randomUUID()}` }, bearer(pair));
    const text = await res.text();
    return text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as { type: string; [key: string]: unknown });
  };

  it('adds the server by URL (201 connected), lists its tools, and guests are refused', async () => {
    const res = await api.post('/connectors', { name: 'everything', url: server.url }, bearer(alice));
    const created = await api.json<Created>(res, 201);
    expect(created).toMatchObject({ name: 'everything', url: server.url, status: 'connected' });
    expect(created.authorize_url).toBeUndefined();
    const list = await api.json<Listed>(await api.get('/connectors', bearer(alice)));
    const names = list.connectors[0]?.tools.map((tool) => tool.name) ?? [];
    expect(names).toEqual(expect.arrayContaining(['echo', 'get-sum', 'get-tiny-image', 'trigger-long-running-operation']));
    expect(list.connectors[0]?.tools.every((tool) => tool.enabled)).toBe(true);

    const guest = await api.guest();
    const refused = await api.post('/connectors', { name: 'mine', url: server.url }, bearer(guest));
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe('CONNECTORS_NOT_FOR_GUESTS');
    expect((await api.get('/connectors', bearer(guest))).status).toBe(403);
    expect((await api.get('/connectors')).status).toBe(401);
  });

  it('refuses bad URLs, metadata addresses in every spelling, oversize and taken names, and other users’ ids', async () => {
    const refusedWith = async (body: unknown, code: string, status = 400) => {
      const res = await api.post('/connectors', body, bearer(mallory));
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(((await res.json()) as { code: string }).code, JSON.stringify(body)).toBe(code);
    };
    for (const url of [
      'ftp://example.com/mcp',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'http://user:pw@127.0.0.1:1/mcp',
      // Cloud metadata is refused even with CONNECTORS_ALLOW_PRIVATE=1, however it is spelt.
      'http://169.254.169.254/latest/meta-data/',
      'http://2852039166/',
      'http://0xa9.0xfe.0xa9.0xfe/',
      'http://[::ffff:169.254.169.254]/',
      'http://[fd00:ec2::254]/',
      'http://100.100.100.200/',
      // The service itself.
      `${account.url}/api/v1/connectors`,
    ]) {
      await refusedWith({ name: 'bad', url }, 'CONNECTOR_URL_REFUSED');
    }
    await refusedWith({ name: 'x'.repeat(25), url: server.url }, 'VALIDATION_FAILED');
    await refusedWith({ name: 'has__underscores', url: server.url }, 'VALIDATION_FAILED');
    await refusedWith({ name: 'long', url: `http://127.0.0.1/${'a'.repeat(3000)}` }, 'VALIDATION_FAILED');
    // A port where nothing answers as MCP.
    await refusedWith({ name: 'nothing', url: 'http://127.0.0.1:9/mcp' }, 'CONNECTOR_UNREACHABLE', 502);
    await api.json<Created>(await api.post('/connectors', { name: 'taken', url: server.url }, bearer(mallory)), 201);
    await refusedWith({ name: 'taken', url: server.url }, 'CONNECTOR_NAME_TAKEN', 409);

    // Alice's connector is not Mallory's to see, change, remove or sign in to.
    const [aliceConnector] = (await api.json<Listed>(await api.get('/connectors', bearer(alice)))).connectors;
    const id = aliceConnector?.id ?? '';
    expect((await api.call('PATCH', `/connectors/${id}`, bearer(mallory), { tools: { echo: false } })).status).toBe(404);
    expect((await api.del(`/connectors/${id}`, bearer(mallory))).status).toBe(404);
    expect((await api.post(`/connectors/${id}/authorize`, {}, bearer(mallory))).status).toBe(404);
    expect((await api.get(`/connectors/not-a-uuid`, bearer(mallory))).status).toBeGreaterThanOrEqual(400);
    const mine = (await api.json<Listed>(await api.get('/connectors', bearer(mallory)))).connectors;
    expect(mine.map((c) => c.name)).toEqual(['taken']);
    expect((await api.json<Listed>(await api.get('/connectors', bearer(alice)))).connectors[0]?.tools.find((t) => t.name === 'echo')?.enabled).toBe(true);
  });

  it('the model is offered the enabled tools with their schemas, and echo and get-sum answer through the gateway', async () => {
    const before = model.requests.length;
    const events = await chat(alice, 'echo please');
    const offered = model.requests[before]?.tools?.map((tool) => tool.function.name) ?? [];
    expect(offered).toEqual(expect.arrayContaining(['everything__echo', 'everything__get-sum', 'read_file']));
    const echo = model.requests[before]?.tools?.find((tool) => tool.function.name === 'everything__echo');
    expect(echo?.function.parameters).toMatchObject({ type: 'object', properties: { message: { type: 'string' } } });
    expect(events).toContainEqual(expect.objectContaining({ type: 'tool_use', name: 'everything__echo' }));
    expect(toolResult(model.requests.at(-1))).toContain('Echo: hello from the agent');
    expect(events.at(-1)?.type).toBe('done');

    await chat(alice, 'add please');
    expect(toolResult(model.requests.at(-1))).toContain('42');
  });

  it('a switched-off tool is no longer offered, and calling it anyway is an error the model reads', async () => {
    const [connector] = (await api.json<Listed>(await api.get('/connectors', bearer(alice)))).connectors;
    await api.json(await api.call('PATCH', `/connectors/${connector?.id}`, bearer(alice), { tools: { 'get-sum': false } }));
    const before = model.requests.length;
    await chat(alice, 'add please');
    expect(model.requests[before]?.tools?.map((tool) => tool.function.name)).not.toContain('everything__get-sum');
    expect(toolResult(model.requests.at(-1))).toMatch(/unavailable tool|no enabled tool/);
    await api.json(await api.call('PATCH', `/connectors/${connector?.id}`, bearer(alice), { tools: { 'get-sum': true } }));
  });

  it('a change reaches the calls promptly: made by another instance (in the store) within 2 s, a removal here at once', async () => {
    const created = await api.json<Created>(await api.post('/connectors', { name: 'second', url: server.url }, bearer(alice)), 201);
    await chat(alice, 'second echo please');
    expect(toolResult(model.requests.at(-1))).toContain('Echo: hello from the agent');
    // The call above left this instance holding the rows; another instance switches echo off.
    await account.services.store.db.connector.update({ where: { id: created.id }, data: { disabledTools: ['echo'] } });
    const changed = Date.now();
    let refused = false;
    while (!refused && Date.now() - changed < 10_000) {
      const startedAfter = Date.now() - changed;
      await chat(alice, 'second echo please');
      refused = /unavailable tool|no enabled tool/.test(toolResult(model.requests.at(-1)));
      // Rows are reused for 2 s (connectors.ts ROWS_TTL_MS): a run that starts later reads the change.
      if (startedAfter > 2_200) expect(refused, `a run started ${startedAfter} ms after the change`).toBe(true);
    }
    expect(refused).toBe(true);

    await api.json(await api.call('PATCH', `/connectors/${created.id}`, bearer(alice), { tools: { echo: true } }));
    await chat(alice, 'second echo please');
    expect(toolResult(model.requests.at(-1))).toContain('Echo: hello from the agent');
    expect((await api.del(`/connectors/${created.id}`, bearer(alice))).status).toBe(204);
    await chat(alice, 'second echo please');
    expect(toolResult(model.requests.at(-1))).toMatch(/unavailable tool|No connector named second/);
  });

  it('an image result is saved in the workspace and shown to the user; a long-running tool finishes', async () => {
    const events = await chat(alice, 'image please');
    const file = events.find((event) => event.type === 'file') as { path: string } | undefined;
    expect(file?.path).toMatch(/^connectors\/everything__get-tiny-image-.*\.png$/);
    expect(toolResult(model.requests.at(-1))).toContain('image/png');
    const res = await fetch(`${account.url}/api/v1/agent/files/${file?.path}`, { headers: bearer(alice) });
    expect(res.status).toBe(200);
    expect(
      Buffer.from(await res.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');

    await chat(alice, 'long please');
    expect(toolResult(model.requests.at(-1))).toContain('Long running operation completed');
  });

  it('an image is never written outside the workspace: with connectors/ made a link out of it, the call fails and nothing lands there', async () => {
    await chat(alice, 'image please'); // the agent and its workspace exist
    const agent = await account.services.agents.registry.forUser((await api.me(alice)).user_id);
    const workspace = path.join(account.dataDir, 'agents', agent?.id ?? 'none', 'workspace');
    const outside = await mkdtemp(path.join(tmpdir(), 'connectors-outside-'));
    await rm(path.join(workspace, 'connectors'), { recursive: true, force: true });
    await symlink(outside, path.join(workspace, 'connectors'));
    try {
      const events = await chat(alice, 'image please');
      expect(events.some((event) => event.type === 'file')).toBe(false);
      expect(toolResult(model.requests.at(-1))).toMatch(/symbolic link|outside the workspace/);
      expect(await readdir(outside)).toEqual([]);
    } finally {
      await rm(path.join(workspace, 'connectors'), { force: true });
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('a server killed mid-call gives the model an error within seconds, and the run ends', async () => {
    await api.json<Created>(await api.post('/connectors', { name: 'doomed', url: doomed.url }, bearer(alice)), 201);
    const started = Date.now();
    const running = chat(alice, 'doomed please');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await doomed.kill();
    const events = await running;
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(events.at(-1)?.type).toBe('done');
    expect(toolResult(model.requests.at(-1))).toMatch(/failed|closed|terminated|did not answer/i);
  });
});
