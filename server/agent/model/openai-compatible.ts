/**
 * A streaming client for the OpenAI chat-completions protocol (`POST {base}/chat/completions`
 * with `stream: true`), the model behind `openai-compatible:<base_url>#<model>` (Ollama, vLLM,
 * llama.cpp, LM Studio, OpenRouter…).
 *
 * Why not `@ai-sdk/openai-compatible`: it relays every chunk through about nine web streams
 * (fetch body, text decoder, event-source parser, zod-validated JSON, part mapping), which on
 * its own missed the chat targets at 500 concurrent chats (≈ 26 ms p99 per event and 370 MB
 * against ≤ 2 ms and < 300 MB, bench/chat.ts). This reads the HTTP response of node:http as it
 * arrives and yields the same `LanguageModelV3StreamPart`s that provider yields, for the parts
 * the loop uses (text, reasoning, tool calls, errors, finish); test/chat/openai-compatible.test.ts
 * checks that both read the same wire streams alike.
 *
 * Semantics kept from the AI SDK provider: an HTTP error answer throws a `ModelCallError` with
 * the status, the server's message and whether a retry may help (408, 409, 429, 5xx, network);
 * an error object inside the stream, an unparsable chunk or a stream that ends without a finish
 * reason becomes an `error` part. A tool call is complete when the next one starts or the
 * stream ends (servers stream calls one after another), not by re-parsing its arguments on
 * every delta.
 */
import { randomBytes } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LanguageModelV3CallOptions, LanguageModelV3Prompt, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { gatewayConnection, gatewayTarget, type EgressGatewayAddress } from '../net/egress.js';
import type { ChatModel } from './chat-model.js';

export interface OpenAICompatibleOptions {
  /** e.g. `http://127.0.0.1:11434/v1` (no trailing slash). */
  baseURL: string;
  modelId: string;
  apiKey?: string;
  /** A sandboxed agent's egress gateway (server/agent/net/egress.ts); unset: direct. */
  egress?: EgressGatewayAddress;
}

