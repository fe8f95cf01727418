/**
 * The scripted model the e2e product talks to (MODEL=openai-compatible:http://127.0.0.1:<port>/v1#scripted),
 * started by playwright.config.ts. What it answers depends on the user's message:
 * - `slow …`: a long reply, a chunk every 250 ms (the reload-mid-stream test);
 * - `write a file`: calls write_file (notes/hello.txt), then send_file, then says it is done;
 * - `start a helper`: calls spawn_subagent with the task `count to three`, then says so;
 * - `count to three` (the subagent's own task): answers `one, two, three`;
 * - a message over 1,000 characters: says how many characters arrived (the long-message test);
 * - anything else: a short greeting in a few chunks.
 */
import { lastUserText, startScriptedModel, toolResults, type ModelRequest, type ScriptedStep } from '../../test/support/scripted-model.js';

const port = Number(process.env.E2E_MODEL_PORT ?? 3912);

function respond(request: ModelRequest): ScriptedStep {
  const text = lastUserText(request);
  if (text.startsWith('slow')) return { text: Array.from({ length: 24 }, (_, i) => `chunk${i} `), delayMs: 250 };
  if (text.startsWith('write a file')) {
    const done = toolResults(request).length;
    if (done === 0) return { toolCalls: [{ name: 'write_file', args: { path: 'notes/hello.txt', content: 'Hello from your agent.\n' } }] };
    if (done === 1) return { toolCalls: [{ name: 'send_file', args: { path: 'notes/hello.txt', caption: 'the note you asked for' } }] };
    return { text: 'I wrote notes/hello.txt for you.' };
  }
  if (text.startsWith('start a helper')) {
    if (toolResults(request).length === 0) return { toolCalls: [{ name: 'spawn_subagent', args: { label: 'counter', task: 'count to three' } }] };
    return { text: 'A helper is on it.' };
  }
  if (text === 'count to three') return { text: 'one, two, three' };
  if (text.length > 1_000) return { text: `Received ${text.length} characters.` };
  return { text: ['Hello! ', 'I am your agent. ', 'How can I help?'], delayMs: 50 };
}

const model = await startScriptedModel({ port, responder: respond });
console.log(`scripted model on ${model.baseUrl}`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void model.close().then(() => process.exit(0)));
