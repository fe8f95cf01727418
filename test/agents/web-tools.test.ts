/**
 * The agent reads the web: a scripted model asks a real local agent (started by the account
 * service, sandboxed as in production) to `web_fetch` a page and `web_search`; the calls go through
 * the account service's egress gateway, which fetches from a page server and a fake SearXNG (its
 * documented JSON API) on loopback. The page server is made "public" by AGENT_WEB_TEST_PUBLIC,
 * its port only; the page has scripts, which the model must never see. PDFs (written by hand,
 * test/support/pdf.ts) come back as their text, read inside the agent. A guest's daily fetch count
 * holds, each fetch and search is in the user's activity log, and the gateway counts both per tool.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TokenPair } from '@contracts/account/tokens.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastUserText, startScriptedModel, toolResults, type ScriptedModel } from '../support/scripted-model.js';
import { makePdf } from '../support/pdf.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

const PAGE = `<!doctype html><html><head><title>Tides at Brest</title>
<script>document.write('INJECTED BY SCRIPT')</script><style>body { color: red }</style></head>
<body><nav>Home · About · Contact</nav><article><h1>Tides at Brest</h1>
<p>High water is at <b>06:12</b> and again at 18:40 today. The coefficient is 95, a spring tide, which is why the harbour master
<a href="/notices">posted a notice</a> for every skipper in the port this week.</p>
<p>Low water falls at 12:25. Boats of more than two metres of draught should wait for the flood before they leave the basin.</p>
</article><script>fetch('/steal?c=' + document.cookie)</script></body></html>`;

const PDFS: Record<string, Buffer> = {
  '/report.pdf': makePdf(['Tide report for Brest: high water at 06:12.', 'Page two: the coefficient is 95.'], { title: 'Brest tides, March' }),
  '/atlas.pdf': makePdf(Array.from({ length: 64 }, (_, i) => `Chart ${i + 1} of the atlas.`)),
  '/broken.pdf': Buffer.from('%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R\n'),
};

const listen = async (server: http.Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

describe('web_fetch and web_search through the egress gateway', () => {
  let model: ScriptedModel;
  let account: TestAccount;
  let api: string;
  let pagePort = 0;
  let privatePort = 0;
  let privateHits = 0;
  const searches: string[] = [];
  const pages = http.createServer((req, res) => {
    if (req.url === '/tides') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    const pdf = PDFS[req.url ?? ''];
    if (pdf) return void res.writeHead(200, { 'content-type': 'application/pdf' }).end(pdf);
    res.writeHead(404).end();
  });
  const secret = http.createServer((_req, res) => {
    privateHits++;
    res.end('secret');
  });
  const searxng = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://searxng');
    searches.push(`${url.pathname} q=${url.searchParams.get('q')} format=${url.searchParams.get('format')}`);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        query: url.searchParams.get('q'),
        number_of_results: 2,
        results: [
          { url: 'https://tides.example/brest', title: 'Brest tide times', content: 'High and low water at <b>Brest</b> today', engine: 'duckduckgo' },
          { url: 'https://harbour.example/notices', title: 'Harbour notices', content: 'Spring tides this week', engine: 'bing' },
          { url: 'javascript:alert(1)', title: 'not a page', content: 'dropped' },
        ],
        answers: [],
        suggestions: [],
      }),
    );
  });

  beforeAll(async () => {
    pagePort = await listen(pages);
    privatePort = await listen(secret);
    const searchPort = await listen(searxng);
    model = await startScriptedModel({
      responder: (request) => {
        const last = request.messages.at(-1);
        if (last?.role === 'tool') return { text: `seen: ${toolResults(request).at(-1)?.content.slice(0, 4000)}` };
        const ask = lastUserText(request);
        if (ask.startsWith('fetch ')) return { toolCalls: [{ name: 'web_fetch', args: { url: ask.slice(6) } }] };
        if (ask.startsWith('search ')) return { toolCalls: [{ name: 'web_search', args: { query: ask.slice(7), count: 5 } }] };
        return { text: 'ok' };
      },
    });
    account = await startTestAccount('pglite', {
      AGENT_PROVISIONER: 'local',
      AGENT_IDLE_TIMEOUT: '0',
      MODEL: model.modelSpec,
      WEB_SEARCH: `searxng:http://127.0.0.1:${searchPort}`,
      AGENT_WEB_TEST_PUBLIC: `127.0.0.1:${pagePort}`,
      AGENT_WEB_DAILY_FETCHES_GUEST: '3',
    });
    api = `${account.url}/api/v1`;
  });
  afterAll(async () => {
    await account?.stop();
    await model?.close();
    for (const server of [pages, secret, searxng]) {
      server.closeAllConnections();
      server.close();
    }
  });

  const json = { 'content-type': 'application/json' };
  const guest = async (): Promise<string> => {
    const res = await fetch(`${api}/auth/guest`, { method: 'POST', headers: json, body: JSON.stringify({ device_id: randomUUID() }) });
    return ((await res.json()) as TokenPair).access_token;
  };
  const chat = async (token: string, message: string) =>
    (
      await fetch(`${api}/agent/chat`, {
        method: 'POST',
        headers: { ...json, authorization: `Bearer ${token}` },
        body: JSON.stringify({ message, chat_id: `c-${randomUUID()}` }),
      })
    ).text();
  /** The tool result the model was given after the last tool call. */
  const lastToolResult = () => toolResults(model.requests.at(-1)!).at(-1)?.content ?? '';

  it('offers both tools, fetches a page as Markdown without its scripts, and searches', async () => {
    const token = await guest();
    const stream = await chat(token, `fetch http://127.0.0.1:${pagePort}/tides`);
    expect(stream).toContain('"type":"tool_use","name":"web_fetch"');
    expect(model.requests.at(-2)?.tools?.map((t) => t.function.name)).toEqual(expect.arrayContaining(['web_fetch', 'web_search']));
    const page = lastToolResult();
    expect(page).toContain(`URL: http://127.0.0.1:${pagePort}/tides`);
    expect(page).toContain('Title: Tides at Brest');
    expect(page).toContain('High water is at **06:12**');
    expect(page).toContain(`[posted a notice](http://127.0.0.1:${pagePort}/notices)`);
    expect(page).not.toMatch(/INJECTED|steal|color: red/);
    expect(stream).toContain('seen: ');

    await chat(token, 'search tides at brest');
    expect(searches).toEqual(['/search q=tides at brest format=json']);
    const results = lastToolResult();
    expect(results).toContain('1. Brest tide times');
    expect(results).toContain('https://tides.example/brest');
    expect(results).toContain('High and low water at Brest today');
    expect(results).toContain('2. Harbour notices');
    expect(results).not.toContain('javascript:');
  });

  it('a PDF comes back as its text with its title; past 50 pages and a damaged file are said so', async () => {
    const token = await guest();
    await chat(token, `fetch http://127.0.0.1:${pagePort}/report.pdf`);
    expect(lastToolResult()).toBe(
      [
        `URL: http://127.0.0.1:${pagePort}/report.pdf`,
        'Status: 200',
        'Title: Brest tides, March',
        '',
        'Tide report for Brest: high water at 06:12.\n\nPage two: the coefficient is 95.',
      ].join('\n'),
    );

    await chat(token, `fetch http://127.0.0.1:${pagePort}/atlas.pdf`);
    const atlas = lastToolResult();
    expect(atlas).toContain('Chart 50 of the atlas.');
    expect(atlas).not.toContain('Chart 51 ');
    expect(atlas).toMatch(/\n\n\(the first 50 of the PDF's 64 pages\)$/);

    await chat(token, `fetch http://127.0.0.1:${pagePort}/broken.pdf`);
    expect(lastToolResult()).toContain('(PDF, 48 bytes: damaged or not a PDF (Invalid PDF structure.), so its text is not shown)');
  });

  it('a private address comes back to the model as an error naming the reason; nothing reaches it', async () => {
    const token = await guest();
    await chat(token, `fetch http://0x7f.1:${privatePort}/`);
    expect(lastToolResult()).toMatch(/127\.0\.0\.1 is a loopback address/);
    await chat(token, 'fetch file:///etc/passwd');
    expect(lastToolResult()).toMatch(/file: URLs are not fetched/);
    expect(privateHits).toBe(0);
  });

  it("a guest's daily fetches run out (AGENT_WEB_DAILY_FETCHES_GUEST); each fetch and search is in the activity log; metrics per tool", async () => {
    const token = await guest();
    for (let i = 0; i < 3; i++) {
      await chat(token, `fetch http://127.0.0.1:${pagePort}/tides`);
      expect(lastToolResult()).toContain('Tides at Brest');
    }
    await chat(token, `fetch http://127.0.0.1:${pagePort}/tides`);
    expect(lastToolResult()).toMatch(/3 web fetches a day are spent/);
    await chat(token, 'search spring tides');
    const activity = (await (await fetch(`${api}/account/activity`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      events: Array<{ type: string; detail: Record<string, string> }>;
    };
    const web = activity.events.filter((event) => event.type.startsWith('web_'));
    expect(web.filter((event) => event.type === 'web_fetch').map((event) => event.detail.url)).toEqual(Array(3).fill(`http://127.0.0.1:${pagePort}/tides`));
    expect(web.find((event) => event.type === 'web_search')?.detail).toEqual({ query: 'spring tides', provider: 'searxng' });
    const metrics = await (await fetch(`${account.url}/metrics`)).text();
    const count = (tool: string, outcome: string) =>
      Number(new RegExp(`agent_web_calls_total\\{[^}]*tool="${tool}"[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`).exec(metrics)?.[1] ?? 0);
    expect(count('fetch', 'ok')).toBeGreaterThanOrEqual(4);
    expect(count('fetch', 'limited')).toBe(1);
    expect(count('fetch', 'refused')).toBeGreaterThanOrEqual(2);
    expect(count('search', 'ok')).toBeGreaterThanOrEqual(2);
  });
});
