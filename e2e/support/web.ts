/**
 * The outside web for e2e/web-tools.spec.ts, on loopback (started by playwright.config.ts): a page
 * with scripts at `/tides`, and a fake SearXNG answering its JSON API at `/search`. The product
 * treats this one address and port as public (AGENT_WEB_TEST_PUBLIC) and searches here (WEB_SEARCH).
 */
import http from 'node:http';

const port = Number(process.env.E2E_WEB_PORT ?? 3914);

const PAGE = `<!doctype html><html><head><title>Tides at Brest</title><script>document.write('INJECTED')</script></head>
<body><nav>Home · About</nav><article><h1>Tides at Brest</h1>
<p>High water is at 06:12 and again at 18:40 today. The coefficient is 95, a spring tide, which is why the harbour master posted a notice for every skipper in the port.</p>
<p>Low water falls at 12:25. Boats of more than two metres of draught should wait for the flood before they leave the basin.</p>
</article></body></html>`;

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
  if (url.pathname === '/tides') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
  if (url.pathname === '/search' && url.searchParams.get('format') === 'json') {
    const q = url.searchParams.get('q') ?? '';
    return void res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        query: q,
        results: [
          { url: 'https://tides.example/brest', title: 'Brest tide times', content: `Tide tables for ${q}`, engine: 'duckduckgo' },
          { url: 'https://harbour.example/notices', title: 'Harbour notices', content: 'Spring tides this week', engine: 'bing' },
        ],
      }),
    );
  }
  res.writeHead(404).end();
});
server.listen(port, '127.0.0.1', () => console.log(`web fakes on http://127.0.0.1:${port}`));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => server.close(() => process.exit(0)));
