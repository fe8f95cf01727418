/**
 * GET /metrics on both services: Prometheus text, requests counted by route template with the
 * right amounts, no label ever carrying an id, a token or a raw path a caller sent, and only the
 * callers the design allows (METRICS_TOKEN, or loopback with no proxy in between).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import { lastUserText, startScriptedModel, type Responder, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, startTestAgent, type TestAccount, type TestAgent } from '../support/servers.js';
import { openSse, readFrames } from '../support/sse.js';

const SECRETISH = 'zz9plural-z-alpha';
let account: TestAccount;
let agent: TestAgent;
let guarded: TestAccount;

beforeAll(async () => {
  [account, agent, guarded] = await Promise.all([
    startTestAccount('pglite'),
    startTestAgent(),
    startTestAccount('pglite', { METRICS_TOKEN: 'metrics-token-0123456789' }),
  ]);
});
afterAll(async () => {
  await Promise.all([account?.stop(), agent?.stop(), guarded?.stop()]);
});

const scrape = async (url: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${url}/metrics`, { headers });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
};

/** The value of the first series of `name` carrying all of `labels`, 0 when absent. */
function value(text: string, name: string, labels: Record<string, string> = {}): number {
  const line = text
    .split('\n')
    .find((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

/** The count of one series of the request histogram, 0 when absent. */
function requestCount(text: string, labels: { method: string; route: string; status: string }): number {
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('http_request_duration_seconds_count{') &&
        l.includes(`method="${labels.method}"`) &&
        l.includes(`route="${labels.route}"`) &&
        l.includes(`status="${labels.status}"`),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('account service', () => {
  it('counts requests by route template, by the right amounts', async () => {
    const before = await scrape(account.url);
    expect(before.status).toBe(200);
    expect(before.type).toContain('text/plain');
    expect(before.text).toContain('process_resident_memory_bytes');
    const series = { method: 'POST', route: '/auth/guest', status: '2xx' };
    const start = requestCount(before.text, series);
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${account.url}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: `metrics-device-${i}-0123456789abcdef` }),
      });
      expect(res.status).toBe(200);
    }
    await fetch(`${account.url}/api/v1/auth/me`);
    const after = await scrape(account.url);
    expect(requestCount(after.text, series)).toBe(start + 3);
    expect(requestCount(after.text, { method: 'GET', route: '/auth/me', status: '4xx' })).toBeGreaterThanOrEqual(1);
  });

  it('counts sign-ins by method and result, refreshes by result and rate-limit refusals by limit', async () => {
    const strict = await startTestAccount('pglite', { RATE_LIMIT_MULTIPLIER: '1' });
    try {
      const post = (path: string, body: unknown) =>
        fetch(`${strict.url}/api/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const pair = (await (await post('/auth/guest', { device_id: 'metrics-counted-device-0123456789' })).json()) as { refresh_token: string };
      expect((await post('/auth/refresh', { refresh_token: pair.refresh_token })).status).toBe(200);
      await post('/auth/refresh', { refresh_token: 'not.a.token' });
      await post('/auth/verify-magic-link', { code: '000000', email: 'nobody@example.com' });
      for (let i = 0; i < 11; i++) await post('/auth/wallet/challenge', { address: '0x0000000000000000000000000000000000000001' });
      const text = (await scrape(strict.url)).text;
      expect(value(text, 'sign_ins_total', { method: 'guest', result: 'ok' })).toBe(1);
      expect(value(text, 'token_refreshes_total', { result: 'rotated' })).toBe(1);
      expect(value(text, 'token_refreshes_total', { result: 'invalid' })).toBe(1);
      expect(value(text, 'sign_ins_total', { method: 'email' })).toBe(1);
      expect(value(text, 'rate_limit_refusals_total', { limit: 'auth.wallet.challenge' })).toBe(1);
    } finally {
      await strict.stop();
    }
  });

  it('never turns what a caller sent into a label', async () => {
    const token = `Bearer ${SECRETISH}`;
    await fetch(`${account.url}/api/v1/agent/chat/${SECRETISH}/history`, { headers: { authorization: token } });
    await fetch(`${account.url}/api/v1/${SECRETISH}`);
    await fetch(`${account.url}/trpc/${SECRETISH}.query`);
    await fetch(`${account.url}/api/v1/auth/guest`, { method: SECRETISH.toUpperCase().replace(/[^A-Z]/g, '') });
    await fetch(`${account.url}/${SECRETISH}?token=${SECRETISH}`);
    const { text } = await scrape(account.url);
    expect(text).not.toContain(SECRETISH);
    expect(text).not.toMatch(/ZZPLURALZALPHA/);
    expect(text).toContain('route="/trpc/*"');
    expect(text).toContain('route="/agent/*"');
  });

  it('is served to loopback callers only, never through a proxy, unless METRICS_TOKEN is set', async () => {
    expect((await scrape(account.url, { 'x-forwarded-for': '203.0.113.9' })).status).toBe(403);
    expect((await scrape(account.url, { forwarded: 'for=203.0.113.9' })).status).toBe(403);
    const refused = await scrape(guarded.url);
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.text)).toMatchObject({ code: 'UNAUTHORIZED' });
    expect((await scrape(guarded.url, { authorization: 'Bearer metrics-token-0123456789x' })).status).toBe(401);
    expect((await scrape(guarded.url, { authorization: 'Bearer metrics-token-0123456789', 'x-forwarded-for': '203.0.113.9' })).status).toBe(200);
  });
});

describe('agent', () => {
  it('serves its metrics without the agent secret to loopback callers, by route template', async () => {
    await fetch(`${agent.url}/chat/${SECRETISH}/history`, { headers: agent.auth });
    const { status, text } = await scrape(agent.url);
    expect(status).toBe(200);
    expect(text).toContain('service="agent"');
    expect(requestCount(text, { method: 'GET', route: '/chat/{chat_id}/history', status: '2xx' })).toBe(1);
    expect(text).not.toContain(SECRETISH);
  });

  it('admits its own secret besides METRICS_TOKEN, and answers JSON only when asked', async () => {
    const guardedAgent = await startTestAgent({ METRICS_TOKEN: 'agent-metrics-token-0123456789' });
    try {
      expect((await scrape(guardedAgent.url)).status).toBe(401);
      expect((await scrape(guardedAgent.url, { authorization: `Bearer ${guardedAgent.secret}x` })).status).toBe(401);
      const text = await scrape(guardedAgent.url, guardedAgent.auth);
      expect(text.status).toBe(200);
      expect(text.type).toContain('text/plain');
      // Prometheus's own Accept lists */* too: it still gets text.
      expect(
        (await scrape(guardedAgent.url, { ...guardedAgent.auth, accept: 'application/openmetrics-text;q=0.9,text/plain;q=0.5,*/*;q=0.1' })).type,
      ).toContain('text/plain');
      const json = await scrape(guardedAgent.url, { ...guardedAgent.auth, accept: 'application/json' });
      expect(json.type).toContain('application/json');
      expect((JSON.parse(json.text) as Array<{ name: string }>).map((m) => m.name)).toContain('chat_runs_total');
    } finally {
      await guardedAgent.stop();
    }
  });
});

/**
 * The scripted model plays: a tool call then text for `use a tool`, a call to a tool no agent has
 * for `make one up`, a reply that never ends for `hang`, plain text otherwise.
 */
const SCRIPT: Responder = (request) => {
  if (request.messages.at(-1)?.role === 'tool') return { text: 'after the tool' };
  const said = lastUserText(request);
  if (said === 'use a tool') return { toolCalls: [{ name: 'list_files', args: {} }] };
  if (said === 'make one up') return { toolCalls: [{ name: SECRETISH, args: {} }] };
  if (said === 'hang') return { text: 'partial', hang: true };
  return { text: 'ok' };
};

const chatBody = (message: string, chatId = `c-${SECRETISH}-${randomUUID()}`) => JSON.stringify({ message, chat_id: chatId });

function uploadForm(bytes: number): FormData {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes).fill(120)]), `${SECRETISH}.txt`);
  return form;
}

describe('a scripted session', () => {
  let model: ScriptedModel;
  beforeAll(async () => {
    model = await startScriptedModel({ responder: SCRIPT });
  });
  afterAll(async () => {
    await model?.close();
  });

  it('on the agent: runs by outcome, tool calls by tool and result, upload bytes and open streams move by the right amounts', async () => {
    const chatting = await startTestAgent({ MODEL: model.modelSpec });
    try {
      const headers = { ...chatting.auth, 'content-type': 'application/json' };
      const before = (await scrape(chatting.url)).text;
      const send = async (message: string) => (await fetch(`${chatting.url}/chat`, { method: 'POST', headers, body: chatBody(message) })).text();
      expect(await send('use a tool')).toContain('after the tool');
      expect(await send('make one up')).toContain('"type":"done"');
      expect(await send('hello')).toContain('"type":"done"');

      // A reply that hangs: one stream open while it runs, stopped on request, none after.
      const chatId = `c-${randomUUID()}`;
      const stream = await openSse(`${chatting.url}/chat`, { method: 'POST', headers, body: chatBody('hang', chatId) });
      await readFrames(stream, (frame) => frame.data.type === 'text');
      expect(value((await scrape(chatting.url)).text, 'sse_streams_open')).toBe(1);
      expect((await fetch(`${chatting.url}/chat/${chatId}/stop`, { method: 'POST', headers: chatting.auth })).status).toBeLessThan(300);
      await readFrames(stream);

      const uploaded = await fetch(`${chatting.url}/files/upload`, { method: 'POST', headers: chatting.auth, body: uploadForm(1234) });
      expect(uploaded.status).toBe(200);
      const after = (await scrape(chatting.url)).text;
      const moved = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
      expect(moved('chat_runs_total', { outcome: 'completed' })).toBe(3);
      expect(moved('chat_runs_total', { outcome: 'stopped' })).toBe(1);
      expect(moved('tool_calls_total', { tool: 'list_files', result: 'ok' })).toBe(1);
      expect(moved('tool_calls_total', { tool: 'unknown', result: 'invalid_input' })).toBe(1);
      expect(moved('upload_bytes_total')).toBe(1234);
      expect(value(after, 'sse_streams_open')).toBe(0);
      expect(after).not.toContain(SECRETISH);
      expect(after).not.toContain(chatId);
    } finally {
      await chatting.stop();
    }
  });

  it('on the account service with a local agent: sign-in, cold start, proxy latency and relayed streams, then a crash', async () => {
    const account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0', MODEL: model.modelSpec });
    try {
      const api = `${account.url}/api/v1`;
      const signIn = await fetch(`${api}/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: `metrics-session-${randomUUID()}` }),
      });
      const { access_token: token } = (await signIn.json()) as TokenPair;
      const auth = { authorization: `Bearer ${token}` };
      const me = (await (await fetch(`${api}/auth/me`, { headers: auth })).json()) as { user_id: string };

      const stream = await openSse(`${api}/agent/chat`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: chatBody('use a tool'),
      });
      await readFrames(stream, (frame) => frame.data.type === 'tool_use');
      expect(value((await scrape(account.url)).text, 'sse_streams_open')).toBe(1);
      const frames = await readFrames(stream);
      expect(frames.at(-1)?.data.type).toBe('done');
      expect((await fetch(`${api}/agent/files/upload`, { method: 'POST', headers: auth, body: uploadForm(100) })).status).toBe(200);

      let text = (await scrape(account.url)).text;
      expect(value(text, 'sign_ins_total', { method: 'guest', result: 'ok' })).toBe(1);
      expect(value(text, 'agent_cold_start_seconds_count')).toBe(1);
      expect(value(text, 'agent_cold_start_seconds_sum')).toBeGreaterThan(0);
      expect(value(text, 'agent_proxy_seconds_count', { via: 'rest' })).toBe(2);
      expect(value(text, 'agents_running')).toBe(1);
      expect(value(text, 'agents_starting')).toBe(0);
      expect(value(text, 'agents_crashed_total')).toBe(0);
      expect(value(text, 'sse_streams_open')).toBe(0);
      // The agent's own series, read over its socket and summed under agents_ with no id in a label.
      expect(value(text, 'agents_chat_runs_total', { outcome: 'completed', service: 'agent' })).toBe(1);
      expect(value(text, 'agents_tool_calls_total', { tool: 'list_files', result: 'ok' })).toBe(1);
      expect(value(text, 'agents_upload_bytes_total')).toBe(100);
      expect(text).toMatch(/^agents_sse_streams_open\{service="agent"\} 0$/m);
      expect(value(text, 'agent_metrics_scrape_failures_total')).toBe(0);
      expect(text).not.toMatch(/^agents_(process|nodejs|http)_/m);
      const types = text.split('\n').filter((l) => l.startsWith('# TYPE '));
      expect(new Set(types.map((l) => l.split(' ')[2])).size).toBe(types.length);
      expect(text).not.toContain(me.user_id);

      // The agent dies: counted once as a crash (and restarted with backoff).
      const { provisioner } = account.services.agents;
      if (!(provisioner instanceof LocalProvisioner)) throw new Error('expected local agents');
      process.kill(provisioner.processes()[0]?.pid as number, 'SIGKILL');
      for (const deadline = Date.now() + 10_000; value(text, 'agents_crashed_total') < 1 && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 50));
        text = (await scrape(account.url)).text;
      }
      expect(value(text, 'agents_crashed_total')).toBe(1);
      expect(text).not.toContain(me.user_id);
      expect(text).not.toContain(token);
      expect(text).not.toContain(SECRETISH);

      // A stopped agent is simply absent: its counters leave the sums, the scrape succeeds.
      await provisioner.deleteAgentOf(me.user_id);
      const { status, text: after } = await scrape(account.url);
      expect(status).toBe(200);
      expect(after).not.toMatch(/^agents_chat_runs_total/m);
      expect(value(after, 'agents_running')).toBe(0);
    } finally {
      await account.stop();
    }
  });
});
