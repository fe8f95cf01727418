/**
 * The chat page's connection to the agent: following a reply (`agent.chat.stream`) and resuming it.
 *
 * When the stream drops (the service or the agent went away), or goes silent with its connection
 * open (a hung agent or service: no byte, not even the agent's keepalive, for STALL_MS), the
 * connection line says so and the page retries with backoff (1, 2, 4, then every 5 s); once the
 * service answers again the stream is resumed after the last event seen (`lastEventId`). If the
 * run did not survive (the agent restarted) and history does not hold its end either, the reply
 * is marked as cut off. Whatever fails for want of a connection (a send, opening a chat, clearing
 * it) calls `reconnect`: nothing the user does in the meantime cancels the retries without arming
 * new ones, so the page is back by itself within one backoff step of the service.
 */
import { TRPCClientError } from '@trpc/client';
import { api, errorCode, live } from '../../api.js';
import type { Transcript } from '../../agent/transcript.js';
import type { ChatEvent } from '../../agent/types.js';
import { h } from '../../dom.js';

type Item = ChatEvent | { id: string; data: ChatEvent };
const isTracked = (item: Item): item is { id: string; data: ChatEvent } => 'data' in item && 'id' in item;

/**
 * Waits between reconnection attempts (ms); the last one repeats. At most 5 s: a page is back
 * within 10 s of the service (issue 37), one probe per tab every 5 s while it is away.
 */
const BACKOFF_MS = [1_000, 2_000, 4_000, 5_000];
/**
 * Silence (ms) after which a followed stream counts as dropped although its connection is open
 * (a stalled agent or service sends nothing and closes nothing). The agent sends a `keepalive`
 * after each AGENT_KEEPALIVE_INTERVAL of quiet (2 s by default), so a live stream is never this
 * quiet; the page then says so well within 5 s of the last byte.
 */
const STALL_MS = 4_000;

/** A failure that means "not reachable right now" (retry), rather than "refused" (say why). */
export function isTransient(error: unknown): boolean {
  if (!(error instanceof TRPCClientError)) return true;
  const status = (error.data as { httpStatus?: number } | undefined)?.httpStatus;
  return status === undefined || status >= 500 || status === 408;
}

export interface ConnectionOptions {
  transcript: Transcript;
  /** The open chat: a late answer for another one changes nothing. */
  current(): string;
  /** Whether the page is gone. */
  left(): boolean;
  /** A reply streams (Send turns into Stop) or no longer does. */
  streaming(on: boolean): void;
  /** Said under the transcript while a dropped reply waits for the connection. */
  say(text: string): void;
  /** A reply ended: the list and the account's counts follow. */
  finished(): void;
  /** A refusal that is no connection problem. */
  fail(error: unknown): void;
  /** Opens chat `id` again (history, then its running reply). */
  reopen(id: string): void;
}

