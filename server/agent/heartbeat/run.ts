/**
 * One heartbeat: read `HEARTBEAT.md`; if it is missing or empty, stop (no model call). Otherwise
 * ask the model (HEARTBEAT_MODEL, else the chat's), with a light context of its own — the system
 * prompt with the memory files, the heartbeat file and the last few messages of the chat, never
 * the whole chat — whether anything needs attention. It asks the budget gate first: when the
 * day's model budget has no room, it does not run (the user is told once a budget day). A reply of `HEARTBEAT_OK` at its start or end with little
 * else (at most ACK_MAX_CHARS other characters) is dropped; anything else becomes one pending
 * message (`source: 'heartbeat'`) for the agent's most recently active chat.
 *
 * It never overlaps a user's run in that chat: it waits up to `waitMs` for an active run to end
 * (else it skips), and if the user starts a run while the heartbeat is thinking, the heartbeat is
 * abandoned (the user comes first; nothing is delivered).
 */
import { ownerTelegramIds } from '../messenger/contacts.js';
import { TELEGRAM_CHAT_PREFIX } from '../messenger/service.js';
import { readFile } from 'node:fs/promises';
import type { ChatModel } from '../model/chat-model.js';
import type { Logger } from '../../common/log.js';
import { runModelLoop, type ContextMessage } from '../chat/loop.js';
import { budgetNotice, type ProactiveBudgetGate } from '../proactive/budget.js';
import { buildSystemPrompt } from '../chat/prompt.js';
import type { AgentConfig } from '../config.js';
import { resolveWorkspacePath } from '../files/guard.js';
import type { PendingStore } from '../pending/store.js';
import type { AgentDb } from '../store.js';
import type { AgentToolSet } from '../tools/types.js';
import { sleep } from '../../common/timers.js';

export const HEARTBEAT_FILE = 'HEARTBEAT.md';
export const HEARTBEAT_OK = 'HEARTBEAT_OK';
/** Characters besides `HEARTBEAT_OK` that an acknowledgement may carry and still be dropped. */
export const ACK_MAX_CHARS = 300;
const FILE_MAX_CHARS = 16_000;
const POLL_MS = 100;

export type HeartbeatOutcome =
  | { kind: 'no-file' | 'empty' | 'no-model' | 'no-chat' | 'overlap' | 'aborted' | 'budget' }
  | { kind: 'busy'; chatId: string }
  | { kind: 'ok'; chatId: string }
  | { kind: 'alert'; chatId: string; content: string }
  | { kind: 'failed'; chatId: string; error: string };

export interface HeartbeatDeps {
  config: AgentConfig;
  log: Logger;
  db: AgentDb;
  pending: PendingStore;
  /** Whether a user's run is active in a chat (ChatRuntime.active). */
  activeRun(chatId: string): boolean;
  /** Subscribes to user runs starting (chat id); returns the unsubscribe function. */
  onUserRun(listener: (chatId: string) => void): () => void;
  model: ChatModel | null;
  tools: AgentToolSet;
  /** Whether the budget has room for a proactive turn (proactive/budget.ts). */
  gate: Pick<ProactiveBudgetGate, 'admit'>;
  /** The last `entries` history entries of a chat as context (ChatHistory.recent). */
  recent(chatId: string, entries: number): ContextMessage[];
  now?: () => Date;
}

/** History entries of the chat a heartbeat sees: enough to know what was said last, not the chat. */
export const HEARTBEAT_RECENT_ENTRIES = 6;
/** Each of those messages is cut to this: a long answer is not read again in full at every heartbeat. */
const RECENT_MAX_CHARS = 2_000;

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

