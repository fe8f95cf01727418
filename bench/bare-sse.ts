/**
 * The baselines for bench/chat.ts: a bare node SSE writer with no framework and no buffering.
 * `POST /chat` relays the same scripted model stream as `data: {"type":"text",...}` lines, then
 * `done`; `GET /replay?n=N` writes N prepared events at once. Run as a child process:
 * MODEL_BASE_URL and PORT from the environment. `RELAY=provider` reads the model through the
 * agent's model client (`createLanguageModel`, as server/agent/chat/loop.ts does) instead of
 * parsing `data:` lines by hand, which isolates the model client's share of the agent's cost.
 */
import { createServer, type ServerResponse } from 'node:http';
import { createLanguageModel } from '../server/agent/model/model.js';

const base = process.env.MODEL_BASE_URL!;
const port = Number(process.env.PORT ?? 0);
const viaProvider = process.env.RELAY === 'provider';
const providerModel = createLanguageModel({ provider: 'openai-compatible', baseURL: base, modelId: 'scripted' });

async function relayViaProvider(message: string, res: ServerResponse): Promise<void> {
  let seq = 0;
  const parts = await providerModel.stream({ prompt: [{ role: 'user', content: [{ type: 'text', text: message }] }] });
  for await (const part of parts) {
    if (part.type === 'text-delta' && part.delta) res.write(`id: s-${++seq}\ndata: ${JSON.stringify({ type: 'text', content: part.delta })}\n\n`);
  }
  res.end(`id: s-${++seq}\ndata: {"type":"done"}\n\n`);
}

const server = createServer((req, res) => {
  void (async () => {
    const headers = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };
    if (req.method === 'GET' && req.url?.startsWith('/replay')) {
      const n = Number(new URL(req.url, 'http://x').searchParams.get('n') ?? 0);
      res.writeHead(200, headers);
      for (let i = 0; i < n; i++) {
        if (!res.write(`id: r-${i + 1}\ndata: ${JSON.stringify({ type: 'text', content: `token ${i} ` })}\n\n`)) await new Promise((r) => res.once('drain', r));
      }
      res.end(`data: {"type":"done"}\n\n`);
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const { message } = JSON.parse(Buffer.concat(chunks).toString()) as { message: string };
    res.writeHead(200, headers);
    res.socket?.setNoDelay(true);
    if (viaProvider) return relayViaProvider(message, res);
    const upstream = await fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'scripted', stream: true, messages: [{ role: 'user', content: message }] }),
    });
    const decoder = new TextDecoder();
    let buffer = '';
    let seq = 0;
    for await (const part of upstream.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(part, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const content = (JSON.parse(line.slice(6)) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content;
        if (content) res.write(`id: b-${++seq}\ndata: ${JSON.stringify({ type: 'text', content })}\n\n`);
      }
    }
    res.end(`id: b-${++seq}\ndata: {"type":"done"}\n\n`);
  })();
});
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`);
});
// A clean exit on SIGTERM (bench/chat.ts stops it so), so that --cpu-prof and the like can write their output.
process.once('SIGTERM', () => process.exit(0));