export class ChatConnection {
  /** The connection line: empty while online. */
  readonly line = h('p', { class: 'connection', role: 'status', 'data-testid': 'connection', 'data-state': 'online' });
  private subscription: { unsubscribe(): void } | null = null;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** Fires when the followed stream has been silent for STALL_MS. */
  private stallTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly opts: ConnectionOptions) {}

  online(): void {
    this.setState('online');
  }

  private setState(state: 'online' | 'reconnecting', message = ''): void {
    this.line.dataset.state = state;
    this.line.textContent = message;
  }

  /** Waits, then tries again until the service answers: `attempt` resolves true when done. */
  private retry(attempt: () => Promise<boolean>, tries = 0): void {
    clearTimeout(this.retryTimer);
    const wait = BACKOFF_MS[Math.min(tries, BACKOFF_MS.length - 1)]!;
    this.setState('reconnecting', `Connection to your agent lost. Reconnecting in ${Math.round(wait / 1000)} s…`);
    this.retryTimer = setTimeout(async () => {
      if (this.opts.left()) return;
      this.setState('reconnecting', 'Connection to your agent lost. Reconnecting…');
      if (!(await attempt().catch(() => false))) this.retry(attempt, tries + 1);
    }, wait);
  }

  /**
   * Reopens chat `id` (history, then its running reply) once the service answers. Whatever
   * cancelled the retries before (`end()` ahead of a send, a clear, another chat) armed this
   * instead when it failed for want of a connection.
   */
  reconnect(id: string, tries = 0): void {
    this.retry(async () => {
      await api.agent.chat.active.query({ chat_id: id });
      if (this.opts.current() === id && !this.opts.left()) this.opts.reopen(id);
      return true;
    }, tries);
  }

  /** Stops the open chat's reply on the agent; the stream reports the end (`error` "stopped", then `done`). Rejects when refused (said). */
  async stop(): Promise<void> {
    try {
      await api.agent.chat.stop.mutate({ chat_id: this.opts.current() });
    } catch (error) {
      // The reply ended on its own meanwhile: nothing to stop.
      if (errorCode(error) === 'RUN_NOT_ACTIVE' || errorCode(error) === 'CHAT_NOT_FOUND') return;
      this.opts.fail(error);
      throw error;
    }
  }

  /** A change to the open chat (clear, delete): one that fails for want of a connection leaves the page reconnecting. */
  async attempt(change: () => Promise<void>): Promise<void> {
    const id = this.opts.current();
    try {
      await change();
    } catch (error) {
      this.opts.fail(error);
      if (isTransient(error) && this.opts.current() === id) this.reconnect(id);
    }
  }

  /** Forgets the current subscription before ending it: unsubscribing calls its `onComplete`. */
  private unfollow(): void {
    clearTimeout(this.stallTimer);
    const current = this.subscription;
    this.subscription = null;
    current?.unsubscribe();
  }

  /** No reply followed, no retry pending. */
  end(): void {
    clearTimeout(this.retryTimer);
    this.unfollow();
    this.opts.streaming(false);
  }

  /** The page is gone: nothing goes on. */
  close(): void {
    clearTimeout(this.retryTimer);
    this.unfollow();
  }

  /**
   * Follows the chat's run from after `lastEventId` (from its start without one) until `done`.
   * A drop hands over to `resume`, which continues after the last event that arrived.
   */
  follow(id: string, lastEventId?: string): void {
    const { transcript } = this.opts;
    this.unfollow();
    this.opts.streaming(true);
    let last = lastEventId;
    let resuming = lastEventId !== undefined;
    const finish = () => {
      if (this.subscription === mine) this.end();
      else mine.unsubscribe();
      this.opts.finished();
    };
    const dropped = () => {
      if (this.subscription !== mine) return;
      this.unfollow();
      this.resume(id, last);
    };
    /** (Re)arms the watchdog: every item, keepalives included, proves the stream alive. */
    const alive = () => {
      clearTimeout(this.stallTimer);
      this.stallTimer = setTimeout(dropped, STALL_MS);
    };
    const mine = live.agent.chat.stream.subscribe(
      { chat_id: id, ...(last ? { lastEventId: last } : {}) },
      {
        onData: (item: Item) => {
          if (this.subscription === mine) alive();
          this.setState('online');
          if (!isTracked(item)) {
            // No run behind this stream: either none is active, or (after a drop) ours is gone.
            if (item.type === 'done') {
              if (resuming) void this.settleLostRun(id);
              finish();
            } else transcript.event(item);
            return;
          }
          resuming = false;
          last = item.id;
          // A run followed from the start (after a reload): its id is its user message's.
          transcript.setLastUserId(item.id.slice(0, item.id.lastIndexOf('-')));
          transcript.event(item.data);
          if (item.data.type === 'done') finish();
        },
        onConnectionStateChange: (state) => {
          if (state.state === 'connecting' && state.error) dropped();
        },
        onError: (error) => {
          if (isTransient(error)) return dropped();
          if (this.subscription === mine) this.end();
          this.opts.fail(error);
        },
        onComplete: () => {
          // Ended without `done` and without an error: the connection went away.
          if (this.subscription === mine) dropped();
        },
      },
    );
    this.subscription = mine;
    alive();
  }

  /** After a drop: once the service answers again, follow on from the last event seen. */
  private resume(id: string, lastEventId: string | undefined): void {
    this.opts.say('The reply will continue when the connection is back.');
    this.retry(async () => {
      if (this.opts.current() !== id) return true;
      await api.agent.chat.active.query({ chat_id: id });
      if (this.opts.current() !== id) return true;
      this.setState('online');
      this.follow(id, lastEventId);
      return true;
    });
  }

  /** The run we followed did not survive: history shows how far it got; otherwise mark it cut off. */
  private async settleLostRun(id: string): Promise<void> {
    const { transcript } = this.opts;
    try {
      const { messages } = await api.agent.chat.history.query({ chat_id: id, limit: 200 });
      if (this.opts.current() !== id) return;
      const last = messages.at(-1);
      const ended = last !== undefined && !(last.type === 'text' && (last.name === 'user' || last.cut));
      if (ended) {
        transcript.clear();
        for (const event of messages) transcript.event(event);
        transcript.endTurn();
      } else transcript.cutOff();
    } catch {
      if (this.opts.current() === id) transcript.cutOff();
    }
  }
}
