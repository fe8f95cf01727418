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
