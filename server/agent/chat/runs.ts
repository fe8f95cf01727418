/**
 * Runs and their event buffers. A run belongs to one chat, is independent of any connection,
 * and buffers every event it emits with an increasing id (`<runId>-<seq>`, seq from 1; the
 * reconnect stream's `stream_meta` is `<runId>-0`). Followers read the buffer at their own pace
 * (a slow client never blocks the run) and get a `keepalive` (no id) after each quiet interval.
 * A finished run stays findable by id for a grace period, so a reconnect that races the end
 * still gets the tail.
 */
import { randomBytes } from 'node:crypto';
import { tracked, type TrackedEnvelope } from '@trpc/server';
import type { ChatEvent } from '@contracts/agent/chat.js';
import type { ModelSource } from '@contracts/agent/model-source.js';
import type { ChatModel } from '../model/chat-model.js';

/** A run that emits more events than this is stopped (bounds memory per chat). */
export const MAX_RUN_EVENTS = 200_000;

export type StreamItem = TrackedEnvelope<ChatEvent> | ChatEvent;

/** Who a contact's run talks to: a person the owner approved on Telegram, not the owner. */
export interface ContactAudience {
  name: string;
}

/** A turn no person asked for right now (a scheduled task): its model calls' source, and the model it runs on. */
export interface ProactiveTurn {
  source: ModelSource;
  /** TASK_MODEL's; undefined: the chat's own model. */
  model?: ChatModel;
}

export class Run {
  readonly id = randomBytes(6).toString('hex');
  readonly events: ChatEvent[] = [];
  readonly controller = new AbortController();
  ended = false;
  /** Resolves when the run has finished and `done` is buffered. */
  readonly finished: Promise<void>;
  private resolveFinished!: () => void;
  private waiters: Array<() => void> = [];

  constructor(
    readonly chatId: string,
    readonly userMessage: string,
    /** Set for a Telegram contact who is not the owner: the run gets their tools and prompt (chat/runtime.ts). */
    readonly contact?: ContactAudience,
    readonly proactive?: ProactiveTurn,
  ) {
    this.finished = new Promise((resolve) => (this.resolveFinished = resolve));
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  eventId(seq: number): string {
    return `${this.id}-${seq}`;
  }

  /** Buffers an event and wakes the followers. Nothing is accepted after `done`. */
  push(event: ChatEvent): void {
    if (this.ended) return;
    if (this.events.length >= MAX_RUN_EVENTS - 2 && event.type !== 'done' && event.type !== 'error') {
      if (!this.signal.aborted) this.controller.abort(new Error('too many events'));
      return;
    }
    this.events.push(event);
    if (event.type === 'done') {
      this.ended = true;
      this.resolveFinished();
    }
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  cancel(reason: unknown): void {
    if (!this.signal.aborted) this.controller.abort(reason);
  }

  /**
   * Buffered events after `afterSeq`, then live ones, up to and including `done`. One timer
   * (refreshed, not re-created) and one abort listener per follower keep the per-event cost low.
   */
  async *follow(afterSeq: number, signal: AbortSignal, keepaliveMs: number): AsyncGenerator<StreamItem> {
    let next = Math.max(0, afterSeq);
    let wake: ((why: 'event' | 'timeout') => void) | undefined;
    const fire = (why: 'event' | 'timeout') => {
      const resolve = wake;
      wake = undefined;
      resolve?.(why);
    };
    const onEvent = () => fire('event');
    const timer = setTimeout(() => fire('timeout'), keepaliveMs);
    timer.unref();
    signal.addEventListener('abort', onEvent, { once: true });
    try {
      while (!signal.aborted) {
        while (next < this.events.length) {
          const event = this.events[next]!;
          next++;
          yield tracked(this.eventId(next), event);
          if (event.type === 'done' || signal.aborted) return;
        }
        timer.refresh();
        const why = await new Promise<'event' | 'timeout'>((resolve) => {
          wake = resolve;
          this.waiters.push(onEvent);
        });
        if (why === 'timeout' && !signal.aborted && next >= this.events.length) yield { type: 'keepalive' };
      }
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onEvent);
    }
  }
}

/** Parses `<runId>-<seq>`; anything else is ignored (the stream then starts over). */
export function parseEventId(id: string | undefined): { runId: string; seq: number } | undefined {
  const match = /^([0-9a-f]{12})-(\d{1,9})$/.exec(id ?? '');
  return match ? { runId: match[1]!, seq: Number(match[2]) } : undefined;
}

export class RunRegistry {
  private readonly active = new Map<string, Run>();
  private readonly recent = new Map<string, { run: Run; timer: NodeJS.Timeout }>();

  constructor(private readonly graceMs: number) {}

  activeRun(chatId: string): Run | undefined {
    return this.active.get(chatId);
  }

  /** The active or recently finished run with this id, if it belongs to `chatId`. */
  find(chatId: string, runId: string): Run | undefined {
    const run = this.active.get(chatId);
    if (run?.id === runId) return run;
    const recent = this.recent.get(runId)?.run;
    return recent?.chatId === chatId ? recent : undefined;
  }

  add(run: Run): void {
    this.active.set(run.chatId, run);
    void run.finished.then(() => {
      if (this.active.get(run.chatId) === run) this.active.delete(run.chatId);
      const timer = setTimeout(() => this.recent.delete(run.id), this.graceMs);
      timer.unref();
      this.recent.set(run.id, { run, timer });
    });
  }

  all(): Run[] {
    return [...this.active.values()];
  }

  clear(): void {
    for (const { timer } of this.recent.values()) clearTimeout(timer);
    this.recent.clear();
  }
}