/** A model call the server refused or that never reached it. */
export class ModelCallError extends Error {
  override name = 'ModelCallError';
  constructor(
    message: string,
    readonly statusCode: number | undefined,
    readonly isRetryable: boolean,
    readonly responseHeaders: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** Error answers are read up to this size for their message. */
const MAX_ERROR_BODY = 64 * 1024;
/** A single SSE event larger than this ends the stream with an error (a runaway server). */
const MAX_EVENT_CHARS = 8 * 1024 * 1024;

type WireMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; reasoning_content?: string; tool_calls?: WireToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** The chat-completions `messages` for a prompt, as `@ai-sdk/openai-compatible` converts them (text parts only). */
export function toWireMessages(prompt: LanguageModelV3Prompt): WireMessage[] {
  const messages: WireMessage[] = [];
  for (const message of prompt) {
    switch (message.role) {
      case 'system':
        messages.push({ role: 'system', content: message.content });
        break;
      case 'user':
        messages.push({ role: 'user', content: message.content.map((part) => (part.type === 'text' ? part.text : '')).join('') });
        break;
      case 'assistant': {
        let text = '';
        let reasoning = '';
        const calls: WireToolCall[] = [];
        for (const part of message.content) {
          if (part.type === 'text') text += part.text;
          else if (part.type === 'reasoning') reasoning += part.text;
          else if (part.type === 'tool-call')
            calls.push({ id: part.toolCallId, type: 'function', function: { name: part.toolName, arguments: JSON.stringify(part.input ?? {}) } });
        }
        messages.push({
          role: 'assistant',
          content: calls.length ? text || null : text,
          ...(reasoning ? { reasoning_content: reasoning } : {}),
          ...(calls.length ? { tool_calls: calls } : {}),
        });
        break;
      }
      case 'tool':
        for (const result of message.content) {
          if (result.type !== 'tool-result') continue;
          const { output } = result;
          const content =
            output.type === 'text' || output.type === 'error-text'
              ? output.value
              : output.type === 'execution-denied'
                ? (output.reason ?? 'Tool call execution denied.')
                : JSON.stringify(output.value);
          messages.push({ role: 'tool', tool_call_id: result.toolCallId, content });
        }
        break;
    }
  }
  return messages;
}

function requestBody(modelId: string, options: LanguageModelV3CallOptions): string {
  const tools = options.tools?.flatMap((tool) =>
    tool.type === 'function' ? [{ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.inputSchema } }] : [],
  );
  const choice = options.toolChoice;
  return JSON.stringify({
    model: modelId,
    messages: toWireMessages(options.prompt),
    stream: true,
    stream_options: { include_usage: true },
    ...(options.maxOutputTokens !== undefined ? { max_tokens: options.maxOutputTokens } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(tools?.length
      ? { tools, ...(choice ? { tool_choice: choice.type === 'tool' ? { type: 'function', function: { name: choice.toolName } } : choice.type } : {}) }
      : {}),
  });
}

const retryableStatus = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500;

function flatHeaders(res: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  return headers;
}

/**
 * The `message` of an OpenAI-style error body (`{error:{message}}`), else the body's first line or
 * the status text. A 429 whose error type is `insufficient_quota` (OpenAI's, and our gateway's
 * daily budget) will not pass by retrying, so it is not retryable.
 */
async function errorFromResponse(res: IncomingMessage): Promise<ModelCallError> {
  let body = '';
  res.setEncoding('utf8');
  for await (const chunk of res as AsyncIterable<string>) {
    body += chunk;
    if (body.length > MAX_ERROR_BODY) {
      res.destroy();
      break;
    }
  }
  let message: string | undefined;
  let quotaSpent = false;
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown; type?: unknown } | string; message?: unknown };
    const candidate = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message);
    if (typeof candidate === 'string') message = candidate;
    quotaSpent = typeof parsed.error === 'object' && parsed.error?.type === 'insufficient_quota';
  } catch {
    message = body.trim().split('\n')[0] || undefined;
  }
  const status = res.statusCode ?? 0;
  return new ModelCallError(message ?? res.statusMessage ?? `HTTP ${status}`, status, retryableStatus(status) && !quotaSpent, flatHeaders(res));
}

/** Where a model call goes: straight to the server, or through the egress gateway. */
interface Endpoint {
  url: URL;
  agent: HttpAgent;
  egress?: EgressGatewayAddress;
}

function post(endpoint: Endpoint, body: string, headers: Record<string, string>, signal: AbortSignal | undefined, retried = false): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const { url, agent, egress } = endpoint;
    const options = { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) }, ...(signal ? { signal } : {}) };
    let req: ClientRequest;
    if (egress) {
      const { host, path } = gatewayTarget(url);
      const gateway = gatewayConnection(egress);
      req = httpRequest({ ...options, ...gateway.connect, path, headers: { ...options.headers, ...gateway.headers, host } }, resolve);
    } else {
      req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, resolve);
    }
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.name === 'AbortError') reject(error);
      // A kept-alive connection that the server closed as we reused it: the request never reached
      // the server, so it goes once more on a fresh connection (what browsers and undici do).
      else if (req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE') && !retried)
        post(endpoint, body, headers, signal, true).then(resolve, reject);
      else reject(new ModelCallError(`Cannot connect to the model server: ${error.message}`, undefined, true));
    });
    req.end(body);
  });
}

interface ChunkDelta {
  content?: unknown;
  reasoning_content?: unknown;
  reasoning?: unknown;
  refusal?: unknown;
  tool_calls?: Array<{ index?: number; id?: string | null; function?: { name?: string | null; arguments?: string | null } }> | null;
}

interface Chunk {
  error?: unknown;
  choices?: Array<{ delta?: ChunkDelta | null; finish_reason?: string | null }>;
  usage?: { prompt_tokens?: number | null; completion_tokens?: number | null } | null;
}

interface PendingCall {
  id: string;
  name: string;
  args: string;
}

const finishReasons: Record<string, 'stop' | 'length' | 'content-filter' | 'tool-calls'> = {
  stop: 'stop',
  length: 'length',
  content_filter: 'content-filter',
  tool_calls: 'tool-calls',
  function_call: 'tool-calls',
};

