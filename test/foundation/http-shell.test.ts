/**
 * The express shell's http server (server/common/http.ts `listen`): requests and responses are
 * built with the app's prototypes, so express's per-request re-parenting has nothing to do, and
 * they behave as express's own (its request getters and response helpers, Node's streams).
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, finishHttpApp, jsonBody, listen, type RunningServer } from '../../server/common/http.js';
import { createLogger } from '../../server/common/log.js';

describe('http shell: listen', () => {
  let server: RunningServer;
  const seenBeforeExpress: Array<{ request: boolean; response: boolean }> = [];

  beforeAll(async () => {
    const app = createHttpApp(createLogger('test', 'silent'));
    app.post('/echo', jsonBody, (req, res) => {
      res.status(201).json({
        body: req.body as unknown,
        ip: req.ip,
        isJson: req.is('application/json'),
        requestPrototype: Object.getPrototypeOf(req) === app.request,
        responsePrototype: Object.getPrototypeOf(res) === app.response,
        nodeTypes: req instanceof IncomingMessage && res instanceof ServerResponse,
      });
    });
    finishHttpApp(app);
    server = await listen(app, '127.0.0.1', 0);
    // Runs before express's handler: what Node's parser built, before express could re-parent it.
    server.server.prependListener('request', (req, res) => {
      seenBeforeExpress.push({ request: Object.getPrototypeOf(req) === app.request, response: Object.getPrototypeOf(res) === app.response });
    });
  });
  afterAll(() => server.close());

  it('builds requests and responses with the app prototypes, before express sees them', async () => {
    const res = await fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({
      body: { n: 1 },
      ip: '127.0.0.1',
      isJson: 'application/json',
      requestPrototype: true,
      responsePrototype: true,
      nodeTypes: true,
    });
    expect(seenBeforeExpress.at(-1)).toEqual({ request: true, response: true });
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-request-id')).toMatch(/^[\w-]+$/);
  });

  it('keeps express behaviour for errors, unknown routes and keep-alive connections', async () => {
    const bad = await fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ detail: expect.any(String), code: expect.any(String) });
    const missing = await fetch(`${server.url}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'ROUTE_NOT_FOUND' });
    // Many requests on reused connections: each gets its own, correctly built objects.
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, n) =>
        fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) }).then(
          (r) => r.json() as Promise<{ body: { n: number } }>,
        ),
      ),
    );
    expect(answers.map((a) => a.body.n)).toEqual(Array.from({ length: 50 }, (_, n) => n));
  });
});
