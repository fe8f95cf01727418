/**
 * The OpenAI-compatible streaming client (server/agent/model/openai-compatible.ts) against a raw
 * loopback server that writes exactly the bytes each case needs: the same parts as the AI SDK's
 * `@ai-sdk/openai-compatible` for the same wire streams, SSE framing (CRLF, bytes split
 * anywhere, comments, multi-line data), the request it sends, HTTP and in-stream errors,
 * hostile streams, and closing the connection when the consumer stops early.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatModel } from '../../server/agent/model/chat-model.js';
import { fromLanguageModel } from '../../server/agent/model/model.js';
import { ModelCallError, openAICompatibleModel } from '../../server/agent/model/openai-compatible.js';
import { freePort } from '../../server/common/net.js';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => unknown;

let server: Server;
let baseURL: string;
let handler: Handler = (_req, res) => res.writeHead(404).end();
const closed: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => void handler(req, res, body));
    res.on('close', () => closed.push(req.url ?? ''));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
);

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const frames = (...events: unknown[]) => events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join('');

/** Answers every request with this SSE body, written in pieces of `split` bytes (all at once when 0). */
function serve(body: string, split = 0): void {
  handler = async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (!split) return void res.end(body);
    const bytes = Buffer.from(body);
    for (let at = 0; at < bytes.length; at += split) {
      res.write(bytes.subarray(at, at + split));
      await new Promise((r) => setImmediate(r));
    }
    res.end();
  };
}

const call: LanguageModelV3CallOptions = { prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] };

async function collect(model: ChatModel, options = call): Promise<LanguageModelV3StreamPart[]> {
  const parts: LanguageModelV3StreamPart[] = [];
  for await (const part of await model.stream(options)) parts.push(part);
  return parts;
}

const ours = () => openAICompatibleModel({ baseURL, modelId: 'm' });
const sdk = () => fromLanguageModel(createOpenAICompatible({ name: 'openai-compatible', baseURL, includeUsage: true }).chatModel('m'));

/** What the loop reads of a stream: content parts, tool calls, the finish reason, whether an error came. */
function essence(parts: LanguageModelV3StreamPart[]) {
  return parts.flatMap((part) => {
    switch (part.type) {
      case 'text-start':
      case 'text-end':
      case 'reasoning-start':
      case 'reasoning-end':
        return [part.type];
      case 'text-delta':
      case 'reasoning-delta':
        return [`${part.type}:${part.delta}`];
      case 'tool-call':
        return [`tool-call:${part.toolCallId}:${part.toolName}:${part.input}`];
      case 'finish':
        return [`finish:${part.finishReason.unified}`];
      case 'error':
        return ['error'];
      default:
        return [];
    }
  });
}

/** Three calls one after the other on one model (one connection pool), each answered with `text`. */
async function threeCallsAnswering(text: string): Promise<void> {
  const model = ours();
  for (let i = 0; i < 3; i++) {
    expect(essence(await collect(model))).toEqual(['text-start', `text-delta:${text}`, 'text-end', 'finish:stop']);
    // The response's end is read in the background; then its socket is free again.
    await new Promise((r) => setTimeout(r, 10));
  }
}

const wireStreams: Record<string, string> = {
  'plain text': frames(chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hel' }), chunk({ content: 'lo' }), chunk({}, 'stop'), '[DONE]'),
  'reasoning, then text': frames(
    chunk({ reasoning_content: 'think ' }),
    chunk({ reasoning_content: 'more' }),
    chunk({ content: 'answer' }),
    chunk({}, 'stop'),
    '[DONE]',
  ),
  'a tool call streamed in pieces': frames(
    chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'read_file', arguments: '' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"a.txt"}' } }] }),
    chunk({}, 'tool_calls'),
    '[DONE]',
  ),
  'text, then two tool calls': frames(
    chunk({ content: 'Let me look.' }),
    chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'list_files', arguments: '{}' } }] }),
    chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'read_file', arguments: '{"path":"b"}' } }] }),
    chunk({}, 'tool_calls'),
    '[DONE]',
  ),
  'content as parts, and a refusal': frames(chunk({ content: [{ type: 'text', text: 'part' }] }), chunk({ refusal: 'no' }), chunk({}, 'stop'), '[DONE]'),
  'usage chunk without choices': frames(
    chunk({ content: 'x' }),
    chunk({}, 'length'),
    { id: 'c1', choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } },
    '[DONE]',
  ),
  'an error object in the stream': frames(chunk({ content: 'par' }), { error: { message: 'overloaded', type: 'server_error' } }),
  'a stream that ends without a finish reason': frames(chunk({ content: 'cut' })),
};