/** The ids `@ai-sdk/openai-compatible` gives its blocks (one of each kind per step). */
const BLOCK_IDS = { text: 'txt-0', reasoning: 'reasoning-0' } as const;

/**
 * Maps chunks (already parsed) to stream parts, keeping the state a stream needs: the open
 * text or reasoning block and the tool call being assembled.
 */
class ChunkMapper {
  /** The block being streamed: text and reasoning alternate, each delta of one ends the other. */
  private open: 'text' | 'reasoning' | undefined;
  private readonly calls = new Map<number, PendingCall>();
  private lastIndex = -1;
  private finishReason: string | undefined;
  private refused = false;
  private usage: Chunk['usage'];
  failed = false;

  map(chunk: Chunk, out: LanguageModelV3StreamPart[]): void {
    if (chunk.error !== undefined) {
      this.failed = true;
      out.push({ type: 'error', error: chunk.error });
      return;
    }
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return;
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    const delta = choice.delta;
    if (!delta) return;
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string' && reasoning) this.blockDelta('reasoning', reasoning, out);
    const { content } = delta;
    if (typeof content === 'string') {
      if (content) this.blockDelta('text', content, out);
    } else if (Array.isArray(content)) {
      for (const part of content as Array<{ type?: unknown; text?: unknown; thinking?: unknown }>) {
        if (part?.type === 'text' && typeof part.text === 'string' && part.text) this.blockDelta('text', part.text, out);
        else if (part?.type === 'thinking' && Array.isArray(part.thinking)) {
          const thought = (part.thinking as Array<{ type?: unknown; text?: unknown }>)
            .map((t) => (t?.type === 'text' && typeof t.text === 'string' ? t.text : ''))
            .join('');
          if (thought) this.blockDelta('reasoning', thought, out);
        }
      }
    }
    if (typeof delta.refusal === 'string' && delta.refusal) {
      this.refused = true;
      this.blockDelta('text', delta.refusal, out);
    }
    if (delta.tool_calls?.length) {
      // What the model wrote before calling tools is complete.
      this.endBlock(out);
      for (const call of delta.tool_calls) this.toolCallDelta(call, out);
    }
  }

  /** The parts that close the stream: open blocks, pending tool calls, `finish` (or an error without a finish reason). */
  end(out: LanguageModelV3StreamPart[]): void {
    this.endBlock(out);
    for (const index of [...this.calls.keys()]) this.completeCall(index, out);
    if (!this.finishReason && !this.failed) {
      this.failed = true;
      out.push({ type: 'error', error: new Error('the model stream ended without a finish reason') });
    }
    const raw = this.failed && !this.finishReason ? undefined : this.finishReason;
    out.push({
      type: 'finish',
      finishReason: { unified: !raw ? 'error' : raw === 'stop' && this.refused ? 'content-filter' : (finishReasons[raw] ?? 'other'), raw },
      usage: {
        inputTokens: { total: this.usage?.prompt_tokens ?? undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: this.usage?.completion_tokens ?? undefined, text: undefined, reasoning: undefined },
      },
    });
  }

  private blockDelta(kind: 'text' | 'reasoning', delta: string, out: LanguageModelV3StreamPart[]): void {
    const id = BLOCK_IDS[kind];
    if (this.open !== kind) {
      this.endBlock(out);
      this.open = kind;
      out.push(kind === 'text' ? { type: 'text-start', id } : { type: 'reasoning-start', id });
    }
    out.push(kind === 'text' ? { type: 'text-delta', id, delta } : { type: 'reasoning-delta', id, delta });
  }

  private endBlock(out: LanguageModelV3StreamPart[]): void {
    if (!this.open) return;
    const id = BLOCK_IDS[this.open];
    out.push(this.open === 'text' ? { type: 'text-end', id } : { type: 'reasoning-end', id });
    this.open = undefined;
  }

