/**
 * A scripted OpenAI-compatible model server on loopback: `POST /v1/chat/completions` with
 * `stream: true` answers with real `chat.completion.chunk` SSE (text deltas, tool calls, finish
 * reasons, `[DONE]`), so the agent's production provider code (`@ai-sdk/openai-compatible`) is
 * what the tests drive. Each request is logged (`requests`) and answered by `respond`, which the
 * test sets; it sees the request (messages, tools) and returns a step to play.
 *
 * Reused by the chat, subagent/heartbeat and messenger suites and by bench/chat.ts.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sleep } from '../../server/common/timers.js';

export interface ModelRequestMessage {
  role: string;
  content?: unknown;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

export interface ModelRequest {
  model: string;
  stream?: boolean;
  messages: ModelRequestMessage[];
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  [key: string]: unknown;
}

export interface ScriptedToolCall {
  name: string;
  /** Arguments as an object (JSON-encoded on the wire) or a raw string (sent as is). */
  args: unknown;
  id?: string;
}

export interface ScriptedStep {
  /** Text deltas, sent one chunk each; a plain string is one chunk. */
  text?: string | string[] | { count: number; chunk: (index: number) => string };
  toolCalls?: ScriptedToolCall[];
  /** Pause before each chunk (ms). */
  delayMs?: number;
  /** Pause before text chunk `index` (ms), asked when that chunk is next; overrides `delayMs` for text. */
  pauseBefore?: (index: number) => number;
  /** Answer with this HTTP status and an OpenAI-style error body instead of a stream. */
  httpError?: { status: number; message: string };
  /** After the chunks, send an error object in the stream instead of finishing. */
  streamError?: string;
  /** After the chunks, keep the response open without finishing (until the client goes away). */
  hang?: boolean;
  /** Token counts reported at the end instead of 10 in and one out per chunk (budget tests). */
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Called just before each text chunk is written (bench: timestamps). */
  onChunk?: (index: number) => void;
}

export type Responder = (request: ModelRequest, index: number) => ScriptedStep | Promise<ScriptedStep>;

export interface ScriptedModel {
  /** Base URL for the provider, e.g. `http://127.0.0.1:1234/v1`. */
  baseUrl: string;
  /** The agent's `MODEL` value pointing at this server. */
  modelSpec: string;
  /** Every request received, in order. */
  requests: ModelRequest[];
  /** The HTTP headers of each request, in the same order. */
  requestHeaders: IncomingHttpHeaders[];
  /** Replace the responder. */
  respond: (responder: Responder) => void;
  /** Steps to play in order for the next requests (before the responder is asked). */
  queue: (...steps: ScriptedStep[]) => void;
  /** Connections currently streaming. */
  openStreams(): number;
  close(): Promise<void>;
}

/** The text of the last user message of a request (handy for routing answers per chat). */
export function lastUserText(request: ModelRequest): string {
  const user = [...request.messages].reverse().find((m) => m.role === 'user');
  if (!user) return '';
  if (typeof user.content === 'string') return user.content;
  if (Array.isArray(user.content)) {
    return user.content.map((part: { type?: string; text?: string }) => (part.type === 'text' ? (part.text ?? '') : '')).join('');
  }
  return '';
}

/** Tool results the request carries (role `tool`), newest last. */
export function toolResults(request: ModelRequest): Array<{ id: string; content: string }> {
  return request.messages
    .filter((m) => m.role === 'tool')
    .map((m) => ({ id: m.tool_call_id ?? '', content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content) }));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startScriptedModel(opts: { responder?: Responder; port?: number } = {}): Promise<ScriptedModel> {
  const requests: ModelRequest[] = [];
  const requestHeaders: IncomingHttpHeaders[] = [];
  const queued: ScriptedStep[] = [];
  let responder: Responder = opts.responder ?? (() => ({ text: 'ok' }));
  let open = 0;
  let seq = 0;

  async function play(step: ScriptedStep, res: ServerResponse, signal: AbortSignal): Promise<void> {
    if (step.httpError) {
      res.writeHead(step.httpError.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: step.httpError.message, type: 'scripted_error', code: null } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.socket?.setNoDelay(true);
    const id = `chatcmpl-${++seq}`;
    const created = Math.floor(Date.now() / 1000);
    const send = (delta: Record<string, unknown>, finish: string | null = null) => {
      if (signal.aborted) return;
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: 'scripted', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
      );
    };
    const delay = step.delayMs ?? 0;
    send({ role: 'assistant', content: '' });
    const text = step.text;
    const count = text === undefined ? 0 : typeof text === 'string' ? 1 : Array.isArray(text) ? text.length : text.count;
    for (let i = 0; i < count && !signal.aborted; i++) {
      await sleep(step.pauseBefore?.(i) ?? delay, signal);
      if (signal.aborted) return;
      const chunk = typeof text === 'string' ? text : Array.isArray(text) ? text[i]! : text!.chunk(i);
      step.onChunk?.(i);
      send({ content: chunk });
    }
    const calls = step.toolCalls ?? [];
    for (const [index, call] of calls.entries()) {
      await sleep(delay, signal);
      const args = typeof call.args === 'string' ? call.args : JSON.stringify(call.args);
      send({ tool_calls: [{ index, id: call.id ?? `call_${seq}_${index}`, type: 'function', function: { name: call.name, arguments: args } }] });
    }
    if (signal.aborted) return;
    if (step.streamError) {
      res.write(`data: ${JSON.stringify({ error: { message: step.streamError, type: 'scripted_error', code: 'scripted' } })}\n\n`);
      res.end();
      return;
    }
    if (step.hang) {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      return;
    }
    send({}, calls.length ? 'tool_calls' : 'stop');
    const { prompt_tokens, completion_tokens } = step.usage ?? { prompt_tokens: 10, completion_tokens: count };
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: 'scripted', choices: [], usage: { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens } })}\n\n`,
    );
    res.write('data: [DONE]\n\n');
    res.end();
  }

  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'not found' } }));
        return;
      }
      const controller = new AbortController();
      res.on('close', () => controller.abort());
      const request = JSON.parse(await readBody(req)) as ModelRequest;
      const index = requests.push(request) - 1;
      requestHeaders.push(req.headers);
      open++;
      try {
        const step = queued.shift() ?? (await responder(request, index));
        await play(step, res, controller.signal);
      } catch (error) {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(error) } }));
      } finally {
        open--;
      }
    })();
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}/v1`;
  return {
    baseUrl,
    modelSpec: `openai-compatible:${baseUrl}#scripted`,
    requests,
    requestHeaders,
    respond: (r) => {
      responder = r;
    },
    queue: (...steps) => {
      queued.push(...steps);
    },
    openStreams: () => open,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
