/**
 * Chat values the web client shares with the agent. Kept free of imports so the browser bundle
 * can take them without pulling in zod or any server code.
 */

/** Longest message, in UTF-16 code units (what `string.length` and zod's `max` count). */
export const MESSAGE_MAX_CHARS = 32_000;

/** `content` of the `error` event that ends a run stopped on request (stream and history). */
export const STOPPED = 'stopped';

/**
 * `content` of the `error` event that ends a run the agent had to abandon because it was stopped
 * (idle stop, eviction, shutdown) before the reply was finished (stream and history).
 */
export const INTERRUPTED = 'interrupted: the agent was stopped before this reply was finished; send your message again';
/** Longest chat title, in code points: automatic titles are cut to it, renames refused over it. */
export const CHAT_TITLE_MAX_CHARS = 80;

/**
 * Characters a title may not hold: control characters (line breaks, NUL, escapes) and the
 * bidirectional overrides and isolates, which could make a title read as something else.
 */
export const TITLE_FORBIDDEN = /[\p{Cc}\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

/** A chat's automatic title: its first user message on one line, cut to the bound. */
export function titleFrom(message: string): string {
  const line = message.replace(new RegExp(TITLE_FORBIDDEN.source, 'gu'), ' ').replace(/\s+/g, ' ').trim();
  const points = [...line];
  return points.length > CHAT_TITLE_MAX_CHARS ? `${points.slice(0, CHAT_TITLE_MAX_CHARS - 1).join('')}…` : line;
}
