/**
 * Path spelling cannot skip the guest rules (docs/security.md, "One spelling per agent path").
 * The REST proxy read the raw path for its policy while the agent's router was case-insensitive and
 * trailing-slash tolerant: `POST /agent/CHAT` or `/agent/chat/` streamed replies after the guest
 * quota was spent, `GET /agent/MESSENGER/contacts` answered a guest 200, `/agent/chat/x/STREAM`
 * took no stream slot. Now the proxy forwards only the documented spelling of a route of the
 * agent's table, and the agent serves only that spelling too.
 *
 * The routes come from the agent's own OpenAPI document, so a route added there is walked here
 * without editing this file. Every spelling is sent byte for byte (node:http; fetch would
 * normalise dot segments and backslashes away) by a guest whose quota is spent and whose one
 * stream slot is taken: each must be 404 (or 405) without reaching the agent, and the documented
 * spelling must meet its rule (403 GUEST_LIMITED, 429 GUEST_QUOTA, 429 TOO_MANY_STREAMS).
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenPair } from '@contracts/account/tokens.js';
import { AGENT_REST_ROUTES, AGENT_ROUTES_NOT_PROXIED } from '@contracts/agent/routes.js';
import { testDeviceId } from '../support/devices.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, startTestAgent, type TestAccount, type TestAgent } from '../support/servers.js';
import { openSse, readFrames, type SseStream } from '../support/sse.js';

let model: ScriptedModel;
let account: TestAccount;
let agent: TestAgent;
/** Every `METHOD /template` of the agent's OpenAPI document. */
let documented: Array<{ method: string; path: string }>;

beforeAll(async () => {
  // Every reply sends one chunk and hangs: the stream that holds a guest's only slot stays open.
  model = await startScriptedModel({ responder: () => ({ text: ['working '], hang: true }) });
  account = await startTestAccount('pglite', {
    AGENT_PROVISIONER: 'local',
    AGENT_IDLE_TIMEOUT: '0',
    AGENT_STREAMS_PER_USER: '1',
    AGENT_REQUESTS_PER_USER: '1000',
    RATE_LIMIT_MULTIPLIER: '1',
    MODEL: model.modelSpec,
  });
  agent = await startTestAgent();
  const doc = (await (await fetch(`${agent.url}/openapi.json`, { headers: agent.auth })).json()) as { paths: Record<string, Record<string, unknown>> };
  documented = Object.entries(doc.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => ({ method: method.toUpperCase(), path })));
});
afterAll(async () => {
  await agent?.stop();
  await account?.stop();
  await model?.close();
});

/** One request with the exact bytes of `path`; the answer's status and error code. */
function raw(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; code?: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method, path, headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          // An event stream that was let through would never end: its first bytes are enough.
          if (String(res.headers['content-type']).startsWith('text/event-stream')) res.destroy();
        });
        const done = () => {
          let code: string | undefined;
          try {
            code = (JSON.parse(text) as { code?: string }).code;
          } catch {
            code = undefined;
          }
          resolve({ status: res.statusCode ?? 0, code });
        };
        res.on('end', done);
        res.on('close', done);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A concrete path for a template: each parameter filled with a plain value. */
const concrete = (template: string) =>
  template.replace(/\{(\w+)\}/g, (_m, name: string) => ({ chat_id: 'c1', run_id: 'r1', telegram_id: '1001', path: 'notes/a.txt' })[name] ?? 'x');

/** A value of `name` that is a plain segment, percent-encoded or with `;params`: still the same route. */
const encodeFirst = (segment: string) => `%${segment.charCodeAt(0).toString(16).toUpperCase()}${segment.slice(1)}`;

/**
 * Other spellings of `template`'s concrete path that must not name its route: every literal
 * segment in another case, with a letter percent-encoded, with `;params`, preceded by dot
 * segments (plain and encoded), joined by an encoded slash or a backslash; the path with a
 * trailing slash, a trailing dot segment, doubled slashes; parameters that are dot segments or
 * hide a slash.
 */