  private toolCallDelta(delta: NonNullable<ChunkDelta['tool_calls']>[number], out: LanguageModelV3StreamPart[]): void {
    const index = typeof delta.index === 'number' ? delta.index : this.unindexed(delta.id);
    let call = this.calls.get(index);
    if (!call) {
      // A new call means the ones before it are complete.
      for (const earlier of [...this.calls.keys()]) if (earlier < index) this.completeCall(earlier, out);
      call = { id: '', name: '', args: '' };
      this.calls.set(index, call);
      this.lastIndex = Math.max(this.lastIndex, index);
    }
    if (delta.id && !call.id) call.id = delta.id;
    if (delta.function?.name && !call.name) call.name = delta.function.name;
    if (delta.function?.arguments) {
      // Arguments arrive across many events, each under the event cap: bound their sum as well.
      if (call.args.length + delta.function.arguments.length > MAX_EVENT_CHARS) throw new Error('the model sent tool arguments over 8 MiB');
      call.args += delta.function.arguments;
    }
  }

  /** Servers that omit `index` send one call per delta: a new id starts the next call. */
  private unindexed(id: string | null | undefined): number {
    const current = this.calls.get(this.lastIndex);
    return current && id && current.id && current.id !== id ? this.lastIndex + 1 : Math.max(this.lastIndex, 0);
  }

  private completeCall(index: number, out: LanguageModelV3StreamPart[]): void {
    const call = this.calls.get(index);
    this.calls.delete(index);
    if (!call) return;
    const toolCallId = call.id || `call_${randomBytes(9).toString('base64url')}`;
    out.push({ type: 'tool-call', toolCallId, toolName: call.name, input: call.args });
  }
}

/**
 * Server-sent events, decoded chunk by chunk: the `data` of each complete event (multi-line data
 * joined with `\n`; comments, `event:`, `id:` and `retry:` fields ignored). A plain class rather
 * than another async generator, so each chunk costs no extra promise per event.
 */
class SseDecoder {
  private buffer = '';
  private data: string[] = [];

  /** The events completed by this chunk. */
  push(chunk: string, events: string[]): void {
    const buffer = this.buffer + chunk;
    let start = 0;
    for (;;) {
      const newline = buffer.indexOf('\n', start);
      if (newline < 0) break;
      const end = newline > start && buffer.charCodeAt(newline - 1) === 13 ? newline - 1 : newline;
      if (end === start) {
        if (this.data.length) events.push(this.data.length === 1 ? this.data[0]! : this.data.join('\n'));
        this.data = [];
      } else if (buffer.startsWith('data:', start)) {
        this.data.push(buffer.slice(buffer.charCodeAt(start + 5) === 32 ? start + 6 : start + 5, end));
      }
      start = newline + 1;
    }
    this.buffer = start ? buffer.slice(start) : buffer;
    if (this.buffer.length > MAX_EVENT_CHARS) throw new Error('the model sent an event over 8 MiB');
  }

  /** The last event, when the body ends without a blank line after it. */
  end(events: string[]): void {
    const rest = this.buffer;
    if (rest.startsWith('data:')) this.data.push(rest.slice(rest.charCodeAt(5) === 32 ? 6 : 5));
    if (this.data.length) events.push(this.data.join('\n'));
    this.buffer = '';
    this.data = [];
  }
}

/** After `[DONE]`, how long the rest of the response (normally just its end) may take before the connection is dropped. */
const DRAIN_AFTER_DONE_MS = 2_000;

/**
 * Lets the response finish on its own so its keep-alive connection goes back to the agent's
 * pool (destroying it costs a close and a new connection for the next call); a server that
 * keeps it open after `[DONE]` loses it.
 */
function drain(res: IncomingMessage): void {
  if (res.destroyed) return;
  const timer = setTimeout(() => res.destroy(), DRAIN_AFTER_DONE_MS);
  timer.unref();
  res.once('close', () => clearTimeout(timer));
  // Read to the end (even a response already complete emits `end` only once read), which frees the socket.
  res.resume();
}

/** While this many chunks wait unread, the response is paused (the consumer is behind). */
const MAX_QUEUED_CHUNKS = 64;

/**
 * A response body read in flowing mode: `data` events queue chunks that `take` hands over all at
 * once. Cheaper per chunk than a Readable's async iterator (which goes through `readable`
 * events, `read()` and a promise per chunk), and a burst of chunks costs one wake-up.
 */
