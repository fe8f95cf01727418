/**
 * A tool the model can call, independent of the AI SDK: a zod input schema and an `execute`
 * that gets the run's abort signal and a way to emit chat events (e.g. `file`). Tool sets are
 * plain records, so a chat run, a subagent or a heartbeat can compose their own.
 *
 * Every tool set is built at an agent's start, so a tool whose work needs a heavy library imports
 * it inside `execute` (`await import(…)`), not at the top of its module: it then costs nothing
 * until the model first calls the tool (docs/architecture.md, "How an agent starts").
 */
import type { z } from 'zod';
import type { ChatEvent } from '@contracts/agent/chat.js';

export interface ToolContext {
  signal: AbortSignal;
  /** Emits a chat event from inside the tool (delivered right after the call's `tool_use`). */
  emit(event: ChatEvent): void;
}

export interface AgentTool<I = unknown> {
  description: string;
  inputSchema: z.ZodType<I>;
  /** The JSON schema the model is given, when it comes from elsewhere (a connector's server); else made from `inputSchema`. */
  jsonSchema?: Record<string, unknown>;
  /** The returned value goes back to the model as the tool result; a throw becomes a tool error. */
  execute(input: I, ctx: ToolContext): Promise<unknown>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a set holds tools of any input type
// biome-ignore lint/suspicious/noExplicitAny: a set holds tools of different inputs; each checks its own with its schema
export type AgentToolSet = Record<string, AgentTool<any>>;

/** Identity helper that keeps `execute`'s input typed from the schema. */
export function defineTool<I>(tool: AgentTool<I>): AgentTool<I> {
  return tool;
}
