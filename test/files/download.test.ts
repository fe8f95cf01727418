import { createHash, randomBytes } from 'node:crypto';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestAgent, type TestAgent } from '../support/servers.js';
import { rawRequest, trpcQuery } from './http.js';

let agent: TestAgent;
const big = randomBytes(5 * 1024 * 1024 + 123);

beforeAll(async () => {
  agent = await startTestAgent();
  const ws = agent.workspace;
  await mkdir(path.join(ws, 'docs/sub'), { recursive: true });
  await writeFile(path.join(ws, 'docs/hello.txt'), 'hello, world');
  await writeFile(path.join(ws, 'docs/data.json'), '{"a":1}');
  await writeFile(path.join(ws, 'docs/page.html'), '<script>alert(1)</script>');
  await writeFile(path.join(ws, 'docs/image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  await writeFile(path.join(ws, 'docs/blob.unknownext'), 'x');
  await writeFile(path.join(ws, 'docs/empty.txt'), '');
  await writeFile(path.join(ws, 'docs/résumé "final".txt'), 'cv');
  await writeFile(path.join(ws, 'docs/big.bin'), big);
  await utimes(path.join(ws, 'docs/hello.txt'), new Date('2024-01-02T03:04:05Z'), new Date('2024-01-02T03:04:05Z'));
});
afterAll(() => agent.stop());

const get = (p: string, headers: Record<string, string> = {}, method = 'GET') =>
  rawRequest(agent.url, `/files/${p}`, { method, headers: { ...agent.auth, ...headers } });

describe('GET /files/{path}', () => {
  it('serves the file with type, length, disposition and validators', async () => {
    const res = await get('docs/hello.txt');
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('hello, world');
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.headers['content-length']).toBe('12');
    expect(res.headers['content-disposition']).toBe(`inline; filename="hello.txt"; filename*=UTF-8''hello.txt`);
    expect(res.headers.etag).toMatch(/^"[0-9a-z-]+"$/);
    expect(res.headers['last-modified']).toBe('Tue, 02 Jan 2024 03:04:05 GMT');
    expect(res.headers['accept-ranges']).toBe('bytes');
  });

  it.each([
    ['docs/data.json', 'application/json; charset=utf-8'],
    ['docs/image.png', 'image/png'],
    ['docs/blob.unknownext', 'application/octet-stream'],
    ['docs/page.html', 'text/html; charset=utf-8'],
  ])('types %s as %s', async (p, type) => {
    const res = await get(p);
    expect(res.headers['content-type']).toBe(type);
  });

  it('sandboxes types that can run script', async () => {
    expect((await get('docs/page.html')).headers['content-security-policy']).toContain('sandbox');
    expect((await get('docs/hello.txt')).headers['content-security-policy']).toBeUndefined();
  });

  it('encodes a non-ASCII file name in Content-Disposition', async () => {
    const res = await get(encodeURIComponent('docs/résumé "final".txt').replaceAll('%2F', '/'));
    expect(res.status).toBe(200);
    expect(res.headers['content-disposition']).toBe(`inline; filename="r_sum_ _final_.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22.txt`);
  });

  it('streams a large file intact', async () => {
    const res = await get('docs/big.bin');
    expect(res.status).toBe(200);
    expect(Number(res.headers['content-length'])).toBe(big.length);
    expect(createHash('sha256').update(res.body).digest('hex')).toBe(createHash('sha256').update(big).digest('hex'));
  });

  it('serves an empty file', async () => {
    const res = await get('docs/empty.txt');
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe('0');
    expect(res.body.length).toBe(0);
  });

  it('answers 404 with the error body for a directory and a missing file', async () => {
    for (const p of ['docs', 'docs/sub', 'docs/nope.txt', 'nope/deeper.txt', 'docs/hello.txt/child']) {
      const res = await get(p);
      expect(res.status, p).toBe(404);
      expect(JSON.parse(res.body.toString())).toEqual({ detail: expect.any(String), code: 'FILE_NOT_FOUND' });
    }
  });

  it('answers 401 without the secret', async () => {
    const res = await rawRequest(agent.url, '/files/docs/hello.txt');
    expect(res.status).toBe(401);
    expect(res.body.toString()).not.toContain('hello');
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const del = await get('docs/hello.txt', {}, 'DELETE');
    expect(del.status).toBe(405);
    expect(del.headers.allow).toBe('GET, HEAD');
    const put = await rawRequest(agent.url, '/files/upload', { method: 'PUT', headers: agent.auth });
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe('POST');
  });

  it('answers HEAD with the headers only', async () => {
    const res = await get('docs/big.bin', {}, 'HEAD');
    expect(res.status).toBe(200);
    expect(Number(res.headers['content-length'])).toBe(big.length);
    expect(res.body.length).toBe(0);
  });
});

describe('GET /files/{path}: conditional requests', () => {
  it('answers 304 to a matching If-None-Match (strong, weak, list, *)', async () => {
    const etag = String((await get('docs/hello.txt')).headers.etag);
    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const res = await get('docs/hello.txt', { 'if-none-match': inm });
      expect(res.status, inm).toBe(304);
      expect(res.body.length).toBe(0);
      expect(res.headers.etag).toBe(etag);
    }
    expect((await get('docs/hello.txt', { 'if-none-match': '"stale"' })).status).toBe(200);
  });

  it('answers 304 to If-Modified-Since at or after the modification time', async () => {
    expect((await get('docs/hello.txt', { 'if-modified-since': 'Tue, 02 Jan 2024 03:04:05 GMT' })).status).toBe(304);
    expect((await get('docs/hello.txt', { 'if-modified-since': 'Tue, 02 Jan 2024 03:04:04 GMT' })).status).toBe(200);
    expect((await get('docs/hello.txt', { 'if-modified-since': 'garbage' })).status).toBe(200);
    // If-None-Match wins over If-Modified-Since
    expect((await get('docs/hello.txt', { 'if-none-match': '"stale"', 'if-modified-since': 'Tue, 02 Jan 2030 00:00:00 GMT' })).status).toBe(200);
  });

  it('sees a changed file as changed', async () => {
    const p = path.join(agent.workspace, 'docs/changing.txt');
    await writeFile(p, 'one');
    const etag = String((await get('docs/changing.txt')).headers.etag);
    await writeFile(p, 'two!');
    const res = await get('docs/changing.txt', { 'if-none-match': etag });
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('two!');
  });
});