class BodyChunks {
  private chunks: string[] = [];
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly res: IncomingMessage) {
    res.setEncoding('utf8');
    res.on('data', this.onData);
    res.on('end', this.onEnd);
    res.on('error', this.onError);
    res.on('close', this.onClose);
  }

  /** The chunks received since the last call (waiting for one), or undefined once the body has ended. */
  async take(): Promise<string[] | undefined> {
    if (!this.chunks.length && !this.ended && !this.failure) await new Promise<void>((resolve) => (this.wake = resolve));
    if (this.chunks.length) {
      const chunks = this.chunks;
      this.chunks = [];
      if (this.res.isPaused()) this.res.resume();
      return chunks;
    }
    if (this.failure) throw this.failure;
    return undefined;
  }

  /** Stops listening (the response itself is left as it is). */
  detach(): void {
    this.res.off('data', this.onData);
    this.res.off('end', this.onEnd);
    this.res.off('error', this.onError);
    this.res.off('close', this.onClose);
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private readonly onData = (chunk: string) => {
    this.chunks.push(chunk);
    if (this.chunks.length >= MAX_QUEUED_CHUNKS) this.res.pause();
    this.notify();
  };

  private readonly onEnd = () => {
    this.ended = true;
    this.notify();
  };

  private readonly onError = (error: Error) => {
    this.failure ??= error;
    this.notify();
  };

  private readonly onClose = () => {
    if (!this.ended) this.failure ??= new Error("the model's response ended before it was complete");
    this.notify();
  };
}

async function* streamParts(res: IncomingMessage): AsyncGenerator<LanguageModelV3StreamPart> {
  const mapper = new ChunkMapper();
  const out: LanguageModelV3StreamPart[] = [];
  let finished = false;
  const body = new BodyChunks(res);
  try {
    yield { type: 'stream-start', warnings: [] };
    const decoder = new SseDecoder();
    const events: string[] = [];
    for (let sawDone = false; !sawDone; ) {
      const chunks = await body.take();
      if (chunks) for (const chunk of chunks) decoder.push(chunk, events);
      else decoder.end(events);
      for (const data of events) {
        if (data === '[DONE]') {
          sawDone = true;
          break;
        }
        let chunk: Chunk;
        try {
          chunk = JSON.parse(data) as Chunk;
        } catch {
          mapper.failed = true;
          yield { type: 'error', error: new Error(`the model sent a chunk that is not JSON: ${data.slice(0, 200)}`) };
          continue;
        }
        if (chunk === null || typeof chunk !== 'object') continue;
        mapper.map(chunk, out);
        // Yielding from the array keeps one generator step per part without allocating a new one per chunk.
        for (let i = 0; i < out.length; i++) yield out[i]!;
        out.length = 0;
      }
      events.length = 0;
      if (!chunks) break;
    }
    finished = true;
    mapper.end(out);
    yield* out;
  } finally {
    body.detach();
    // Not destroyed after `[DONE]` or the body's end, see drain(); a consumer that stopped early
    // (error, abort, cancelled run) closes the connection.
    if (finished) drain(res);
    else res.destroy();
  }
}

/** A `ChatModel` speaking the OpenAI chat-completions streaming protocol over node:http(s). */
export function openAICompatibleModel(opts: OpenAICompatibleOptions): ChatModel {
  const url = new URL(`${opts.baseURL}/chat/completions`);
  const agent = url.protocol === 'https:' && !opts.egress ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  const endpoint: Endpoint = { url, agent, egress: opts.egress };
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream' };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  return {
    async stream(options) {
      // Per-call headers (the call's source, for the egress gateway's meter) beside the fixed ones.
      const callHeaders = Object.fromEntries(Object.entries(options.headers ?? {}).filter((entry): entry is [string, string] => entry[1] !== undefined));
      const res = await post(endpoint, requestBody(opts.modelId, options), { ...callHeaders, ...headers }, options.abortSignal);
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) throw await errorFromResponse(res);
      return streamParts(res);
    },
  };
}
