/**
 * Long chats with a small window (MODEL_CONTEXT_TOKENS=600) and the scripted model over real HTTP:
 * the runtime's memory flush writes the fact to MEMORY.md before any request goes out without the
 * turn that held it; the summary becomes a compaction entry the model reads instead, and the
 * history returns it with the original messages under it. A model that gives no summary leaves
 * no compaction behind and the chat still answers. Through the Telegram bot (the fake Bot API), a
 * contact's chat is compacted without the flush, so what a contact writes never reaches the
 * owner's MEMORY.md; the owner's chat there is flushed as any other.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, toolResults, type ModelRequest } from '../support/scripted-model.js';
import { PENDING_NOTICE } from '../../server/agent/messenger/service.js';
import { alice, startTelegramRig, until } from '../messenger/helpers.js';
import { startChatRig, type ChatRig } from './helpers.js';

const FACT = 'my locker code is 4711';
/** About 90 tokens by the runtime's estimate: a few of them fill a 600-token window. */
const filler = (n: number) => `Message ${n}: ${'lorem ipsum dolor sit amet '.repeat(12)}`;

const text = (request: ModelRequest) => JSON.stringify(request.messages);
const isFlush = (request: ModelRequest) => lastUserText(request).startsWith('(Memory flush');
const isSummary = (request: ModelRequest) => String(request.messages[0]?.content ?? '').startsWith('You summarise');

let rig: ChatRig | undefined;
afterEach(async () => {
  await rig?.stop();
  rig = undefined;
});

/** A history entry as these tests read it. */
type Entry = { type: string; name?: string; content?: string; messages?: Entry[] };
const historyOf = async (rig: ChatRig, chatId: string, limit: number) =>
  (await rig.get<{ messages: Entry[] }>(`/chat/${chatId}/history?limit=${limit}`)).body.messages;

type Seen = { index: number; kind: 'flush' | 'summary' | 'chat'; hasFact: boolean; memory: string };

/** A model that answers chats with "ok", writes the fact on a flush, and summarises with `summary`. */
function scripted(
  rig: Pick<ChatRig, 'agent' | 'model'>,
  summary: (request: ModelRequest) => { text?: string; httpError?: { status: number; message: string } },
): Seen[] {
  const seen: Seen[] = [];
  const memory = () => {
    try {
      return readFileSync(path.join(rig.agent.workspace, 'MEMORY.md'), 'utf8');
    } catch {
      return '';
    }
  };
  rig.model.respond((request, index) => {
    const kind = isFlush(request) ? 'flush' : isSummary(request) ? 'summary' : 'chat';
    // What the memory file holds as this request arrives, before it is answered.
    seen.push({ index, kind, hasFact: text(request).includes(FACT), memory: memory() });
    if (kind === 'flush') {
      return toolResults(request).length
        ? { text: 'saved' }
        : { toolCalls: [{ name: 'write_file', args: { path: 'MEMORY.md', content: `- The user's locker code is 4711\n`, append: true } }] };
    }
    if (kind === 'summary') return summary(request);
    return { text: 'ok' };
  });
  return seen;
}