describe('GET /files/{path}: ranges', () => {
  it.each([
    ['bytes=0-4', 'hello', 'bytes 0-4/12'],
    ['bytes=7-', 'world', 'bytes 7-11/12'],
    ['bytes=-5', 'world', 'bytes 7-11/12'],
    ['bytes=7-1000', 'world', 'bytes 7-11/12'],
    ['bytes=-100', 'hello, world', 'bytes 0-11/12'],
    ['bytes=11-11', 'd', 'bytes 11-11/12'],
  ])('answers %s with 206', async (range, body, contentRange) => {
    const res = await get('docs/hello.txt', { range });
    expect(res.status).toBe(206);
    expect(res.body.toString()).toBe(body);
    expect(res.headers['content-range']).toBe(contentRange);
    expect(res.headers['content-length']).toBe(String(body.length));
  });

  it('serves a range from the middle of a large file', async () => {
    const res = await get('docs/big.bin', { range: 'bytes=1000000-3000000' });
    expect(res.status).toBe(206);
    expect(res.body.equals(big.subarray(1_000_000, 3_000_001))).toBe(true);
  });

  it.each(['bytes=12-', 'bytes=100-200', 'bytes=-0'])('answers %s with 416 and Content-Range */size', async (range) => {
    const res = await get('docs/hello.txt', { range });
    expect(res.status).toBe(416);
    expect(res.headers['content-range']).toBe('bytes */12');
    expect(JSON.parse(res.body.toString())).toMatchObject({ code: 'RANGE_NOT_SATISFIABLE' });
  });

  it.each(['bytes=0-1,3-4', 'bytes=5-2', 'items=0-1', 'bytes=abc', 'bytes=-'])('ignores %s and sends the whole file', async (range) => {
    const res = await get('docs/hello.txt', { range });
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('hello, world');
  });

  it('honours If-Range: a matching ETag gives the range, a stale one the whole file', async () => {
    const etag = String((await get('docs/hello.txt')).headers.etag);
    expect((await get('docs/hello.txt', { range: 'bytes=0-4', 'if-range': etag })).status).toBe(206);
    expect((await get('docs/hello.txt', { range: 'bytes=0-4', 'if-range': '"stale"' })).status).toBe(200);
  });
});

describe('files.get / files.read / files.tree over tRPC', () => {
  it('answers files.get with the file metadata', async () => {
    const res = await trpcQuery(agent.url, 'files.get', { path: 'docs/hello.txt' }, agent.auth);
    expect(res.status).toBe(200);
    expect(res.body.result.data.json).toEqual({
      path: 'docs/hello.txt',
      name: 'hello.txt',
      size: 12,
      content_type: 'text/plain; charset=utf-8',
      modified: '2024-01-02T03:04:05.000Z',
      etag: expect.stringMatching(/^".+"$/),
    });
  });

  it('refuses .env and traversal over tRPC as over REST', async () => {
    expect((await trpcQuery(agent.url, 'files.get', { path: '.env' }, agent.auth)).status).toBe(403);
    expect((await trpcQuery(agent.url, 'files.get', { path: '../x' }, agent.auth)).body.error.json.data.code).toBe('FORBIDDEN_PATH');
  });

  it('answers files.tree', async () => {
    const res = await trpcQuery(agent.url, 'files.tree', { max_depth: 1 }, agent.auth);
    expect(res.status).toBe(200);
    expect(res.body.result.data.json.tree).toEqual([{ name: 'docs', path: 'docs', type: 'dir', children: [] }]);
  });
});

describe('files.read over a tRPC client', () => {
  it('streams the bytes through httpBatchStreamLink', async () => {
    const { createTRPCClient, httpBatchStreamLink } = await import('@trpc/client');
    const superjson = (await import('superjson')).default;
    type AgentRouter = import('../../server/agent/router.js').AgentRouter;
    const client = createTRPCClient<AgentRouter>({ links: [httpBatchStreamLink({ url: `${agent.url}/trpc`, transformer: superjson, headers: agent.auth })] });
    const chunks: Uint8Array[] = [];
    for await (const chunk of await client.files.read.query({ path: 'docs/hello.txt', start: 7 })) chunks.push(chunk);
    expect(Buffer.concat(chunks).toString()).toBe('world');
    await expect(client.files.read.query({ path: '.env' })).rejects.toMatchObject({ data: { code: 'FORBIDDEN_PATH' } });
  });
});