/** True when the reply is an acknowledgement to drop: `HEARTBEAT_OK` at the start or end, little else. */
export function isHeartbeatOk(reply: string): boolean {
  // Markdown emphasis or code around the token, and trailing punctuation, do not count.
  const text = reply
    .trim()
    .replace(/^[*_`\s]+/, '')
    .replace(/[*_`.!\s]+$/, '');
  if (!text) return true;
  let rest: string;
  if (text.startsWith(HEARTBEAT_OK)) rest = text.slice(HEARTBEAT_OK.length);
  else if (text.endsWith(HEARTBEAT_OK)) rest = text.slice(0, -HEARTBEAT_OK.length);
  else return false;
  return rest.replace(/[*_`]/g, '').trim().length <= ACK_MAX_CHARS;
}

/** The file's text, or `undefined` when it is missing, refused, or holds only whitespace. */
export async function readHeartbeatFile(workspace: string): Promise<string | undefined> {
  try {
    const { absolute } = await resolveWorkspacePath(workspace, HEARTBEAT_FILE);
    const text = await readFile(absolute, 'utf8');
    if (!text.trim()) return '';
    return text.length > FILE_MAX_CHARS ? `${text.slice(0, FILE_MAX_CHARS)}\n…(truncated)` : text;
  } catch {
    return undefined;
  }
}

/**
 * The chat of the newest history entry: the owner's most recently active chat. A Telegram
 * contact's chat is never it (the heartbeat reads the owner's HEARTBEAT.md and may say what is in
 * it); the owner's own Telegram chat may be.
 */
export async function mostRecentChat(db: AgentDb, ownerTelegramChats: string[] = []): Promise<string | undefined> {
  const row = await db.chatMessage.findFirst({
    where: { OR: [{ NOT: { chatId: { startsWith: TELEGRAM_CHAT_PREFIX } } }, { chatId: { in: ownerTelegramChats } }] },
    orderBy: { id: 'desc' },
    select: { chatId: true },
  });
  return row?.chatId;
}

export function heartbeatPrompt(file: string, now: Date, recent: ContextMessage[] = []): string {
  const recap = recent.map((message) => `${message.role === 'user' ? 'User' : 'You'}: ${cut(message.content, RECENT_MAX_CHARS)}`).join('\n\n');
  return [
    `Heartbeat (${now.toISOString().slice(0, 16).replace('T', ' ')} UTC). This is an automatic check, not a message from the user.`,
    `Read ${HEARTBEAT_FILE} below and check whether anything in it needs the user's attention now. You may use the tools to look at the workspace; you cannot send files.`,
    `If nothing needs attention, reply exactly ${HEARTBEAT_OK} and nothing else. Otherwise reply with the short message the user should get (it is delivered to them as is), without ${HEARTBEAT_OK}.`,
    `## ${HEARTBEAT_FILE}\n${file.trim()}`,
    ...(recap ? [`## The last messages of the chat\n${recap}`] : []),
  ].join('\n\n');
}

export async function runHeartbeat(deps: HeartbeatDeps, signal: AbortSignal): Promise<HeartbeatOutcome> {
  const { config, log } = deps;
  const now = deps.now ?? (() => new Date());
  const file = await readHeartbeatFile(config.workspace);
  if (file === undefined) return { kind: 'no-file' };
  if (!file) return { kind: 'empty' };
  if (!deps.model) return { kind: 'no-model' };
  const owners = await ownerTelegramIds(deps.db, config.telegram.ownerId);
  const chatId = await mostRecentChat(
    deps.db,
    owners.map((id) => `${TELEGRAM_CHAT_PREFIX}${id}`),
  );
  if (!chatId) return { kind: 'no-chat' };
  const admission = await deps.gate.admit('heartbeat');
  if (!admission.allowed) {
    if (admission.tellUser)
      await deps.pending.add({ chatId, source: 'heartbeat', content: budgetNotice('The heartbeat check', admission.resetsAt), now: now() });
    return { kind: 'budget' };
  }

  // Wait (bounded) for the user's run in that chat to end; skip if it does not.
  const waitUntil = Date.now() + config.heartbeat.waitMs;
  while (deps.activeRun(chatId)) {
    if (signal.aborted) return { kind: 'aborted' };
    if (Date.now() >= waitUntil) return { kind: 'busy', chatId };
    await sleep(POLL_MS, signal);
  }

  const controller = new AbortController();
  const abort = () => controller.abort(signal.reason);
  signal.addEventListener('abort', abort, { once: true });
  let userCameFirst = false;
  const yieldToUser = () => {
    userCameFirst = true;
    controller.abort();
  };
  // The user comes first: a run that starts in the chat meanwhile abandons the heartbeat.
  const unsubscribe = deps.onUserRun((started) => {
    if (started === chatId) yieldToUser();
  });
  if (deps.activeRun(chatId)) yieldToUser();
  const timeout = setTimeout(() => controller.abort(), config.chat.runTimeoutMs);
  timeout.unref();
  try {
    const result = await runModelLoop({
      model: deps.model,
      system: await buildSystemPrompt({ name: config.name, workspace: config.workspace, toolNames: Object.keys(deps.tools), now: now() }),
      messages: [{ role: 'user', content: heartbeatPrompt(file, now(), deps.recent(chatId, HEARTBEAT_RECENT_ENTRIES)) }],
      tools: deps.tools,
      signal: controller.signal,
      source: 'heartbeat',
      maxSteps: config.chat.maxSteps,
      maxRetries: config.chat.modelRetries,
      onEvent: () => undefined,
    });
    if (result.status === 'aborted') {
      if (userCameFirst) return { kind: 'busy', chatId };
      if (signal.aborted) return { kind: 'aborted' };
      return { kind: 'failed', chatId, error: 'timed out' };
    }
    if (result.status === 'failed') {
      log.warn({ chatId, error: result.error }, 'heartbeat run failed');
      return { kind: 'failed', chatId, error: result.error ?? 'Model error' };
    }
    if (isHeartbeatOk(result.text)) return { kind: 'ok', chatId };
    const content = result.text.trim();
    await deps.pending.add({ chatId, content, source: 'heartbeat', now: now() });
    log.info({ chatId }, 'heartbeat alert');
    return { kind: 'alert', chatId, content };
  } finally {
    unsubscribe();
    clearTimeout(timeout);
    signal.removeEventListener('abort', abort);
  }
}
