/**
 * The search providers behind `web_search` (agents/egress/web-search.ts), each against a local
 * server speaking its documented API: SearXNG's `GET /search?format=json`, Brave's `GET
 * /res/v1/web/search` with `X-Subscription-Token`, Tavily's `POST /search` with a bearer key. The
 * gateway adds the key; results come back as title, URL and plain-text snippet, at most `count`;
 * an answer the gateway cannot read, or an error status, is WEB_SEARCH_FAILED. The settings are
 * checked at start.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSearchSetting, searchWeb } from '../../server/account/agents/egress/web-search.js';
import { agentEnvironment } from '../../server/account/agents/provisioners/local/provisioner.js';
import { loadAccountConfig } from '../../server/account/config.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
const seen: Seen[] = [];
let answer: { status: number; body: unknown } = { status: 200, body: {} };
const provider = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
  });
});
let base = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => provider.close(() => resolve())));

const keys = { brave: 'BSA-brave-key', tavily: 'tvly-tavily-key' };
const search = (setting: string, query: string, count?: number) =>
  searchWeb(parseSearchSetting(setting), keys, { query, ...(count ? { count } : {}) }, AbortSignal.timeout(5_000));

describe('providers', () => {
  it('SearXNG: its JSON API, no key, results cut to count', async () => {
    answer = {
      status: 200,
      body: {
        results: Array.from({ length: 8 }, (_, i) => ({
          url: `https://r${i}.example/`,
          title: `Result ${i}`,
          content: `About <em>${i}</em> &amp; more`,
          engine: 'x',
        })),
      },
    };
    const found = await search(`searxng:${base}/`, 'tide tables', 3);
    expect(seen.at(-1)).toMatchObject({ method: 'GET', url: '/search?q=tide+tables&format=json' });
    expect(seen.at(-1)?.headers.authorization).toBeUndefined();
    expect(found).toEqual({
      provider: 'searxng',
      results: [0, 1, 2].map((i) => ({ title: `Result ${i}`, url: `https://r${i}.example/`, snippet: `About ${i} & more` })),
    });
  });

  it('Brave: the key in X-Subscription-Token, count passed on, highlighting removed', async () => {
    answer = {
      status: 200,
      body: {
        type: 'search',
        web: { results: [{ title: 'Brest <strong>tides</strong>', url: 'https://b.example/', description: 'High <strong>water</strong>' }] },
      },
    };
    const found = await search(`brave:${base}`, 'brest tides', 4);
    expect(seen.at(-1)).toMatchObject({ method: 'GET', url: '/res/v1/web/search?q=brest+tides&count=4' });
    expect(seen.at(-1)?.headers['x-subscription-token']).toBe(keys.brave);
    expect(found.results).toEqual([{ title: 'Brest tides', url: 'https://b.example/', snippet: 'High water' }]);
  });

  it('Tavily: a POST with the key as bearer and max_results', async () => {
    answer = { status: 200, body: { query: 'q', results: [{ title: 'T', url: 'https://t.example/', content: 'snippet', score: 0.9 }] } };
    const found = await search(`tavily:${base}`, 'spring tides');
    const call = seen.at(-1)!;
    expect(call).toMatchObject({ method: 'POST', url: '/search' });
    expect(call.headers.authorization).toBe(`Bearer ${keys.tavily}`);
    expect(JSON.parse(call.body)).toEqual({ query: 'spring tides', max_results: 5, search_depth: 'basic' });
    expect(found).toEqual({ provider: 'tavily', results: [{ title: 'T', url: 'https://t.example/', snippet: 'snippet' }] });
  });

  it('an error status, an unreadable answer or non-JSON: WEB_SEARCH_FAILED; non-http result URLs are dropped', async () => {
    answer = { status: 401, body: { error: 'bad key' } };
    await expect(search(`brave:${base}`, 'q')).rejects.toMatchObject({ appCode: 'WEB_SEARCH_FAILED', message: 'The search provider answered 401' });
    answer = { status: 200, body: { results: 'nope' } };
    await expect(search(`searxng:${base}`, 'q')).rejects.toMatchObject({ appCode: 'WEB_SEARCH_FAILED' });
    answer = { status: 200, body: '<html>' };
    await expect(search(`tavily:${base}`, 'q')).rejects.toMatchObject({ appCode: 'WEB_SEARCH_FAILED', message: 'The search provider did not answer JSON' });
    answer = { status: 200, body: { results: [{ url: 'javascript:alert(1)', title: 'x' }, { url: 'file:///etc/passwd' }, { url: 'https://ok.example/' }] } };
    expect((await search(`searxng:${base}`, 'q')).results).toEqual([{ title: 'https://ok.example/', url: 'https://ok.example/', snippet: '' }]);
  });
});

describe('settings', () => {
  it('WEB_SEARCH is parsed, and a provider without its key stops the start', () => {
    expect(parseSearchSetting('brave')).toEqual({ kind: 'brave', baseUrl: 'https://api.search.brave.com' });
    expect(parseSearchSetting('tavily')).toEqual({ kind: 'tavily', baseUrl: 'https://api.tavily.com' });
    expect(parseSearchSetting('searxng:http://searx.internal:8080/')).toEqual({ kind: 'searxng', baseUrl: 'http://searx.internal:8080' });
    expect(() => parseSearchSetting('searxng')).toThrow(/needs its URL/);
    expect(() => parseSearchSetting('google')).toThrow(/must be searxng:<url>, brave or tavily/);
    expect(() => parseSearchSetting('brave:ftp://x')).toThrow(/not an http\(s\) URL/);
    expect(() => loadAccountConfig({ WEB_SEARCH: 'brave' })).toThrow(/BRAVE_API_KEY/);
    expect(() => loadAccountConfig({ WEB_SEARCH: 'tavily' })).toThrow(/TAVILY_API_KEY/);
    expect(loadAccountConfig({ WEB_SEARCH: 'brave', BRAVE_API_KEY: 'k' }).web.policy.search?.kind).toBe('brave');
    expect(loadAccountConfig({}).web.policy).toMatchObject({ enabled: true, search: undefined, maxRedirects: 5, timeoutMs: 20_000 });
    expect(loadAccountConfig({ AGENT_WEB: 'off' }).web.policy.enabled).toBe(false);
  });

  it('the keys stay in the account service: a local agent inherits neither', () => {
    const inherited = agentEnvironment({ PATH: '/usr/bin', BRAVE_API_KEY: keys.brave, TAVILY_API_KEY: keys.tavily, WEB_SEARCH: 'brave' });
    expect(inherited).toEqual({ PATH: '/usr/bin' });
  });
});