function otherSpellings(template: string, opts: { parameterValues: boolean }): string[] {
  const templateSegments = template.slice(1).split('/');
  const segments = concrete(template).slice(1).split('/');
  const literal = (i: number) => i < templateSegments.length && !/^\{\w+\}$/.test(templateSegments[i] as string);
  const join = (parts: string[]) => `/${parts.join('/')}`;
  const replaced = (i: number, value: string) => join(segments.map((s, j) => (j === i ? value : s)));
  const spellings = new Set<string>();
  segments.forEach((segment, i) => {
    if (literal(i)) {
      spellings.add(replaced(i, segment.toUpperCase()));
      spellings.add(replaced(i, segment[0]?.toUpperCase() + segment.slice(1)));
      spellings.add(replaced(i, encodeFirst(segment)));
      spellings.add(replaced(i, encodeFirst(segment).toLowerCase()));
      spellings.add(replaced(i, `${segment};x=1`));
      spellings.add(replaced(i, `${segment};`));
    } else if (opts.parameterValues) {
      for (const value of ['.', '..', '%2e', '%2E%2e', `a%2F${segment}`, `a%2f${segment}`, `a\\${segment}`, '']) spellings.add(replaced(i, value));
    }
    for (const dots of ['.', '%2e', 'x/..', 'x/%2e%2e', 'x/%2E%2E']) spellings.add(join([...segments.slice(0, i), dots, ...segments.slice(i)]));
    if (i > 0) {
      spellings.add(`${join(segments.slice(0, i))}%2F${segments.slice(i).join('/')}`);
      spellings.add(`${join(segments.slice(0, i))}%2f${segments.slice(i).join('/')}`);
      spellings.add(`${join(segments.slice(0, i))}\\${segments.slice(i).join('/')}`);
      spellings.add(`${join(segments.slice(0, i))}//${segments.slice(i).join('/')}`);
    }
  });
  const path = join(segments);
  for (const tail of ['/', '//', '/.', '/..', '/%2e', '/x/..', '#x']) spellings.add(path + tail);
  // On a parameter these make another value of it (`c1;x=1`), not another spelling of the path.
  if (literal(segments.length - 1)) for (const tail of [';x=1', '%20', '%00']) spellings.add(path + tail);
  spellings.add(`/${path}`);
  spellings.add(`/.${path}`);
  spellings.delete(path);
  return [...spellings];
}

