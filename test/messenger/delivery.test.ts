/** Reply splitting (Telegram's 4096-character limit) and the messenger configuration. */
import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../server/agent/config.js';
import { splitMessage, TELEGRAM_TEXT_LIMIT } from '../../server/agent/messenger/delivery.js';

describe('splitMessage', () => {
  it('leaves short text alone (trimmed) and drops blank text', () => {
    expect(splitMessage('  hello \n')).toEqual(['hello']);
    expect(splitMessage(' \n\n ')).toEqual([]);
  });

  it('prefers paragraph, then line, then word boundaries', () => {
    expect(splitMessage('aaaa bbbb\n\ncccc dddd', 12)).toEqual(['aaaa bbbb', 'cccc dddd']);
    expect(splitMessage('aaaa bbbb\ncccc dddd', 12)).toEqual(['aaaa bbbb', 'cccc dddd']);
    expect(splitMessage('aaaa bbbb cccc dddd', 12)).toEqual(['aaaa bbbb', 'cccc dddd']);
  });

  it('cuts a word longer than the limit, never inside a surrogate pair', () => {
    expect(splitMessage('x'.repeat(25), 10)).toEqual(['x'.repeat(10), 'x'.repeat(10), 'x'.repeat(5)]);
    const emoji = '😀'.repeat(10); // 20 code units
    const pieces = splitMessage(emoji, 5);
    expect(pieces.join('')).toBe(emoji);
    for (const piece of pieces) {
      expect(piece.length).toBeLessThanOrEqual(5);
      expect(piece).toMatch(/^(😀)+$/u);
    }
  });

  it('every piece fits Telegram, nothing is lost', () => {
    const text = Array.from({ length: 300 }, (_, i) => `line ${i} ${'lorem ipsum '.repeat(i % 7)}`).join('\n');
    const pieces = splitMessage(text);
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT);
    expect(pieces.join('\n').replace(/\s+/g, ' ')).toBe(text.replace(/\s+/g, ' ').trim());
  });
});

describe('telegram configuration', () => {
  const base = { AGENT_SECRET: 'a-secret-of-sufficient-length' };
  it('defaults: no bot, api.telegram.org, groups off, 30 s polls', () => {
    expect(loadAgentConfig(base).telegram).toEqual({
      token: undefined,
      ownerId: undefined,
      apiRoot: 'https://api.telegram.org',
      groups: false,
      contactTools: [],
      pollTimeoutSeconds: 30,
      retryBaseMs: 1000,
      retryMaxMs: 60_000,
    });
  });

  it.each([
    ['TELEGRAM_BOT_TOKEN', 'not a token'],
    ['TELEGRAM_OWNER_ID', '@alice'],
    ['TELEGRAM_API_ROOT', 'ftp://example.com'],
    ['TELEGRAM_GROUPS', 'yes'],
    ['TELEGRAM_POLL_TIMEOUT', '90'],
  ])('refuses %s=%s', (name, value) => {
    expect(() => loadAgentConfig({ ...base, [name]: value })).toThrow(name);
  });
});
