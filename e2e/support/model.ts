/**
 * The scripted model the e2e product talks to (MODEL=openai-compatible:http://127.0.0.1:<port>/v1#scripted),
 * started by playwright.config.ts. What it answers depends on the user's message:
 * - `slow …`: a long reply, a chunk every 250 ms (the reload-mid-stream test);
 * - `write a file`: calls write_file (notes/hello.txt), then send_file, then says it is done;
 * - `start a helper`: calls spawn_subagent with the task `count to three`, then says so;
 * - `count to three` (the subagent's own task): answers `one, two, three`;
 * - a message over 1,000 characters: says how many characters arrived (the long-message test);
 * - `markdown`: a reply with a heading, a list, a table, a link and a TypeScript code block;
 * - `wide table`: a Markdown table wider than a phone (the table layout test);
 * - `long list`: 60 numbered lines, a chunk every 40 ms (the scroll-follow test);
 * - `xss`: hostile Markdown and HTML (the XSS corpus), then a file with markup in its name;
 * - `spend the budget`: a short answer that reports 300,000 tokens (more than a guest's daily budget);
 * - `roll …`: "Roll number N." with N counting this model's requests (a regenerated reply differs);
 * - `what did I say …`: the user messages it was given, in order (what a replacement left);
 * - `long reply`: about 6,000 characters of Markdown paragraphs (the collapse test);
 * - `start a list helper`: spawns a subagent whose result is a Markdown list (the card test);
 * - `read the tides page`: calls web_fetch on the page of e2e/support/web.ts, then tells the high water it read there;
 * - `search the web for …`: calls web_search, then names the first result it got;
 * - `use <connector> <tool> [words]`: calls the connector's tool `<connector>__<tool>` (echo with the
 *   words as its message), then says what came back (e2e/connectors.spec.ts);
 * - anything else: a short greeting in a few chunks.
 */
import { XSS_CORPUS, XSS_FILE } from './xss.js';
import { lastUserText, startScriptedModel, toolResults, type ModelRequest, type ScriptedStep } from '../../test/support/scripted-model.js';

const port = Number(process.env.E2E_MODEL_PORT ?? 3912);
const webPort = Number(process.env.E2E_WEB_PORT ?? 3914);

function respond(request: ModelRequest, index: number): ScriptedStep {
  const text = lastUserText(request);
  if (text.startsWith('markdown')) {
    return {
      text: [
        '# Plan\n\n',
        '- first **item**\n- second\n\n',
        '| a | b |\n|---|---|\n| 1 | 2 |\n\n',
        'See [the docs](https://example.com/docs).\n\n',
        '```ts\nconst answer: number = 42;\n```\n',
      ],
      delayMs: 30,
    };
  }
  if (text.startsWith('wide table')) {
    return {
      text: [
        'Plans:\n\n',
        '| Plan | Seats | Storage | Support | Price per month |\n|---|---|---|---|---|\n',
        '| Enterprise | Unlimited | 10 terabytes | Around the clock | On request |\n',
        '| Team | Fifty | 1 terabyte | Business hours | 120 euros |\n',
      ],
      delayMs: 30,
    };
  }
  if (text.startsWith('long list')) return { text: { count: 60, chunk: (i) => `line ${i + 1}\n\n` }, delayMs: 40 };
  if (text.startsWith('xss')) {
    const done = toolResults(request).length;
    if (done === 0) return { toolCalls: [{ name: 'write_file', args: { path: XSS_FILE, content: 'inert\n' } }] };
    if (done === 1) return { toolCalls: [{ name: 'send_file', args: { path: XSS_FILE, caption: '<img src=x onerror=alert(15)>' } }] };
    return { text: XSS_CORPUS };
  }
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
  if (text === 'read the tides page') {
    const read = toolResults(request).at(-1)?.content;
    if (!read) return { toolCalls: [{ name: 'web_fetch', args: { url: `http://127.0.0.1:${webPort}/tides` } }] };
    const high = /High water is at ([\d:]+)/.exec(read)?.[1];
    return { text: high ? `The page says high water is at ${high}.` : `I could not read it: ${read.slice(0, 200)}` };
  }
  if (text.startsWith('search the web for ')) {
    const found = toolResults(request).at(-1)?.content;
    if (!found) return { toolCalls: [{ name: 'web_search', args: { query: text.slice('search the web for '.length) } }] };
    // The result as the tool gave it (a JSON string on the wire, its line breaks escaped).
    const first = /1\. ([^\n\\]+)/.exec(found)?.[1];
    return { text: first ? `The first result is “${first}”.` : `The search failed: ${found.slice(0, 200)}` };
  }
  const use = /^use ([A-Za-z0-9-]+) ([\w-]+)(?: (.+))?$/.exec(text);
  if (use) {
    // The last message, not any tool result: earlier turns of the same chat carry theirs.
    const last = request.messages.at(-1);
    if (last?.role !== 'tool') return { toolCalls: [{ name: `${use[1]}__${use[2]}`, args: use[2] === 'echo' ? { message: use[3] ?? '' } : {} }] };
    return { text: `The connector answered: ${String(last.content).slice(0, 200)}` };
  }
  if (text === 'spend the budget') return { text: 'That was expensive.', usage: { prompt_tokens: 100_000, completion_tokens: 200_000 } };
  if (text === 'count to three') return { text: 'one, two, three' };
  if (text.startsWith('roll')) return { text: `Roll number ${index + 1}.` };
  if (text.startsWith('what did I say')) {
    const said = request.messages.filter((m) => m.role === 'user').map((m) => String(m.content));
    return { text: `You said: ${said.join(' | ')}` };
  }
  if (text.startsWith('long reply'))
    return { text: Array.from({ length: 30 }, (_, i) => `Paragraph ${i + 1}: ${'lorem ipsum dolor sit amet '.repeat(7)}\n\n`) };
  if (text.startsWith('start a list helper')) {
    if (toolResults(request).length === 0) return { toolCalls: [{ name: 'spawn_subagent', args: { label: 'fruit picker', task: 'list three fruits' } }] };
    return { text: 'A list helper is on it.' };
  }
  if (text === 'list three fruits') return { text: '- **apple**\n- pear\n- plum' };
  if (text.length > 1_000) return { text: `Received ${text.length} characters.` };
  return { text: ['Hello! ', 'I am your agent. ', 'How can I help?'], delayMs: 50 };
}

const model = await startScriptedModel({ port, responder: respond });
console.log(`scripted model on ${model.baseUrl}`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void model.close().then(() => process.exit(0)));
