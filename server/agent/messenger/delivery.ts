/**
 * Getting a chat run's events to a Telegram chat: text gathered and sent as plain-text messages
 * split at Telegram's 4096-character limit (on paragraph, then line, then word boundaries),
 * `file` events as documents, `error` events as a short notice, and a typing indicator
 * refreshed while the run is alive.
 *
 * Replies go out as plain text (no `parse_mode`): whatever the model writes, Telegram accepts
 * it as is, and nothing can be misread as markup.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { isTrackedEnvelope } from '@trpc/server';
import { InputFile, type Api } from 'grammy';
import type { Logger } from '../../common/log.js';
import type { ChatEvent } from '@contracts/agent/chat.js';
import { resolveWorkspacePath } from '../files/guard.js';
import { describe, grammySignal } from './bot.js';

export const TELEGRAM_TEXT_LIMIT = 4096;
export const TELEGRAM_CAPTION_LIMIT = 1024;
/** Telegram shows "typing…" for about 5 s per action. */
export const TYPING_REFRESH_MS = 4_000;
/** Bot API upload limit for documents. */
const DOCUMENT_MAX_BYTES = 50 * 1024 * 1024;

/** Cuts at `max` without splitting a surrogate pair. */
function safeCut(text: string, max: number): number {
  const code = text.charCodeAt(max - 1);
  return code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
}

/**
 * Splits text into pieces of at most `limit` UTF-16 code units (what Telegram counts), cutting
 * at the last blank line, else line break, else space that fits; a word longer than the limit
 * is cut hard. Whitespace at the cuts is dropped; blank pieces are never produced.
 */
export function splitMessage(text: string, limit = TELEGRAM_TEXT_LIMIT): string[] {
  const pieces: string[] = [];
  let rest = text.trim();
  while (rest.length > limit) {
    const window = rest.slice(0, limit + 1);
    let cut = -1;
    for (const separator of ['\n\n', '\n', ' ']) {
      const at = window.lastIndexOf(separator);
      if (at > 0) {
        cut = at;
        break;
      }
    }
    if (cut <= 0) cut = safeCut(rest, limit);
    const piece = rest.slice(0, cut).trimEnd();
    if (piece) pieces.push(piece);
    rest = rest.slice(cut).trimStart();
  }
  if (rest) pieces.push(rest);
  return pieces;
}

export async function sendText(api: Api, chatId: number, text: string, signal?: AbortSignal): Promise<void> {
  for (const piece of splitMessage(text)) {
    await api.sendMessage(chatId, piece, { link_preview_options: { is_disabled: true } }, grammySignal(signal));
  }
}

/** A workspace file as a document; the caption is cut to Telegram's caption limit. */
export async function sendWorkspaceFile(
  api: Api,
  workspace: string,
  chatId: number,
  relPath: string,
  caption: string | undefined,
  signal?: AbortSignal,
): Promise<void> {
  const { absolute } = await resolveWorkspacePath(workspace, relPath);
  const info = await stat(absolute);
  if (!info.isFile()) throw new Error(`not a file: ${relPath}`);
  if (info.size > DOCUMENT_MAX_BYTES) {
    await sendText(api, chatId, `The file ${relPath} is too large to send here (over 50 MB).`, signal);
    return;
  }
  const text = caption?.trim();
  await api.sendDocument(
    chatId,
    new InputFile(absolute, path.basename(absolute)),
    text ? { caption: splitMessage(text, TELEGRAM_CAPTION_LIMIT)[0] } : {},
    grammySignal(signal),
  );
}

/** Sends `typing` now and every TYPING_REFRESH_MS until the returned stop function is called. */
export function startTyping(api: Api, chatId: number, log: Logger, refreshMs = TYPING_REFRESH_MS): () => void {
  let stopped = false;
  const send = () => {
    if (stopped) return;
    api.sendChatAction(chatId, 'typing').catch((error: unknown) => log.debug({ reason: describe(error), chatId }, 'telegram: typing indicator failed'));
  };
  send();
  const timer = setInterval(send, refreshMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

export interface DeliverRunOptions {
  api: Api;
  chatId: number;
  workspace: string;
  log: Logger;
  signal?: AbortSignal;
  typingRefreshMs?: number;
}

/**
 * Plays a run's events into the Telegram chat. Text is sent when something else comes between
 * (a tool call, a file, an error) and at `done`, so the order of the conversation is kept.
 * A failed send is logged and the rest still goes out.
 */
export async function deliverRun(events: AsyncIterable<unknown>, opts: DeliverRunOptions): Promise<void> {
  const { api, chatId, log, signal } = opts;
  const stopTyping = startTyping(api, chatId, log, opts.typingRefreshMs);
  let text = '';
  const flush = async () => {
    const pending = text;
    text = '';
    if (!pending.trim()) return;
    await sendText(api, chatId, pending, signal).catch((error: unknown) => log.warn({ reason: describe(error), chatId }, 'telegram: could not send a reply'));
  };
  try {
    for await (const item of events) {
      const event = unwrap(item);
      if (!event) continue;
      if (event.type === 'text') {
        text += event.content;
      } else if (event.type === 'file') {
        await flush();
        await sendWorkspaceFile(api, opts.workspace, chatId, event.path, event.caption, signal).catch(async (error: unknown) => {
          log.warn({ reason: describe(error), chatId, path: event.path }, 'telegram: could not send a file');
          await sendText(api, chatId, `(Could not send the file ${event.path}.)`, signal).catch(() => undefined);
        });
      } else if (event.type === 'error') {
        await flush();
        text = `⚠️ ${event.content}`;
        await flush();
      } else if (event.type === 'tool_use') {
        await flush();
      } else if (event.type === 'done') {
        break;
      }
    }
    await flush();
  } finally {
    stopTyping();
  }
}

/** Chat streams yield events, or `tracked` envelopes `{id, data}` holding them. */
function unwrap(item: unknown): ChatEvent | undefined {
  if (isTrackedEnvelope<ChatEvent>(item)) return item[1];
  return typeof item === 'object' && item !== null && 'type' in item ? (item as ChatEvent) : undefined;
}
