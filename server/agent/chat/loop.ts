/**
 * The model and tool loop, straight on the model's stream of `LanguageModelV3StreamPart`s: bounded
 * steps, the caller's abort signal, retries of a failed model call, and a mapping of the
 * provider's stream parts to chat events. It knows nothing of chats, runs or HTTP, so a subagent
 * or a heartbeat can run it with their own context and tools.
 *
 * Why not the AI SDK's `streamText`: it relays every part through a chain of web streams (tee,
 * stitchable streams, several transforms) that dominated latency and memory at 500 concurrent
 * chats (bench/chat.ts). One step here is one provider stream, read part by part.
 *
 * Two callbacks: `onEvent` for every chat event as it streams (text deltas, tool_use, file,
 * error), `onEntry` for history entries as they complete (a whole text block, a tool_use, a
 * file); an interrupted text block is handed over with `cut: true`.
 */
import type {
  JSONValue,
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3StreamPart,
  LanguageModelV3ToolResultPart,
  SharedV3ProviderMetadata,
} from '@ai-sdk/provider';
import { z } from 'zod';
import { sleep } from '../../common/timers.js';
import type { AgentTool, AgentToolSet } from '../tools/types.js';
import type { ChatModel } from '../model/chat-model.js';
import type { ChatEvent } from '@contracts/agent/chat.js';
import { MODEL_SOURCE_HEADER, type ModelSource } from '@contracts/agent/model-source.js';

export type HistoryEntry =
  | { type: 'text'; content: string; cut?: boolean }
  | { type: 'tool_use'; name: string; input: string }
  | { type: 'file'; path: string; caption: string };

/** A message of the context the loop starts from (history, a task, a heartbeat prompt). */
export interface ContextMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface ModelLoopOptions {
  model: ChatModel;
  system: string;
  messages: ContextMessage[];
  tools: AgentToolSet;
  signal: AbortSignal;
  maxSteps: number;
  maxRetries?: number;
  /** What the calls are for: sent to the egress gateway, which meters the budget by it (contracts/agent/model-source.ts). */
  source?: ModelSource;
  onEvent(event: ChatEvent): void;
  onEntry?(entry: HistoryEntry): void;
  /** Each tool call once it has settled: `tool` is the tool's name, or `unknown` for a name the model made up. */
  onToolResult?(tool: string, result: ToolResult): void;
}

/** A tool call's result: it returned, it threw, or its input was refused before it ran. */
export type ToolResult = 'ok' | 'error' | 'invalid_input';

export interface ModelLoopResult {
  status: 'completed' | 'aborted' | 'failed';
  /** All assistant text of the run, text blocks joined by blank lines. */
  text: string;
  error?: string;
}

/**
 * A human-readable line for a model or transport error (never a stack): an `APICallError` (with
 * its HTTP status), any other Error, or the error object a provider found inside its stream
 * (OpenAI-style `{message, type, code}`).
 */
export function describeModelError(error: unknown): string {
  const { statusCode, message } = (error ?? {}) as { statusCode?: number; message?: unknown };
  const text = (typeof message === 'string' ? message : String(error)).split('\n')[0]!.slice(0, 500);
  return statusCode ? `Model error (HTTP ${statusCode}): ${text}` : `Model error: ${text}`;
}

/** The message a tool failure shows the model (the tool result of that call). */
function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : (JSON.stringify(error) ?? 'unknown error');
}

/**
 * JSON schemas for the provider, once per zod schema. Objects get `additionalProperties: false`
 * as the AI SDK gave them (OpenAI's strict mode needs it; zod leaves it open for input).
 */
const jsonSchemas = new WeakMap<z.ZodType, LanguageModelV3FunctionTool['inputSchema']>();

function toolDefinitions(tools: AgentToolSet): LanguageModelV3FunctionTool[] {
  return Object.entries(tools).map(([name, tool]) => {
    if (tool.jsonSchema)
      return { type: 'function', name, description: tool.description, inputSchema: tool.jsonSchema as LanguageModelV3FunctionTool['inputSchema'] };
    let inputSchema = jsonSchemas.get(tool.inputSchema);
    if (!inputSchema) {
      inputSchema = z.toJSONSchema(tool.inputSchema, {
        target: 'draft-7',
        io: 'input',
        override: ({ jsonSchema }) => {
          if (jsonSchema.type === 'object' && jsonSchema.additionalProperties === undefined) jsonSchema.additionalProperties = false;
        },
      }) as LanguageModelV3FunctionTool['inputSchema'];
      jsonSchemas.set(tool.inputSchema, inputSchema);
    }
    return { type: 'function', name, description: tool.description, inputSchema };
  });
}

