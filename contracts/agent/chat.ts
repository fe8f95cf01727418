/** Wire shapes of the chat API (spec: "Chat event"), shared by tRPC, the bridge and OpenAPI. */
import { z } from 'zod';
import { CHAT_TITLE_MAX_CHARS, MESSAGE_MAX_CHARS, TITLE_FORBIDDEN } from './chat-limits.js';

export { INTERRUPTED, MESSAGE_MAX_CHARS, STOPPED } from './chat-limits.js';

/** Bounded length and charset: chat ids appear in paths, logs and the database. */
export const ChatId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[\w.:@-]+$/, 'chat_id may hold letters, digits and _ . : @ -');

/** Messages are bounded (32,000 characters) and must hold something besides whitespace. */
export const ChatMessageText = z.string().max(MESSAGE_MAX_CHARS).regex(/\S/, 'message must not be empty or blank');

/**
 * `lastEventId`: the id of the last event a client received (`id:` lines / tRPC `tracked` ids).
 * The tRPC SSE transport fills it from `Last-Event-ID` on reconnect; the REST bridge does the
 * same for `GET /chat/{chat_id}/stream`.
 */
export const LastEventId = z.string().max(200).optional();

/**
 * A user message's id in history (`message_id`): the id of the run it started (`run_id` of
 * `chat.start`), so a client knows it for the message it just sent as well as for history.
 */
export const MessageId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[\w-]+$/, 'message id may hold letters, digits, _ and -');

/**
 * `chat.start`: the message travels in a POST body; the reply is followed with `chat.stream`.
 * `replace_from` (a user message's `message_id`): a clear replacement, not a branch. That user
 * message and everything after it are deleted and this message takes its place, in one
 * transaction, then the run starts (regenerate: the same text; edit and resend: a new one).
 * Refused with 409 `RUN_ACTIVE` while a reply runs in the chat, and 404 `MESSAGE_NOT_FOUND` for
 * an id that is not a user message of this chat (another chat's, or one already replaced).
 */
export const ChatStartInput = z.object({
  message: ChatMessageText,
  chat_id: ChatId,
  replace_from: MessageId.optional(),
});
export type ChatStartInput = z.infer<typeof ChatStartInput>;

export const ChatMessageInput = ChatStartInput.extend({ lastEventId: LastEventId });
export type ChatMessageInput = z.infer<typeof ChatMessageInput>;

/**
 * A started run. `last_event_id` (`<run_id>-0`) given to `chat.stream` as `lastEventId` (or to
 * `GET /chat/{chat_id}/stream` as `Last-Event-ID`) follows this run from its first event, even
 * when it has already ended (for the stream grace period).
 */
export const RunStarted = z.object({ chat_id: ChatId, run_id: z.string(), last_event_id: z.string() });
export type RunStarted = z.infer<typeof RunStarted>;

export const ChatStreamInput = z.object({ chat_id: ChatId, lastEventId: LastEventId });
export type ChatStreamInput = z.infer<typeof ChatStreamInput>;

export const ChatIdInput = z.object({ chat_id: ChatId });

/** docs/api.md, "Bounds": 1..1000, above clamped, below or non-integer → 400. */
export const HISTORY_LIMIT_DEFAULT = 50;
export const HISTORY_LIMIT_MAX = 1000;
export const HistoryInput = z.object({
  chat_id: ChatId,
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .default(HISTORY_LIMIT_DEFAULT)
    .transform((n) => Math.min(n, HISTORY_LIMIT_MAX)),
});

const TextEvent = z.object({
  type: z.literal('text'),
  content: z.string(),
  name: z.string().optional(),
  /** History only: assistant text that a cancelled, failed or timed-out run cut short. */
  cut: z.literal(true).optional(),
  /** History only: a user message's id (`MessageId`), for `replace_from`. */
  message_id: z.string().optional(),
});
const ToolUseEvent = z.object({ type: z.literal('tool_use'), name: z.string(), input: z.string() });
const FileEvent = z.object({ type: z.literal('file'), path: z.string(), caption: z.string().optional() });
const ErrorEvent = z.object({ type: z.literal('error'), content: z.string() });

/** A stored history entry, as a compaction holds the originals it summarises. */
export const StoredChatEvent = z.discriminatedUnion('type', [TextEvent, ToolUseEvent, FileEvent, ErrorEvent]);
export type StoredChatEvent = z.infer<typeof StoredChatEvent>;

/**
 * History only: older turns the model summarised when the chat neared its context window
 * (docs/agent.md, "Long chats"). `content` is the summary the model now reads in their place;
 * `messages` are the originals, still stored, as far as the history's `limit` reaches.
 */
export const CompactionEvent = z.object({ type: z.literal('compaction'), content: z.string(), messages: z.array(StoredChatEvent) });

export const ChatEvent = z.discriminatedUnion('type', [
  TextEvent,
  ToolUseEvent,
  FileEvent,
  ErrorEvent,
  CompactionEvent,
  z.object({ type: z.literal('keepalive') }),
  z.object({ type: z.literal('stream_meta'), user_message: z.string() }),
  z.object({ type: z.literal('done') }),
  /**
   * The account service is shutting down (SIGTERM): the last event of a relayed stream, which
   * then ends without `done`. The run goes on; the client follows it again with its last event id.
   */
  z.object({ type: z.literal('reconnect') }),
]);
export type ChatEvent = z.infer<typeof ChatEvent>;

export const RECONNECT: ChatEvent = { type: 'reconnect' };

export const ActiveRun = z.object({ active: z.boolean(), user_message: z.string() });
export const ChatHistory = z.object({ messages: z.array(ChatEvent) });
export const ChatDeleted = z.object({ status: z.literal('ok'), deleted: z.number().int() });

/** `GET /chats`: newest activity first; `limit` 1..1000 (default 100), above clamped. */
export const ChatsQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .default(100)
    .transform((n) => Math.min(n, 1000)),
});

/** A title as a person sets it: one line of 1..80 characters, no control or direction-override characters. */
export const ChatTitle = z
  .string()
  .trim()
  .min(1, 'title must not be empty')
  .refine((title) => [...title].length <= CHAT_TITLE_MAX_CHARS, `title may hold at most ${CHAT_TITLE_MAX_CHARS} characters`)
  .refine((title) => !TITLE_FORBIDDEN.test(title), 'title may not hold control or direction-override characters');

export const ChatRenameInput = z.object({ chat_id: ChatId, title: ChatTitle });
export type ChatRenameInput = z.infer<typeof ChatRenameInput>;

export const ChatSummary = z.object({
  chat_id: z.string(),
  title: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  /** A reply is running in this chat now. */
  active: z.boolean(),
});
export type ChatSummary = z.infer<typeof ChatSummary>;
export const ChatList = z.object({ chats: z.array(ChatSummary) });
