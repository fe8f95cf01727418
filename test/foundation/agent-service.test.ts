import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestAgent, type TestAgent } from '../support/servers.js';

let agent: TestAgent;
beforeAll(async () => {
  agent = await startTestAgent({ AGENT_NAME: 'probe' });
});
afterAll(() => agent.stop());

const json = { 'content-type': 'application/json' };

describe('agent health and auth', () => {
  it('answers /health without a secret', async () => {
    const res = await fetch(`${agent.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', agent_name: 'probe', version: expect.any(String) });
  });

  it.each([
    ['no header', {}],
    ['wrong secret', { authorization: 'Bearer not-the-secret-at-all' }],
    ['empty bearer', { authorization: 'Bearer ' }],
    ['wrong scheme', { authorization: 'Basic abc' }],
    ['garbage', { authorization: '\u0001\u0002'.replace(/[^\x20-\x7e]/g, 'x') }],
  ])('refuses %s with 401 and the error body', async (_name, headers) => {
    const res = await fetch(`${agent.url}/chat`, { method: 'POST', headers: { ...json, ...headers }, body: JSON.stringify({ message: 'hi', chat_id: 'c1' }) });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ detail: expect.any(String), code: 'INVALID_AGENT_SECRET' });
  });

  it('accepts the secret given as its SHA-256 hash', async () => {
    const { createHash } = await import('node:crypto');
    const hashed = await startTestAgent({ AGENT_SECRET_SHA256: createHash('sha256').update(agent.secret).digest('hex') });
    // startTestAgent also passes a random AGENT_SECRET; the hash takes precedence over it.
    const res = await fetch(`${hashed.url}/openapi.json`, { headers: agent.auth });
    expect(res.status).toBe(200);
    await hashed.stop();
  });

  it('guards /trpc with the same check', async () => {
    const res = await fetch(`${agent.url}/trpc/chat.send?input=${encodeURIComponent(JSON.stringify({ json: { message: 'x', chat_id: 'c' } }))}`);
    const text = await res.text();
    expect(text).toContain('INVALID_AGENT_SECRET');
    const health = await fetch(`${agent.url}/trpc/health.get`);
    expect(health.status).toBe(200);
  });
});

describe('REST bridge on the agent', () => {
  it('streams SSE `data:` lines from the chat subscription (no MODEL: a plain reply, then done)', async () => {
    const res = await fetch(`${agent.url}/chat`, {
      method: 'POST',
      headers: { ...json, ...agent.auth },
      body: JSON.stringify({ message: 'hi', chat_id: 'c1' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('cache-control')).toContain('no-cache');
    const body = await res.text();
    const frames = body.trim().split('\n\n');
    expect(frames.at(-1)).toMatch(/^id: [0-9a-f]+-\d+\ndata: \{"type":"done"\}$/);
    expect(frames[0]).toMatch(/"type":"text".*no model is configured/i);
  });

  it('serves the generated OpenAPI document', async () => {
    const res = await fetch(`${agent.url}/openapi.json`, { headers: agent.auth });
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/health', '/chat']));
  });

  it('answers unknown routes with 404 and the error body', async () => {
    const res = await fetch(`${agent.url}/no/such/route`, { headers: agent.auth });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: expect.any(String), code: 'ROUTE_NOT_FOUND' });
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const res = await fetch(`${agent.url}/health`, { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toContain('GET');
    expect(await res.json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED' });
  });

  it('refuses malformed JSON with 400', async () => {
    const res = await fetch(`${agent.url}/chat`, { method: 'POST', headers: { ...json, ...agent.auth }, body: '{"message":' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'MALFORMED_JSON' });
  });

  it('refuses a non-JSON content type with 415', async () => {
    const res = await fetch(`${agent.url}/chat`, { method: 'POST', headers: { 'content-type': 'text/plain', ...agent.auth }, body: 'message=hi' });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
  });

  it('refuses bodies over 1 MB with 413', async () => {
    const res = await fetch(`${agent.url}/chat`, {
      method: 'POST',
      headers: { ...json, ...agent.auth },
      body: JSON.stringify({ message: 'x'.repeat(1_100_000), chat_id: 'c1' }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
  });

  it('refuses JSON that is not an object with 400', async () => {
    const res = await fetch(`${agent.url}/chat`, { method: 'POST', headers: { ...json, ...agent.auth }, body: '[1,2]' });
    expect(res.status).toBe(400);
  });

  it('reports validation failures with issues and no stack', async () => {
    const res = await fetch(`${agent.url}/chat`, {
      method: 'POST',
      headers: { ...json, ...agent.auth },
      body: JSON.stringify({ message: '', chat_id: '../x' }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; issues: Array<{ path: string }> };
    expect(body.code).toBe('VALIDATION_FAILED');
    expect(body.issues.map((i) => i.path).sort()).toEqual(['chat_id', 'message']);
    expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+/);
  });

  it('echoes a sane X-Request-Id and replaces a hostile one', async () => {
    const mine = await fetch(`${agent.url}/health`, { headers: { 'x-request-id': 'abc-123' } });
    expect(mine.headers.get('x-request-id')).toBe('abc-123');
    const hostile = await fetch(`${agent.url}/health`, { headers: { 'x-request-id': 'a b<script>' } });
    expect(hostile.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(mine.headers.get('x-powered-by')).toBeNull();
  });
});
