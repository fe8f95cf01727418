/**
 * The chat runtime: one active run per chat, runs independent of connections, history written
 * as it happens. `send` and `stream` are what the `chat` subscriptions yield; everything that
 * streams chat events (REST SSE, tRPC, later the messenger) reads from them.
 *
 * A run: cancel the chat's previous run (and wait for it to settle), save the user message,
 * then in the background build the prompt (compacting the chat first when it nears the model's
 * window, compaction.ts), run the model loop with the workspace tools under a timeout, save each
 * completed entry, and end with `done` once history is written.
 *
 * `startRun` + `stream` is the same as `send`, split so that the message can travel in a POST
 * body (a mutation) while the reply is followed by a subscription that carries only ids.
 * `stop` ends a run on request: the abort reaches the model call and the tools (exec kills its
 * process group), and the run ends with `error` "stopped" in the stream and in history.
 */
import { tracked } from '@trpc/server';
import { AppError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { AgentMetrics, RunOutcome } from '../metrics.js';
import type { AgentConfig } from '../config.js';
import { workspaceTools } from '../tools/index.js';
import type { AgentToolSet } from '../tools/types.js';
import type { ChatHistory, ChatRow, StoredEntry } from './history.js';
import { compact, contextMessages, contextWindowOf, turnsToCompact } from './compaction.js';
import { runModelLoop } from './loop.js';
import type { ChatModel } from '../model/chat-model.js';
import { configuredModel, NO_MODEL_REPLY } from '../model/configured.js';
import { buildSystemPrompt } from './prompt.js';
import { parseEventId, Run, RunRegistry, type ContactAudience, type ProactiveTurn, type StreamItem } from './runs.js';
import {
  INTERRUPTED,
  STOPPED,
  type ChatEvent,
  type ChatMessageInput,
  type ChatStartInput,
  type ChatStreamInput,
  type ChatSummary,
  type RunStarted,
} from '@contracts/agent/chat.js';

class RunCancelled extends Error {
  override name = 'RunCancelled';
}
class RunTimedOut extends Error {
  override name = 'RunTimedOut';
}
class RunStopped extends Error {
  override name = 'RunStopped';
}
/** The agent is stopping and the run did not end within the grace period. */
class RunInterrupted extends Error {
  override name = 'RunInterrupted';
}

export interface ChatRuntimeDeps {
  config: AgentConfig;
  log: Logger;
  history: ChatHistory;
  /** Overrides the model `MODEL` selects (tests, embedding). */
  model?: ChatModel | null;
  /** Overrides the tool set (subagents compose their own). */
  tools?: AgentToolSet;
  /** Tools added per run that need the chat (e.g. `spawn_subagent`, depth 0 only). */
  runTools?: (chatId: string) => AgentToolSet | Promise<AgentToolSet>;
  /** Called when a user's run becomes active in a chat (the heartbeat gives way to it). */
  onRunStart?: (chatId: string) => void;
  /** Runs by outcome and tool calls (GET /metrics). */
  metrics?: AgentMetrics;
}

export interface StartOptions {
  contact?: ContactAudience;
  replaceFrom?: string;
  proactive?: ProactiveTurn;
}

/** The gauge of open streams, as the runtime sees it. */
export interface OpenStreams {
  inc(): void;
  dec(): void;
}

/** What ended an aborted run, for chat_runs_total. */
function abortOutcome(reason: unknown): RunOutcome {
  if (reason instanceof RunStopped) return 'stopped';
  if (reason instanceof RunInterrupted) return 'interrupted';
  if (reason instanceof RunTimedOut) return 'timed_out';
  if (reason instanceof RunCancelled) return 'superseded';
  return 'error';
}

export class ChatRuntime {
  private readonly registry: RunRegistry;
  private readonly model: ChatModel | null;
  private readonly tools: AgentToolSet;
  /** The context window compaction keeps chats within (tokens). */
  private readonly window: number;
  /** Per-chat serialisation of run starts and deletes. */
  private readonly locks = new Map<string, Promise<unknown>>();
  private closed = false;

  constructor(private readonly deps: ChatRuntimeDeps) {
    const chat = deps.config.chat;
    this.registry = new RunRegistry(chat.streamGraceMs);
    this.model =
      deps.model !== undefined ? deps.model : chat.model ? configuredModel(chat.model, { apiKey: chat.modelApiKey, egress: deps.config.egress }) : null;
    this.tools = deps.tools ?? workspaceTools(deps.config);
    this.window = contextWindowOf(chat.model, chat.contextTokens);
  }

  private get keepaliveMs(): number {
    return this.deps.config.chat.keepaliveMs;
  }

  private withChatLock<T>(chatId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(chatId) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(chatId, settled);
    void settled.then(() => {
      if (this.locks.get(chatId) === settled) this.locks.delete(chatId);
    });
    return next;
  }

  /**
   * Starts a run for the chat (cancelling the active one first) and returns it; `contact`: a
   * contact's run (`send`). With `replaceFrom` (a user message's id) the message replaces that
   * one and everything after it instead (docs/api.md, "Regenerate and edit"): refused while a
   * reply runs (409) and for an id that is not a user message of this chat (404). A `proactive`
   * turn (a scheduled task) never cancels anyone: it is refused (409 RUN_ACTIVE) while a reply
   * runs in the chat, and its calls go out under its own source and model.
   */
  start(chatId: string, message: string, opts: StartOptions = {}): Promise<Run> {
    const { contact, replaceFrom, proactive } = opts;
    return this.withChatLock(chatId, async () => {
      // Retry-After: the agent is back (restarted, or started again on its next use) within seconds.
      if (this.closed) throw new AppError(503, 'SHUTTING_DOWN', 'The agent is shutting down', { 'Retry-After': '5' });
      const previous = this.registry.activeRun(chatId);
      if ((replaceFrom !== undefined || proactive) && previous && !previous.ended)
        throw new AppError(409, 'RUN_ACTIVE', 'A reply is running in this chat: stop it first');
      if (previous) {
        previous.cancel(new RunCancelled('superseded by a new message'));
        await previous.finished;
      }
      const run = new Run(chatId, message, contact, proactive);
      if (replaceFrom === undefined) await this.deps.history.saveUserMessage(chatId, message, run.id);
      else if (!(await this.deps.history.replaceFrom(chatId, replaceFrom, message, run.id)))
        throw new AppError(404, 'MESSAGE_NOT_FOUND', 'No such user message in this chat');
      this.registry.add(run);
      if (!proactive) this.deps.onRunStart?.(chatId);
      void this.execute(run);
      return run;
    });
  }

  /** Resolves once no run is active in the chat (at once when none is). */
  async settled(chatId: string): Promise<void> {
    const run = this.registry.activeRun(chatId);
    if (run && !run.ended) await run.finished;
  }

  private async execute(run: Run): Promise<void> {
    const { config, history, log } = this.deps;
    const chat = config.chat;
    // Writes land in queue order; `done` waits for the last one.
    let writes: Promise<void> = Promise.resolve();
    const persist = (entry: StoredEntry) => {
      writes = history.saveEntry(run.chatId, run.id, entry).catch((error: unknown) => log.error({ err: error, chatId: run.chatId }, 'history write failed'));
    };
    const emit = (event: ChatEvent) => run.push(event);
    const timer = setTimeout(() => run.cancel(new RunTimedOut()), chat.runTimeoutMs);
    timer.unref();
    const model = run.proactive?.model ?? this.model;
    const tools = run.contact ? this.contactTools() : this.deps.runTools ? { ...this.tools, ...(await this.deps.runTools(run.chatId)) } : this.tools;
    let outcome: RunOutcome = 'completed';
    try {
      if (!model) {
        emit({ type: 'text', content: NO_MODEL_REPLY });
        persist({ type: 'text', content: NO_MODEL_REPLY });
      } else {
        const source = run.proactive?.source ?? 'chat';
        const system = await buildSystemPrompt({ name: config.name, workspace: config.workspace, toolNames: Object.keys(tools), contact: run.contact });
        let context = history.context(run.chatId);
        const covered = turnsToCompact(system, context, this.window);
        if (covered.length) {
          context = await compact({
            chatId: run.chatId,
            runId: run.id,
            model,
            system,
            context,
            covered,
            // The owner's tools, not the contact's: the flush is the runtime's turn (and skipped for contacts).
            tools: this.tools,
            flush: !run.contact,
            source,
            maxSteps: chat.maxSteps,
            maxRetries: chat.modelRetries,
            signal: run.signal,
            history,
            log,
          });
        }
        const result = await runModelLoop({
          model,
          system,
          messages: contextMessages(context),
          tools,
          signal: run.signal,
          source,
          maxSteps: chat.maxSteps,
          maxRetries: chat.modelRetries,
          onEvent: emit,
          onEntry: persist,
          onToolResult: this.deps.metrics?.toolCalled,
        });
        if (result.status === 'aborted') {
          const reason: unknown = run.signal.reason;
          outcome = abortOutcome(reason);
          if (reason instanceof RunStopped || reason instanceof RunInterrupted) {
            // After the cut text the loop has already queued, so history reads as the stream did.
            const content = reason instanceof RunStopped ? STOPPED : INTERRUPTED;
            emit({ type: 'error', content });
            persist({ type: 'error', content });
          } else if (reason instanceof RunTimedOut) emit({ type: 'error', content: `The run timed out after ${chat.runTimeoutMs / 1000} s` });
          else if (!(reason instanceof RunCancelled)) emit({ type: 'error', content: 'The run was stopped' });
        }
        if (result.status === 'failed') {
          outcome = 'error';
          log.warn({ chatId: run.chatId, runId: run.id, error: result.error }, 'chat run failed');
        }
      }
    } catch (error) {
      outcome = 'error';
      log.error({ err: error, chatId: run.chatId }, 'chat run crashed');
      emit({ type: 'error', content: 'Internal error during the run' });
    } finally {
      clearTimeout(timer);
      await writes;
      this.deps.metrics?.runEnded(outcome);
      emit({ type: 'done' });
    }
  }

  /**
   * A contact's runs get only the tools TELEGRAM_CONTACT_TOOLS names (none by default), never
   * `spawn_subagent` (subagents work with the owner's tools).
   */
  private contactTools(): AgentToolSet {
    const allowed = new Set<string>(this.deps.config.telegram.contactTools);
    return Object.fromEntries(Object.entries(this.tools).filter(([name]) => allowed.has(name)));
  }

  /**
   * `POST /chat`: a new run's events; with `lastEventId` (a reconnect) it resumes, never restarts.
   * `open` counts the stream while it lasts (sse_streams_open; a Telegram delivery passes none).
   * `contact`: the message comes from a Telegram contact who is not the owner.
   */
  async *send(input: ChatMessageInput, signal: AbortSignal, open?: OpenStreams, contact?: ContactAudience): AsyncGenerator<StreamItem> {
    open?.inc();
    try {
      if (input.lastEventId !== undefined) {
        const resumed = this.resume(input.chat_id, input.lastEventId);
        if (resumed) yield* resumed.run.follow(resumed.seq, signal, this.keepaliveMs);
        else yield { type: 'done' };
        return;
      }
      let run: Run;
      try {
        run = await this.start(input.chat_id, input.message, { contact });
      } catch (error) {
        // The stream has begun (headers are out): report in-band, as a run failure would be.
        this.deps.log.error({ err: error, chatId: input.chat_id }, 'could not start a chat run');
        yield { type: 'error', content: this.closed ? 'The agent is shutting down' : 'Could not start the run' };
        yield { type: 'done' };
        return;
      }
      yield* run.follow(0, signal, this.keepaliveMs);
    } finally {
      open?.dec();
    }
  }

  /**
   * `chat.send` for a message that replaces another (`replace_from`): the run starts before the
   * stream does, so that a refusal (404, 409) is the answer itself (an HTTP status over REST),
   * not an event in a stream that has begun.
   */
  async sendReplacing(input: ChatMessageInput & { replace_from: string }, signal: AbortSignal, open?: OpenStreams): Promise<AsyncGenerator<StreamItem>> {
    const run = await this.start(input.chat_id, input.message, { replaceFrom: input.replace_from });
    const keepaliveMs = this.keepaliveMs;
    open?.inc();
    return (async function* () {
      try {
        yield* run.follow(0, signal, keepaliveMs);
      } finally {
        open?.dec();
      }
    })();
  }

  /** `chat.start`: a new run, whose events `stream` follows from `last_event_id`. */
  async startRun(input: ChatStartInput): Promise<RunStarted> {
    const run = await this.start(input.chat_id, input.message, { replaceFrom: input.replace_from });
    return { chat_id: input.chat_id, run_id: run.id, last_event_id: run.eventId(0) };
  }

  /**
   * `POST /chat/{chat_id}/stop`: ends the active run and resolves once its `done` is buffered
   * and its history written. 409 when no run is active (a second stop, or a run that already
   * ended), 404 for a chat with neither a run nor history.
   */
  stop(chatId: string): Promise<void> {
    return this.withChatLock(chatId, async () => {
      const run = this.registry.activeRun(chatId);
      if (!run || run.ended) {
        if (!this.deps.history.has(chatId)) throw new AppError(404, 'CHAT_NOT_FOUND', 'No such chat');
        throw new AppError(409, 'RUN_NOT_ACTIVE', 'No reply is running in this chat');
      }
      run.cancel(new RunStopped('stopped on request'));
      await run.finished;
    });
  }

  /** `GET /chat/{chat_id}/stream`: `stream_meta`, the buffer from the start, live events, `done`. */
  async *stream(input: ChatStreamInput, signal: AbortSignal, open?: OpenStreams): AsyncGenerator<StreamItem> {
    open?.inc();
    try {
      const resumed = this.resume(input.chat_id, input.lastEventId);
      if (resumed) {
        yield* resumed.run.follow(resumed.seq, signal, this.keepaliveMs);
        return;
      }
      const run = this.registry.activeRun(input.chat_id);
      if (!run) {
        yield { type: 'done' };
        return;
      }
      yield tracked<ChatEvent>(run.eventId(0), { type: 'stream_meta', user_message: run.userMessage });
      yield* run.follow(0, signal, this.keepaliveMs);
    } finally {
      open?.dec();
    }
  }

  private resume(chatId: string, lastEventId: string | undefined): { run: Run; seq: number } | undefined {
    const parsed = parseEventId(lastEventId);
    const run = parsed && this.registry.find(chatId, parsed.runId);
    return run && parsed ? { run, seq: parsed.seq } : undefined;
  }

  active(chatId: string): { active: boolean; user_message: string } {
    const run = this.registry.activeRun(chatId);
    return run && !run.ended ? { active: true, user_message: run.userMessage } : { active: false, user_message: '' };
  }

  /** `GET /chats`: the list, each with whether a reply is running in it now. */
  chats(limit: number): ChatSummary[] {
    return this.deps.history.chats(limit).map((row) => this.summary(row));
  }

  /** `PATCH /chats/{chat_id}`: 404 for a chat that is not in the list. */
  async rename(chatId: string, title: string): Promise<ChatSummary> {
    const row = await this.deps.history.rename(chatId, title);
    if (!row) throw new AppError(404, 'CHAT_NOT_FOUND', 'No such chat');
    return this.summary(row);
  }

  private summary(row: ChatRow): ChatSummary {
    return {
      chat_id: row.chatId,
      title: row.title,
      created_at: new Date(row.createdAt).toISOString(),
      updated_at: new Date(row.updatedAt).toISOString(),
      active: this.active(row.chatId).active,
    };
  }

  history(chatId: string, limit: number): ChatEvent[] {
    return this.deps.history.read(chatId, limit);
  }

  /** Empties the chat's history; an active run is cancelled first so that nothing lands after. */
  delete(chatId: string): Promise<number> {
    return this.withChatLock(chatId, async () => {
      const run = this.registry.activeRun(chatId);
      if (run) {
        run.cancel(new RunCancelled('chat deleted'));
        await run.finished;
      }
      return this.deps.history.delete(chatId);
    });
  }

  /** Runs not yet ended (the agent is busy while there are any). */
  running(): number {
    return this.registry.all().filter((run) => !run.ended).length;
  }

  /**
   * No new runs from now on; resolves when the running ones have ended or after `graceMs`,
   * whichever comes first (what is left is interrupted by `close`).
   */
  async drain(graceMs: number): Promise<void> {
    this.closed = true;
    const runs = this.registry.all();
    if (runs.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(runs.map((run) => run.finished)), new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }

  /**
   * Interrupts every run still going: each ends with an `error` saying so, in its stream and in
   * history (never a silently cut answer), then `done`.
   */
  async close(): Promise<void> {
    this.closed = true;
    const runs = this.registry.all();
    for (const run of runs) run.cancel(new RunInterrupted('agent stopping'));
    await Promise.all(runs.map((run) => run.finished));
    this.registry.clear();
  }
}