type ToolInput = { ok: true; value: unknown; json: string } | { ok: false; value: unknown; json: string; error: string };

/**
 * The model's tool input (a JSON string, empty meaning `{}`) checked against the tool's zod
 * schema. A failure is not thrown: it becomes the call's tool error, so the model can correct it.
 */
function parseToolInput(name: string, tool: AgentTool | undefined, tools: AgentToolSet, raw: string): ToolInput {
  let parsed: unknown;
  try {
    parsed = raw.trim() === '' ? {} : JSON.parse(raw);
  } catch {
    return { ok: false, value: raw, json: JSON.stringify(raw), error: `Invalid input for tool ${name}: not valid JSON` };
  }
  const json = JSON.stringify(parsed);
  if (!tool) {
    const available = Object.keys(tools);
    const offer = available.length ? `Available tools: ${available.join(', ')}.` : 'No tools are available.';
    return { ok: false, value: parsed, json, error: `Model tried to call unavailable tool '${name}'. ${offer}` };
  }
  const checked = tool.inputSchema.safeParse(parsed);
  if (!checked.success) return { ok: false, value: parsed, json, error: `Invalid input for tool ${name}: ${z.prettifyError(checked.error)}` };
  // The validated value (unknown keys stripped) is what the tool runs with and what the user sees.
  return { ok: true, value: checked.data, json: JSON.stringify(checked.data) ?? '{}' };
}

function toolOutput(output: unknown): LanguageModelV3ToolResultPart['output'] {
  return typeof output === 'string' ? { type: 'text', value: output } : { type: 'json', value: (output ?? null) as JSONValue };
}

/** Resolves with `work`, or with nothing as soon as `signal` aborts (a tool may not heed it). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve(undefined);
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

const RETRY_BASE_MS = 2_000;
const RETRY_AFTER_MAX_MS = 60_000;

/**
 * Opens one model stream, retrying errors the provider marks retryable (429, 5xx, network) with
 * exponential backoff from 2 s, or the server's `retry-after(-ms)` when it asks for under a minute.
 */
async function openStream(
  model: ChatModel,
  options: LanguageModelV3CallOptions,
  retries: number,
  signal: AbortSignal,
): Promise<AsyncIterable<LanguageModelV3StreamPart>> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await model.stream(options);
    } catch (error) {
      if (attempt >= retries || signal.aborted || (error as { isRetryable?: boolean } | undefined)?.isRetryable !== true) throw error;
      const backoff = RETRY_BASE_MS * 2 ** attempt;
      const headers = (error as { responseHeaders?: Record<string, string> }).responseHeaders ?? {};
      const asked = headers['retry-after-ms'] !== undefined ? Number(headers['retry-after-ms']) : Number(headers['retry-after']) * 1000;
      await sleep(asked >= 0 && asked < RETRY_AFTER_MAX_MS ? asked : backoff, signal);
      if (signal.aborted) throw error;
    }
  }
}

/** A text or reasoning block as it streams; it goes back to the model in the next step. */
interface Block {
  text: string;
  metadata: SharedV3ProviderMetadata | undefined;
}

