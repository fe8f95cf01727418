/**
 * `search_history` over real HTTP with the scripted model: the model finds an old chat by words
 * (across chats, best match first, with a snippet), the index follows deletes and edits, and
 * hostile queries (FTS5 syntax: quotes, NEAR(, column filters, operators) never fail the tool.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ftsQuery } from '../../server/agent/chat/search.js';
import { lastUserText, toolResults } from '../support/scripted-model.js';
import { startChatRig, type ChatRig } from './helpers.js';

let rig: ChatRig;
beforeAll(async () => {
  rig = await startChatRig();
  // "search: <query>" makes the model call the tool; any other message gets "noted".
  rig.model.respond((request) => {
    const asked = lastUserText(request);
    if (!asked.startsWith('search: ')) return { text: 'noted' };
    if (toolResults(request).length) return { text: 'found' };
    return { toolCalls: [{ name: 'search_history', args: { query: asked.slice('search: '.length), limit: 5 } }] };
  });
});
afterAll(() => rig.stop());

type Hit = { chat_id: string; chat_title: string; role: string; at: string; snippet: string };

/** Runs the tool from a chat and returns what it gave the model. */
async function search(query: string): Promise<{ results: Hit[] }> {
  const before = rig.model.requests.length;
  await rig.chat('asking', `search: ${query}`);
  const request = rig.model.requests.slice(before).find((r) => toolResults(r).length);
  const content = toolResults(request!)[0]!.content;
  return JSON.parse(content) as { results: Hit[] };
}

describe('search_history', () => {
  it('finds an old chat by words, best match first, with the matching words marked', async () => {
    await rig.chat('trip', 'We fly to Lisbon on the 14th, flight TP1234 at 07:10');
    await rig.chat('food', 'I prefer vegetarian recipes, nothing with mushrooms');
    await rig.chat('misc', 'Lisbon is nice but the food there is a story for another day');

    const { results } = await search('Lisbon flight');
    expect(results[0]).toMatchObject({ chat_id: 'trip', chat_title: 'We fly to Lisbon on the 14th, flight TP1234 at 07:10', role: 'user' });
    expect(results[0]!.snippet).toContain('[Lisbon]');
    expect(results[0]!.snippet).toContain('[flight]');
    expect(Number.isNaN(Date.parse(results[0]!.at))).toBe(false);
    expect(results.map((r) => r.chat_id)).toContain('misc');
    // Prefix matches; the assistant's replies are searched too.
    expect((await search('vegetar')).results.map((r) => r.chat_id)).toEqual(['food']);
    expect((await search('noted')).results.some((r) => r.role === 'agent')).toBe(true);
  });

  it('follows the history: a deleted chat is no longer found', async () => {
    await rig.chat('secret', 'the alarm code is zebra9931');
    expect((await search('zebra9931')).results.map((r) => r.chat_id)).toContain('secret');
    expect((await rig.del('/chat/secret')).status).toBe(200);
    // Only the earlier search's own message mentions it now.
    expect((await search('zebra9931')).results.map((r) => [r.chat_id, r.role])).toEqual([['asking', 'user']]);
  });

  it.each([
    ['"', []],
    ['"Lisbon', ['Lisbon']],
    ['NEAR(Lisbon flight', ['NEAR', 'Lisbon', 'flight']],
    ['content:Lisbon OR *', ['content', 'Lisbon', 'OR']],
    ['Lisbon" AND NOT "x', ['Lisbon', 'AND', 'NOT', 'x']],
    [')))(((', []],
    ['^Lisbon -flight +x', ['Lisbon', 'flight', 'x']],
  ])('takes %j as plain words, never as FTS syntax', async (query, words) => {
    expect(ftsQuery(query)).toBe(words.length ? words.map((w) => `"${w}"*`).join(' OR ') : undefined);
    const { results } = await search(query);
    expect(Array.isArray(results)).toBe(true);
  });

  it('refuses a query longer than 500 characters as bad tool input, not a crash', async () => {
    const before = rig.model.requests.length;
    await rig.chat('asking', `search: ${'a'.repeat(600)}`);
    const request = rig.model.requests.slice(before).find((r) => toolResults(r).length);
    expect(toolResults(request!)[0]!.content).toMatch(/Invalid input for tool search_history/);
  });
});