describe('compaction', () => {
  it('flushes memory before the old turns leave the context, then summarises them into one entry', async () => {
    rig = await startChatRig({ MODEL_CONTEXT_TOKENS: '600' });
    const seen = scripted(rig, () => ({ text: 'The user told their locker code (see memory) and sent filler.' }));

    await rig.chat('long', `Remember: ${FACT}.`);
    for (let n = 1; n <= 6 && !seen.some((s) => s.kind === 'summary'); n++) await rig.chat('long', filler(n));

    const flush = seen.find((s) => s.kind === 'flush');
    const summary = seen.find((s) => s.kind === 'summary');
    const firstWithout = seen.find((s) => s.kind === 'chat' && !s.hasFact);
    expect(flush, 'a flush turn ran').toBeDefined();
    expect(summary).toBeDefined();
    expect(firstWithout, 'a chat request went out without the old turn').toBeDefined();
    // The flush saw the turn; the request that lacks it came after the fact was written.
    expect(flush!.hasFact).toBe(true);
    expect(flush!.index).toBeLessThan(summary!.index);
    expect(summary!.index).toBeLessThan(firstWithout!.index);
    expect(firstWithout!.memory).toContain('4711');
    // Every chat request before that one still held the fact word for word.
    expect(seen.filter((s) => s.kind === 'chat' && s.index < firstWithout!.index).every((s) => s.hasFact)).toBe(true);
    // The model reads the summary in the turns' place.
    expect(text(rig.model.requests[firstWithout!.index]!)).toContain('The user told their locker code');

    // History: the compaction first, holding the originals, then the turns it left.
    const history = await historyOf(rig, 'long', 100);
    expect(history[0]).toMatchObject({ type: 'compaction', content: 'The user told their locker code (see memory) and sent filler.' });
    expect(history[0]!.messages![0]).toMatchObject({ type: 'text', name: 'user', content: `Remember: ${FACT}.` });
    expect(history.filter((m) => m.type === 'compaction')).toHaveLength(1);
    expect(history.at(-1)).toMatchObject({ type: 'text', content: 'ok' });
    // A small limit counts the originals too: the newest entries only, no compaction to show.
    const short = await historyOf(rig, 'long', 2);
    expect(short.map((m) => m.type)).toEqual(['text', 'text']);
  });

  it('summarises again over the earlier summary as the chat goes on', async () => {
    rig = await startChatRig({ MODEL_CONTEXT_TOKENS: '600' });
    let summaries = 0;
    const seen = scripted(rig, () => ({ text: `Summary number ${++summaries}.` }));
    for (let n = 1; n <= 12 && summaries < 2; n++) await rig.chat('longer', filler(n));
    expect(summaries).toBe(2);
    const second = seen.filter((s) => s.kind === 'summary')[1]!;
    expect(text(rig.model.requests[second.index]!)).toContain('Summary number 1.');
    const history = await historyOf(rig, 'longer', 1000);
    // One compaction shown (the latest covers the earlier one), holding every message it replaced.
    expect(history.filter((m) => m.type === 'compaction').map((m) => m.content)).toEqual(['Summary number 2.']);
    const users = history.flatMap((m) => m.messages ?? [m]).filter((m) => m.name === 'user');
    expect(users.length).toBe(new Set(users.map((m) => m.content)).size);
    expect(users.length).toBeGreaterThanOrEqual(4);
  });

  it('answers without the old turns and stores no compaction when the model gives no summary', async () => {
    rig = await startChatRig({ MODEL_CONTEXT_TOKENS: '600' });
    const seen = scripted(rig, () => ({ httpError: { status: 400, message: 'no summaries today' } }));
    await rig.chat('nosum', `Remember: ${FACT}.`);
    let frames: Awaited<ReturnType<ChatRig['chat']>> = [];
    for (let n = 1; n <= 6 && !seen.some((s) => s.kind === 'summary'); n++) frames = await rig.chat('nosum', filler(n));
    expect(seen.some((s) => s.kind === 'summary')).toBe(true);
    expect(frames.map((f) => f.data)).toEqual([{ type: 'text', content: 'ok' }, { type: 'done' }]);
    const last = seen.at(-1)!;
    expect(last).toMatchObject({ kind: 'chat', hasFact: false });
    expect(last.memory).toContain('4711');
    const history = await historyOf(rig, 'nosum', 100);
    expect(history.some((m) => m.type === 'compaction')).toBe(false);
  });
});

describe('compaction in Telegram chats', () => {
  it("compacts a contact's chat without a memory flush (MEMORY.md untouched), and flushes the owner's", async () => {
    const owner = { id: 4242, first_name: 'Owner' };
    const telegram = await startTelegramRig({ MODEL_CONTEXT_TOKENS: '600', TELEGRAM_OWNER_ID: String(owner.id) });
    try {
      const memoryFile = path.join(telegram.agent.workspace, 'MEMORY.md');
      const memory = () => {
        try {
          return readFileSync(memoryFile, 'utf8');
        } catch {
          return undefined;
        }
      };
      const seen = scripted(telegram, () => ({ text: 'The sender gave a code and sent filler.' }));
      /** Says `message` as `user` and waits for the bot's answer. */
      const say = async (user: { id: number; first_name: string }, message: string) => {
        const answers = telegram.fake.textsTo(user.id).length;
        telegram.fake.userSays(user, message);
        await until(() => telegram.fake.textsTo(user.id).length > answers, 20_000);
      };
      /** Says the fact, then filler until the chat is compacted (a summary request). */
      const talkUntilCompacted = async (user: { id: number; first_name: string }) => {
        const from = seen.length;
        await say(user, `Remember: ${FACT}.`);
        for (let n = 1; n <= 8 && !seen.slice(from).some((s) => s.kind === 'summary'); n++) await say(user, filler(n));
        return seen.slice(from);
      };

      await say(alice, 'hi');
      expect(telegram.fake.textsTo(alice.id)).toEqual([PENDING_NOTICE]);
      expect((await telegram.json('PATCH', '/messenger/contacts/1001', { status: 'allowed' })).status).toBe(200);
      const before = memory();
      const contact = await talkUntilCompacted(alice);
      expect(contact.filter((s) => s.kind === 'summary')).toHaveLength(1);
      expect(contact.filter((s) => s.kind === 'flush')).toEqual([]);
      expect(memory()).toBe(before);
      const history = (await telegram.json<{ messages: Entry[] }>('GET', `/chat/${encodeURIComponent('telegram:1001')}/history?limit=100`)).body.messages;
      expect(history[0]).toMatchObject({ type: 'compaction', content: 'The sender gave a code and sent filler.' });

      // The owner's chat on the same bot: the flush runs before the summary and writes the fact.
      const owners = await talkUntilCompacted(owner);
      const flush = owners.find((s) => s.kind === 'flush');
      const summary = owners.find((s) => s.kind === 'summary');
      expect(flush?.hasFact).toBe(true);
      expect(flush!.index).toBeLessThan(summary!.index);
      expect(memory()).toContain('4711');
    } finally {
      await telegram.stop();
    }
  });
});
