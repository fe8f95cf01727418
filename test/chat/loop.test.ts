/**
 * The model and tool loop on its own (no agent, no HTTP of ours), driven through the production
 * provider by the scripted OpenAI-compatible model: tool input checked by the tool's zod schema,
 * unknown tools, tool schemas as the provider sends them, retries, abort during a stuck tool.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runModelLoop, type HistoryEntry, type ModelLoopOptions } from '../../server/agent/chat/loop.js';
import { createLanguageModel } from '../../server/agent/model/model.js';
import { parseModelSpec } from '@contracts/agent/model-spec.js';
import type { ChatEvent } from '@contracts/agent/chat.js';
import { defineTool, type AgentToolSet } from '../../server/agent/tools/types.js';
import { startScriptedModel, toolResults, type ScriptedModel } from '../support/scripted-model.js';

let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel();
});
afterAll(() => model.close());

function addTool(calls: Array<{ a: number; b: number }>): AgentToolSet {
  return {
    add: defineTool({
      description: 'Adds two numbers.',
      inputSchema: z.object({ a: z.number(), b: z.number().int().describe('An integer') }),
      async execute(input) {
        calls.push(input);
        return { sum: input.a + input.b };
      },
    }),
  };
}

async function run(tools: AgentToolSet, extra: Partial<ModelLoopOptions> = {}) {
  const events: ChatEvent[] = [];
  const entries: HistoryEntry[] = [];
  const result = await runModelLoop({
    model: createLanguageModel(parseModelSpec(model.modelSpec)),
    system: 'system prompt',
    messages: [{ role: 'user', content: 'go' }],
    tools,
    signal: new AbortController().signal,
    maxSteps: 5,
    maxRetries: 0,
    onEvent: (event) => events.push(event),
    onEntry: (entry) => entries.push(entry),
    ...extra,
  });
  return { result, events, entries };
}

describe('runModelLoop', () => {
  it('runs a valid call with the zod-parsed input (unknown keys dropped) and sends the result back', async () => {
    const calls: Array<{ a: number; b: number }> = [];
    model.queue({ toolCalls: [{ name: 'add', args: { a: 1, b: 2, extra: 'x' } }] }, { text: 'three' });
    const { result, events } = await run(addTool(calls));
    expect(result).toEqual({ status: 'completed', text: 'three' });
    expect(calls).toEqual([{ a: 1, b: 2 }]);
    expect(events).toEqual([
      { type: 'tool_use', name: 'add', input: '{"a":1,"b":2}' },
      { type: 'text', content: 'three' },
    ]);
    const second = model.requests.at(-1)!;
    expect(toolResults(second)).toEqual([{ id: expect.any(String), content: '{"sum":3}' }]);
    expect(second.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(second.messages[2]!.tool_calls![0]!.function).toEqual({ name: 'add', arguments: '{"a":1,"b":2}' });
  });

  it('turns input that fails the zod schema into a tool error the model sees, without running the tool', async () => {
    const calls: Array<{ a: number; b: number }> = [];
    model.queue({ toolCalls: [{ name: 'add', args: { a: 'one', b: 2.5 } }] }, { text: 'sorry' });
    const { result, events, entries } = await run(addTool(calls));
    expect(result.status).toBe('completed');
    expect(calls).toEqual([]);
    expect(events).toEqual([
      { type: 'tool_use', name: 'add', input: '{"a":"one","b":2.5}' },
      { type: 'text', content: 'sorry' },
    ]);
    expect(entries).toEqual([
      { type: 'tool_use', name: 'add', input: '{"a":"one","b":2.5}' },
      { type: 'text', content: 'sorry' },
    ]);
    const [error] = toolResults(model.requests.at(-1)!);
    expect(error!.content).toMatch(/^Invalid input for tool add: /);
    expect(error!.content).toMatch(/expected number/i);
    expect(error!.content).toMatch(/→ at a/);
    expect(error!.content).toMatch(/→ at b/);
  });

  it('reports input that is not JSON, and a tool that does not exist, as tool errors', async () => {
    model.queue(
      {
        toolCalls: [
          { name: 'add', args: '{"a": 1,' },
          { name: 'nope', args: {} },
        ],
      },
      { text: 'ok' },
    );
    const { result, events } = await run(addTool([]));
    expect(result.status).toBe('completed');
    expect(events.filter((e) => e.type === 'tool_use')).toEqual([
      { type: 'tool_use', name: 'add', input: '"{\\"a\\": 1,"' },
      { type: 'tool_use', name: 'nope', input: '{}' },
    ]);
    expect(toolResults(model.requests.at(-1)!).map((r) => r.content)).toEqual([
      'Invalid input for tool add: not valid JSON',
      "Model tried to call unavailable tool 'nope'. Available tools: add.",
    ]);
  });

  it('gives the provider each tool as a closed draft-7 JSON schema', async () => {
    model.queue({ text: 'hi' });
    await run(addTool([]));
    expect(model.requests.at(-1)!.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'add',
          description: 'Adds two numbers.',
          parameters: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              a: { type: 'number' },
              b: { type: 'integer', description: 'An integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
            },
            required: ['a', 'b'],
            additionalProperties: false,
          },
        },
      },
    ]);
  });

  it('retries a retryable model error, then streams', async () => {
    model.queue({ httpError: { status: 503, message: 'busy' } }, { text: 'after retry' });
    const before = model.requests.length;
    const { result, events } = await run({}, { maxRetries: 1 });
    expect(result).toEqual({ status: 'completed', text: 'after retry' });
    expect(events).toEqual([{ type: 'text', content: 'after retry' }]);
    expect(model.requests.length - before).toBe(2);
  });

  it('does not retry a client error', async () => {
    model.queue({ httpError: { status: 400, message: 'bad request' } });
    const before = model.requests.length;
    const { result, events } = await run({}, { maxRetries: 2 });
    expect(result.status).toBe('failed');
    expect(events).toEqual([{ type: 'error', content: 'Model error (HTTP 400): bad request' }]);
    expect(model.requests.length - before).toBe(1);
  });

  it('describes an error object found inside the stream by its message', async () => {
    model.queue({ text: 'par', streamError: 'overloaded, try later' });
    const { result, events, entries } = await run({});
    expect(result).toEqual({ status: 'failed', text: 'par', error: 'Model error: overloaded, try later' });
    expect(events).toEqual([
      { type: 'text', content: 'par' },
      { type: 'error', content: 'Model error: overloaded, try later' },
    ]);
    expect(entries).toEqual([{ type: 'text', content: 'par', cut: true }]);
  });

  it('returns on abort even when a tool ignores the signal, and drops what that tool emits later', async () => {
    const controller = new AbortController();
    let emitLate: (() => void) | undefined;
    const stuck: AgentToolSet = {
      stuck: defineTool({
        description: 'Never ends.',
        inputSchema: z.object({}),
        execute: (_input, ctx) =>
          new Promise(() => {
            emitLate = () => ctx.emit({ type: 'file', path: 'late.txt', caption: '' });
          }),
      }),
    };
    model.queue({ text: 'working', toolCalls: [{ name: 'stuck', args: {} }] });
    const pending = run(stuck, { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    const { result, events, entries } = await pending;
    expect(result).toEqual({ status: 'aborted', text: 'working' });
    emitLate!();
    expect(events.map((e) => e.type)).toEqual(['text', 'tool_use']);
    expect(entries).toEqual([
      { type: 'text', content: 'working' },
      { type: 'tool_use', name: 'stuck', input: '{}' },
    ]);
  });
});