describe('openAICompatibleModel', () => {
  for (const [name, body] of Object.entries(wireStreams)) {
    it(`yields what @ai-sdk/openai-compatible yields: ${name}`, async () => {
      serve(body);
      const expected = essence(await collect(sdk()));
      serve(body);
      expect(essence(await collect(ours()))).toEqual(expected);
      expect(expected.length).toBeGreaterThan(1);
    });
  }

  it('reads events split at every byte, CRLF line ends, comments, `data:` without a space and multi-line data', async () => {
    const body = [
      ': keep-alive\r\n\r\n',
      `data:${JSON.stringify(chunk({ content: 'é€😀' }))}\r\n\r\n`,
      'event: message\r\n',
      'data: {"choices":[{"delta":\r\n',
      'data: {"content":"!"}}]}\r\n\r\n',
      frames(chunk({}, 'stop'), '[DONE]'),
    ].join('');
    serve(body, 1);
    expect(essence(await collect(ours()))).toEqual(['text-start', 'text-delta:é€😀', 'text-delta:!', 'text-end', 'finish:stop']);
  });

  it('sends the model, stream options, the converted conversation, tools and the bearer key', async () => {
    let seen: { headers: IncomingMessage['headers']; body: Record<string, unknown> } | undefined;
    handler = (req, res, body) => {
      seen = { headers: req.headers, body: JSON.parse(body) as Record<string, unknown> };
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(frames(chunk({}, 'stop'), '[DONE]'));
    };
    const options: LanguageModelV3CallOptions = {
      prompt: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'read a' }] },
        {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'needs a tool' },
            { type: 'tool-call', toolCallId: 'call_1', toolName: 'read_file', input: { path: 'a' } },
          ],
        },
        {
          role: 'tool',
          content: [
            { type: 'tool-result', toolCallId: 'call_1', toolName: 'read_file', output: { type: 'json', value: { text: 'A' } } },
            { type: 'tool-result', toolCallId: 'call_2', toolName: 'exec', output: { type: 'error-text', value: 'denied' } },
          ],
        },
      ],
      tools: [{ type: 'function', name: 'read_file', description: 'Reads.', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } }],
      toolChoice: { type: 'auto' },
    };
    await collect(openAICompatibleModel({ baseURL, modelId: 'llama', apiKey: 'k-123' }), options);
    expect(seen!.headers.authorization).toBe('Bearer k-123');
    expect(seen!.body).toEqual({
      model: 'llama',
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'read a' },
        {
          role: 'assistant',
          content: null,
          reasoning_content: 'needs a tool',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"text":"A"}' },
        { role: 'tool', tool_call_id: 'call_2', content: 'denied' },
      ],
      tools: [
        { type: 'function', function: { name: 'read_file', description: 'Reads.', parameters: { type: 'object', properties: { path: { type: 'string' } } } } },
      ],
      tool_choice: 'auto',
    });
    await collect(ours());
    expect(seen!.headers.authorization).toBeUndefined();
  });

  it('throws a ModelCallError for an error answer: status, server message, retryability, headers', async () => {
    handler = (_req, res) =>
      res
        .writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' })
        .end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } }));
    const limited = await collect(ours()).catch((error: unknown) => error);
    expect(limited).toBeInstanceOf(ModelCallError);
    expect(limited).toMatchObject({ statusCode: 429, message: 'slow down', isRetryable: true, responseHeaders: { 'retry-after': '7' } });

    handler = (_req, res) => res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'bad model' } }));
    expect(await collect(ours()).catch((error: unknown) => error)).toMatchObject({ statusCode: 400, message: 'bad model', isRetryable: false });

    handler = (_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>\n<p>nginx</p>');
    expect(await collect(ours()).catch((error: unknown) => error)).toMatchObject({ statusCode: 502, message: '<h1>Bad gateway</h1>', isRetryable: true });
  });

  it('reports an unreachable server as a retryable error without a status', async () => {
    const port = await freePort();
    const error = await collect(openAICompatibleModel({ baseURL: `http://127.0.0.1:${port}/v1`, modelId: 'm' })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({ statusCode: undefined, isRetryable: true, message: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('turns a chunk that is not JSON into an error part', async () => {
    serve(frames(chunk({ content: 'a' }), '{not json', chunk({}, 'stop'), '[DONE]'));
    const parts = await collect(ours());
    expect(essence(parts)).toContain('error');
    expect(String((parts.find((p) => p.type === 'error') as { error: Error }).error.message)).toMatch(/not JSON/);
  });

  it('gives up on a single event over 8 MiB instead of buffering without bound', async () => {
    handler = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: "');
      const mib = 'x'.repeat(1024 * 1024);
      for (let i = 0; i < 9 && !res.destroyed; i++) {
        if (!res.write(mib)) await new Promise((r) => res.once('drain', r));
      }
      res.end();
    };
    await expect(collect(ours())).rejects.toThrow(/over 8 MiB/);
  });

  it('gives up on tool arguments over 8 MiB streamed in many small events', async () => {
    handler = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(frames(chunk({ tool_calls: [{ index: 0, id: 'call_big', type: 'function', function: { name: 'write_file', arguments: '{"content":"' } }] })));
      const piece = frames(chunk({ tool_calls: [{ index: 0, function: { arguments: 'x'.repeat(512 * 1024) } }] }));
      for (let i = 0; i < 18 && !res.destroyed; i++) {
        if (!res.write(piece)) await new Promise((r) => res.once('drain', r));
      }
      res.end(frames(chunk({}, 'tool_calls'), '[DONE]'));
    };
    await expect(collect(ours())).rejects.toThrow(/tool arguments over 8 MiB/);
  });

  it('reuses its connection for the next call once a stream has ended with [DONE]', async () => {
    const sockets = new Set<unknown>();
    handler = (req, res) => {
      sockets.add(req.socket);
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(frames(chunk({ content: 'hi' }), chunk({}, 'stop'), '[DONE]'));
    };
    await threeCallsAnswering('hi');
    expect(sockets.size).toBe(1);
  });

  it('sends a request again on a fresh connection when the server drops the kept-alive one it was reused on', async () => {
    const served = new WeakSet<object>();
    let dropped = 0;
    handler = (req, res) => {
      // The second request on a connection finds it closed, as when a server's idle timeout fires just then.
      if (served.has(req.socket)) {
        dropped++;
        req.socket.destroy();
        return;
      }
      served.add(req.socket);
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(frames(chunk({ content: 'ok' }), chunk({}, 'stop'), '[DONE]'));
    };
    await threeCallsAnswering('ok');
    expect(dropped).toBeGreaterThan(0);
  });

  it('fails the stream when the server drops the connection before the end, after the text it did send', async () => {
    handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(frames(chunk({ content: 'partial' })), () => setTimeout(() => req.socket.destroy(), 20));
    };
    const texts: string[] = [];
    const reading = (async () => {
      for await (const part of await ours().stream(call)) if (part.type === 'text-delta') texts.push(part.delta);
    })();
    // Node reports the cut as `aborted` (ECONNRESET); a close without it would read as incomplete.
    await expect(reading).rejects.toThrow(/aborted|before it was complete/);
    expect(texts).toEqual(['partial']);
  });

  it('keeps every chunk, in order, when the server writes faster than the consumer reads', async () => {
    const count = 2_000;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // One write per event, all at once: many more chunks than the reader queues before pausing.
      for (let i = 0; i < count; i++) res.write(frames(chunk({ content: `${i},` })));
      res.end(frames(chunk({}, 'stop'), '[DONE]'));
    };
    let text = '';
    let parts = 0;
    for await (const part of await ours().stream(call)) {
      if (part.type === 'text-delta') text += part.delta;
      // A slow consumer: a macrotask every 50 parts lets the socket fill the queue meanwhile.
      if (++parts % 50 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    expect(text).toBe(Array.from({ length: count }, (_, i) => `${i},`).join(''));
  });

  it('closes the connection when the consumer stops reading, and when the call is aborted', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(frames(chunk({ content: 'first' })));
      // The rest never comes: only the client can end this response.
    };
    const before = closed.length;
    for await (const part of await ours().stream(call)) if (part.type === 'text-delta') break;
    await expect.poll(() => closed.length).toBe(before + 1);

    const controller = new AbortController();
    const parts = await ours().stream({ ...call, abortSignal: controller.signal });
    const reading = (async () => {
      for await (const _part of parts) controller.abort();
    })();
    await expect(reading).rejects.toThrow(/abort/i);
    await expect.poll(() => closed.length).toBe(before + 2);
  });
});