async function guest(label: string): Promise<TokenPair & { userId: string }> {
  const pair = (await (
    await fetch(`${account.url}/api/v1/auth/guest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: testDeviceId(label) }),
    })
  ).json()) as TokenPair;
  const me = (await (await fetch(`${account.url}/api/v1/auth/me`, { headers: { authorization: `Bearer ${pair.access_token}` } })).json()) as {
    user_id: string;
  };
  return { ...pair, userId: me.user_id };
}

/** What the documented spelling of a guarded route answers this test's guests. */
function ruleOf(method: string, template: string): { status: number; code: string } | undefined {
  if (/^\/(messenger|telegram)\//.test(template)) return { status: 403, code: 'GUEST_LIMITED' };
  if (method === 'POST' && template === '/chat') return { status: 429, code: 'GUEST_QUOTA' };
  if (method === 'GET' && template === '/chat/{chat_id}/stream') return { status: 429, code: 'TOO_MANY_STREAMS' };
  return undefined;
}

/** How many answers of the agent the REST proxy has relayed (agent_proxy_seconds). */
async function relayed(via: 'rest' | 'trpc'): Promise<number> {
  const text = await (await fetch(`${account.url}/metrics`)).text();
  return Number(new RegExp(`^agent_proxy_seconds_count\\{via="${via}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

describe('path spelling', () => {
  it("the proxy's route table is the agent's: every documented route is proxied or named as not proxied", () => {
    const proxied = AGENT_REST_ROUTES.map((r) => `${r.method} ${r.path}`).filter((route) => route !== 'GET /openapi.json');
    const agentRoutes = documented.map((r) => `${r.method} ${r.path}`);
    expect(new Set(agentRoutes)).toEqual(new Set([...proxied, ...AGENT_ROUTES_NOT_PROXIED.filter((route) => route !== 'GET /docs')]));
  });

  it('no other spelling of a guarded route skips its guest rule (spent quota, messenger, stream slot): 404 before the agent', async () => {
    const spent = await guest('spelling-spent');
    const streaming = await guest('spelling-streaming');
    for (let i = 0; i < 50; i++) await account.services.rateLimits.consume('guest.chat.daily', spent.userId);
    // The streaming guest's only slot is held by a reply that does not end.
    const held: SseStream = await openSse(`${account.url}/api/v1/agent/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${streaming.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hold', chat_id: 'held' }),
    });
    await readFrames(held, (frame) => frame.data.type === 'text');
    const before = await relayed('rest');

    const routes = [...documented, ...AGENT_REST_ROUTES.filter((r) => !documented.some((d) => d.method === r.method && d.path === r.path))];
    let walked = 0;
    for (const { method, path: template } of routes) {
      const rule = ruleOf(method, template);
      const who = rule?.code === 'TOO_MANY_STREAMS' ? streaming : spent;
      const headers = { authorization: `Bearer ${who.access_token}` };
      const body = method === 'POST' || method === 'PATCH' ? JSON.stringify({ message: 'hi', chat_id: 'c1', status: 'allowed', title: 't' }) : undefined;
      if (rule) {
        expect(await raw(account.url, method, `/api/v1/agent${concrete(template)}`, headers, body), `${method} ${template}`).toMatchObject(rule);
        // Parameter values that are the same route, spelled otherwise, meet the same rule.
        if (template.includes('{')) {
          for (const value of ['c%31', 'c1;x=1', "c1:@!$&'()*+,="]) {
            const path = template.replace(/\{\w+\}/, () => value);
            expect(await raw(account.url, method, `/api/v1/agent${path}`, headers, body), `${method} ${path}`).toMatchObject(rule);
          }
        }
      }
      for (const spelling of otherSpellings(template, { parameterValues: true })) {
        const answer = await raw(account.url, method, `/api/v1/agent${spelling}`, headers, body);
        expect([404, 405], `${method} ${spelling} answered ${answer.status} ${answer.code}`).toContain(answer.status);
        walked++;
      }
    }
    // None of them reached an agent: the proxy relayed no answer.
    expect(await relayed('rest')).toBe(before);
    expect(walked).toBeGreaterThan(500);
    held.close();
  });

  it('the account prefix and method are spelled as documented too', async () => {
    const spent = await guest('spelling-spent');
    const headers = { authorization: `Bearer ${spent.access_token}` };
    const before = await relayed('rest');
    for (const path of [
      '/api/v1/AGENT/messenger/contacts',
      '/api/v1/Agent/messenger/contacts',
      '/api/v1/agent/trpc/messenger.contacts',
      '/api/v1/agent/TRPC/chat.start',
    ]) {
      expect((await raw(account.url, 'GET', path, headers)).status, path).toBe(404);
    }
    // A known path with another method: 405 with Allow, not forwarded.
    expect(await raw(account.url, 'PUT', '/api/v1/agent/chats', headers, '{}')).toMatchObject({ status: 405, code: 'METHOD_NOT_ALLOWED' });
    // HEAD is GET for the rules: a guest's HEAD of the messenger is refused like its GET.
    expect((await raw(account.url, 'HEAD', '/api/v1/agent/messenger/contacts', headers)).status).toBe(403);
    expect(await relayed('rest')).toBe(before);
  });

  it('tRPC: no spelling of a guarded procedure runs it without its rule', async () => {
    const spent = await guest('spelling-spent');
    const headers = { authorization: `Bearer ${spent.access_token}` };
    const before = await relayed('trpc');
    const start = { json: { message: 'hi', chat_id: 'c1' } };
    // The documented name meets the quota.
    expect(await raw(account.url, 'POST', '/trpc/agent.chat.start', headers, JSON.stringify(start))).toMatchObject({ status: 429 });
    for (const name of [
      'AGENT.chat.start',
      'agent.Chat.start',
      'agent.chat.START',
      'agent%2Echat.start',
      '%61gent.chat.start',
      'agent.chat.start;x=1',
      'agent.chat.start',
    ]) {
      for (const path of [`/trpc/${name}/`, `/trpc//${name}`, `/trpc/./${name}`, `/TRPC/${name}`, `/trpc/${name}`, `/trpc/${name}?batch=1`]) {
        const body = JSON.stringify(path.endsWith('batch=1') ? { 0: start } : start);
        const answer = await raw(account.url, 'POST', path, headers, body);
        expect([404, 405, 429], `${path} answered ${answer.status}`).toContain(answer.status);
      }
    }
    for (const name of [
      'agent.messenger.contacts',
      'agent.MESSENGER.contacts',
      'agent.messenger.contacts/',
      'agent%2Emessenger.contacts',
      '%61gent.messenger.contacts',
    ]) {
      const answer = await raw(account.url, 'GET', `/trpc/${name}?input=${encodeURIComponent(JSON.stringify({ json: {} }))}`, headers);
      expect([403, 404], `${name} answered ${answer.status}`).toContain(answer.status);
    }
    expect(await relayed('trpc')).toBe(before);
  });

  it("the agent's own routing is case-sensitive and strict: other spellings are refused there too", async () => {
    for (const { method, path: template } of documented) {
      // A parameter's value is the route's to judge (its schema, the workspace guard), so only the
      // path's structure is varied; `#` starts a fragment for express (the proxy refuses it).
      for (const spelling of otherSpellings(template, { parameterValues: false }).filter((s) => !s.includes('#'))) {
        const answer = await raw(agent.url, method, spelling, agent.auth, method === 'POST' || method === 'PATCH' ? '{}' : undefined);
        expect(answer.status, `${method} ${spelling}`).toBeGreaterThanOrEqual(400);
        expect(answer.status, `${method} ${spelling}`).toBeLessThan(500);
      }
    }
    for (const [method, path] of [
      ['POST', '/CHAT'],
      ['POST', '/Chat'],
      ['POST', '/chat/'],
      ['POST', '//chat'],
      ['GET', '/chat/c1/STREAM'],
      ['GET', '/chat/c1/stream/'],
      ['GET', '/MESSENGER/contacts'],
      ['GET', '/messenger/contacts/'],
      ['GET', '/Chats'],
      ['POST', '/TRPC/chat.start'],
    ] as const) {
      expect((await raw(agent.url, method, path, agent.auth, method === 'POST' ? '{}' : undefined)).status, path).toBe(404);
    }
  });
});