export async function runModelLoop(opts: ModelLoopOptions): Promise<ModelLoopResult> {
  const { signal, onEvent, tools } = opts;
  const onEntry = opts.onEntry ?? (() => undefined);
  const blocks: string[] = [];
  // Text blocks still streaming; left open when a step ends early, and then saved as cut.
  const openText = new Map<string, Block>();
  let failure: string | undefined;
  // Once the loop has returned, a tool that kept running (it ignored the abort) stays silent.
  let live = true;
  const emitFromTool = (event: ChatEvent) => {
    if (!live) return;
    onEvent(event);
    if (event.type === 'file') onEntry({ type: 'file', path: event.path, caption: event.caption ?? '' });
  };

  const closeText = (id: string, cut: boolean) => {
    const block = openText.get(id);
    openText.delete(id);
    if (block?.text) {
      blocks.push(block.text);
      onEntry(cut ? { type: 'text', content: block.text, cut: true } : { type: 'text', content: block.text });
    }
  };

  const prompt: LanguageModelV3Message[] = [{ role: 'system', content: opts.system }];
  for (const message of opts.messages) prompt.push({ role: message.role, content: [{ type: 'text', text: message.content }] });
  const definitions = toolDefinitions(tools);

  try {
    for (let step = 0; step < opts.maxSteps && !failure && !signal.aborted; step++) {
      const stream = await openStream(
        opts.model,
        {
          prompt,
          abortSignal: signal,
          headers: { [MODEL_SOURCE_HEADER]: opts.source ?? 'chat' },
          ...(definitions.length ? { tools: definitions, toolChoice: { type: 'auto' } } : {}),
        },
        opts.maxRetries ?? 2,
        signal,
      );
      const assistant: Extract<LanguageModelV3Message, { role: 'assistant' }>['content'] = [];
      const reasoning = new Map<string, Block>();
      const calls: Array<Promise<LanguageModelV3ToolResultPart>> = [];
      const parts = stream[Symbol.asyncIterator]();
      try {
        for (;;) {
          const { done, value: part } = await parts.next();
          if (done) break;
          switch (part.type) {
            case 'text-start':
              openText.set(part.id, { text: '', metadata: part.providerMetadata });
              break;
            case 'text-delta': {
              const block = openText.get(part.id);
              if (!block || !part.delta) break;
              block.text += part.delta;
              if (part.providerMetadata) block.metadata = part.providerMetadata;
              onEvent({ type: 'text', content: part.delta });
              break;
            }
            case 'text-end': {
              const block = openText.get(part.id);
              if (block?.text) assistant.push({ type: 'text', text: block.text, providerOptions: part.providerMetadata ?? block.metadata });
              closeText(part.id, false);
              break;
            }
            case 'reasoning-start':
              reasoning.set(part.id, { text: '', metadata: part.providerMetadata });
              break;
            case 'reasoning-delta': {
              const block = reasoning.get(part.id);
              if (!block) break;
              block.text += part.delta;
              if (part.providerMetadata) block.metadata = part.providerMetadata;
              break;
            }
            case 'reasoning-end': {
              const block = reasoning.get(part.id);
              reasoning.delete(part.id);
              if (block) assistant.push({ type: 'reasoning', text: block.text, providerOptions: part.providerMetadata ?? block.metadata });
              break;
            }
            case 'tool-call': {
              const { toolCallId, toolName } = part;
              // Own tools only: a name like `constructor` must not find Object's.
              const tool = Object.hasOwn(tools, toolName) ? tools[toolName] : undefined;
              const input = parseToolInput(toolName, tool, tools, part.input);
              const event = { type: 'tool_use' as const, name: toolName, input: input.json };
              onEvent(event);
              onEntry(event);
              assistant.push({ type: 'tool-call', toolCallId, toolName, input: input.value, providerOptions: part.providerMetadata });
              // Tools run while the model goes on streaming, as soon as their call is complete.
              const run = input.ok
                ? Promise.resolve().then(() => tool!.execute(input.value, { signal, emit: emitFromTool }))
                : Promise.reject(new Error(input.error));
              const settled = (result: ToolResult) => opts.onToolResult?.(tool ? toolName : 'unknown', result);
              calls.push(
                run.then(
                  (output: unknown): LanguageModelV3ToolResultPart => {
                    settled('ok');
                    return { type: 'tool-result', toolCallId, toolName, output: toolOutput(output) };
                  },
                  (error: unknown): LanguageModelV3ToolResultPart => {
                    settled(input.ok ? 'error' : 'invalid_input');
                    return { type: 'tool-result', toolCallId, toolName, output: { type: 'error-text', value: errorText(error) } };
                  },
                ),
              );
              break;
            }
            case 'error':
              failure ??= describeModelError(part.error);
              break;
            default:
              break;
          }
          if (failure) break;
        }
      } finally {
        // Ends the HTTP response of a step that stopped early (error, abort); a no-op otherwise.
        void parts.return?.()?.catch(() => undefined);
      }
      if (!calls.length) break;
      const results = await untilAborted(Promise.all(calls), signal);
      if (!results || failure) break;
      prompt.push({ role: 'assistant', content: assistant }, { role: 'tool', content: results });
    }
  } catch (error) {
    if (!signal.aborted) failure ??= describeModelError(error);
  } finally {
    live = false;
  }
  const status = signal.aborted ? 'aborted' : failure ? 'failed' : 'completed';
  for (const id of [...openText.keys()]) closeText(id, status !== 'completed');
  if (status === 'failed') onEvent({ type: 'error', content: failure! });
  return { status, text: blocks.join('\n\n'), ...(failure && status === 'failed' ? { error: failure } : {}) };
}
