/**
 * The model and tool loop, on the AI SDK's `streamText`: bounded steps, the caller's abort
 * signal, and a mapping of the SDK's stream parts to chat events. It knows nothing of chats,
 * runs or HTTP, so a subagent or a heartbeat can run it with their own context and tools.
 *
 * Two callbacks: `onEvent` for every chat event as it streams (text deltas, tool_use, file,
 * error), `onEntry` for history entries as they complete (a whole text block, a tool_use, a
 * file); an interrupted text block is handed over with `cut: true`.
 */
import { stepCountIs, streamText, type LanguageModel, type ModelMessage, type Tool, type ToolSet } from 'ai';
import type { AgentToolSet } from '../tools/types.js';
import type { ChatEvent } from './schemas.js';

export type HistoryEntry =
  | { type: 'text'; content: string; cut?: boolean }
  | { type: 'tool_use'; name: string; input: string }
  | { type: 'file'; path: string; caption: string };

export interface ModelLoopOptions {
  model: LanguageModel;
  system: string;
  messages: ModelMessage[];
  tools: AgentToolSet;
  signal: AbortSignal;
  maxSteps: number;
  maxRetries?: number;
  onEvent(event: ChatEvent): void;
  onEntry?(entry: HistoryEntry): void;
}

export interface ModelLoopResult {
  status: 'completed' | 'aborted' | 'failed';
  /** All assistant text of the run, text blocks joined by blank lines. */
  text: string;
  error?: string;
}

/** A human-readable line for a model or transport error (never a stack). */
export function describeModelError(error: unknown): string {
  if (error instanceof Error) {
    const status = (error as { statusCode?: number }).statusCode;
    const message = error.message.split('\n')[0]!.slice(0, 500);
    return status ? `Model error (HTTP ${status}): ${message}` : `Model error: ${message}`;
  }
  return `Model error: ${String(error).slice(0, 500)}`;
}

function toJsonString(input: unknown): string {
  if (typeof input === 'string') {
    try {
      JSON.parse(input);
      return input;
    } catch {
      return JSON.stringify(input);
    }
  }
  return JSON.stringify(input ?? {});
}

export async function runModelLoop(opts: ModelLoopOptions): Promise<ModelLoopResult> {
  const { signal, onEvent } = opts;
  const onEntry = opts.onEntry ?? (() => undefined);
  // Events a tool emits while it runs are held until the stream reaches that call's result, so
  // they always follow the call's `tool_use` and any text before it.
  const toolEvents = new Map<string, ChatEvent[]>();
  const blocks: string[] = [];
  const openText = new Map<string, string>();
  let failure: string | undefined;

  const tools: ToolSet = {};
  for (const [name, agentTool] of Object.entries(opts.tools)) {
    const sdkTool: Tool<unknown, unknown> = {
      description: agentTool.description,
      inputSchema: agentTool.inputSchema as never,
      execute: (input, { toolCallId, abortSignal }) => {
        const held: ChatEvent[] = [];
        toolEvents.set(toolCallId, held);
        return (agentTool.execute as (i: unknown, c: unknown) => Promise<unknown>)(input, {
          signal: abortSignal ?? signal,
          emit: (event: ChatEvent) => held.push(event),
        });
      },
    };
    tools[name] = sdkTool;
  }

  const flushToolEvents = (toolCallId: string) => {
    const held = toolEvents.get(toolCallId);
    toolEvents.delete(toolCallId);
    for (const event of held ?? []) {
      onEvent(event);
      if (event.type === 'file') onEntry({ type: 'file', path: event.path, caption: event.caption ?? '' });
    }
  };
  const closeText = (id: string, cut: boolean) => {
    const content = openText.get(id);
    openText.delete(id);
    if (content) {
      blocks.push(content);
      onEntry(cut ? { type: 'text', content, cut: true } : { type: 'text', content });
    }
  };

  try {
    const result = streamText({
      model: opts.model,
      system: opts.system,
      messages: opts.messages,
      tools,
      stopWhen: stepCountIs(opts.maxSteps),
      maxRetries: opts.maxRetries ?? 2,
      abortSignal: signal,
      // Errors arrive as `error` parts below; the default handler would print them.
      onError: () => undefined,
    });
    const parts = result.fullStream;
    // `fullStream` is one branch of a tee; the SDK keeps the other branch for later accessors
    // (`textStream`, `consumeStream`…) that we never use, and an unread branch buffers every part
    // of the run. Cancelling it releases them; the branch we read is unaffected.
    void (result as unknown as { baseStream?: ReadableStream }).baseStream?.cancel().catch(() => undefined);
    for await (const part of parts) {
      switch (part.type) {
        case 'text-start':
          openText.set(part.id, '');
          break;
        case 'text-delta':
          if (!part.text) break;
          openText.set(part.id, (openText.get(part.id) ?? '') + part.text);
          onEvent({ type: 'text', content: part.text });
          break;
        case 'text-end':
          closeText(part.id, false);
          break;
        case 'tool-call': {
          const event = { type: 'tool_use' as const, name: part.toolName, input: toJsonString(part.input) };
          onEvent(event);
          onEntry(event);
          break;
        }
        case 'tool-result':
          if (!part.preliminary) flushToolEvents(part.toolCallId);
          break;
        case 'tool-error':
          flushToolEvents(part.toolCallId);
          break;
        case 'error':
          failure ??= describeModelError(part.error);
          break;
        default:
          break;
      }
      if (failure) break;
    }
  } catch (error) {
    if (!signal.aborted) failure ??= describeModelError(error);
  }
  const status = signal.aborted ? 'aborted' : failure ? 'failed' : 'completed';
  for (const id of [...openText.keys()]) closeText(id, status !== 'completed');
  if (status === 'failed') onEvent({ type: 'error', content: failure! });
  return { status, text: blocks.join('\n\n'), ...(failure && status === 'failed' ? { error: failure } : {}) };
}
