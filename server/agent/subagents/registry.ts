/**
 * Live subagent runs: start (limits, persistence, the background model loop under a timeout),
 * stop, list and detail, purge of old runs, and the announcement of each end to the chat that
 * spawned the run as a pending message (`source: 'subagent'`).
 *
 * A run has its own context: a system prompt of its own, the persona, and the task as the only
 * user message (never the parent's history); the workspace tools without `spawn_subagent`
 * (depth 1 is the limit) and without `send_file` (a subagent has nobody to send a file to); the
 * agent's step bound. Time comes from the injectable `now` so that retention can be tested.
 */
import { randomBytes } from 'node:crypto';
import type { ChatModel } from '../model/chat-model.js';
import type { ErrorCode } from '@contracts/errors.js';
import { AppError, conflict, notFound } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { runModelLoop } from '../chat/loop.js';
import type { AgentConfig } from '../config.js';
import { insertPending, type PendingStore } from '../pending/store.js';
import type { AgentDb, AgentSql } from '../store.js';
import type { AgentToolSet } from '../tools/types.js';
import { anyRunStored, finishRun, findRun, insertRun, listRuns, purgeRuns, runningRuns, toDetail, toSummary, type FinalStatus, type RunRow } from './runs.js';
import type { SpawnInput, SubagentDetail, SubagentSummary } from '@contracts/agent/subagents.js';

/** Subagents may not spawn subagents: the chat is depth 0, its subagents depth 1. */
export const MAX_SUBAGENT_DEPTH = 1;
/** Characters of a result carried in the announcement (the full result is in the detail). */
export const ANNOUNCE_RESULT_CHARS = 4_000;

class Stopped extends Error {
  override name = 'Stopped';
}
class TimedOut extends Error {
  override name = 'TimedOut';
}
class Interrupted extends Error {
  override name = 'Interrupted';
}

/** A refusal of `spawn_subagent`: the model sees the message as the tool's error. */
export class SubagentRefused extends AppError {
  constructor(status: 403 | 429 | 503, code: ErrorCode, detail: string) {
    super(status, code, detail);
  }
}

interface LiveRun {
  id: string;
  label: string;
  controller: AbortController;
  done: Promise<void>;
}

export interface SubagentDeps {
  config: AgentConfig;
  log: Logger;
  db: AgentDb;
  /** The store's plain connection: whether there is anything to settle or purge is asked there. */
  sql: AgentSql;
  pending: PendingStore;
  /** null: no model configured (a run then fails at once). */
  model: ChatModel | null;
  /** The subagent's tools (workspace tools; never `spawn_subagent`). */
  tools: AgentToolSet;
  now?: () => Date;
}

export interface SpawnRequest extends SpawnInput {
  chatId: string;
  /** Depth of the caller: 0 for a chat run. */
  depth: number;
}

export interface SpawnAnswer {
  run_id: string;
  status: 'running';
  message: string;
}

export function subagentSystemPrompt(opts: { name: string; persona: string; toolNames: string[]; now: Date }): string {
  const parts = [
    `You are a subagent of ${opts.name}, a personal agent. You work alone, in the background, on one task. Today is ${opts.now.toISOString().slice(0, 10)} (UTC time ${opts.now.toISOString().slice(11, 16)}).`,
    "You share the agent's workspace: a directory of files. Every path you give a tool is relative to it; paths outside it and protected files (.env, agent.db) are refused.",
    opts.toolNames.length ? `Tools: ${opts.toolNames.join(', ')}.` : 'You have no tools.',
    'You cannot ask questions or talk to the user. Do the task, then give your result as your final reply: it is reported to the agent that started you, which does not see your tool calls.',
  ];
  if (opts.persona.trim()) parts.push(`## Persona\n${opts.persona.trim()}`);
  return parts.join('\n\n');
}

function announcement(row: Pick<RunRow, 'id' | 'label'>, end: { status: FinalStatus; result?: string | null; error?: string | null }): string {
  const name = `Subagent "${row.label}" (${row.id})`;
  const bounded = (text: string) =>
    text.length > ANNOUNCE_RESULT_CHARS ? `${text.slice(0, ANNOUNCE_RESULT_CHARS)}…(truncated; the full result is in GET /subagents/${row.id})` : text;
  switch (end.status) {
    case 'completed':
      return `${name} completed:\n\n${bounded(end.result ?? '')}`;
    case 'timeout':
      return `${name} timed out: ${end.error ?? 'timeout'}`;
    case 'failed':
      if (end.error === 'cancelled') return `${name} was stopped.`;
      if (end.error === 'interrupted') return `${name} was interrupted (the agent stopped or restarted).`;
      return `${name} failed: ${end.error ?? 'unknown error'}`;
  }
}

export class SubagentRegistry {
  private readonly live = new Map<string, LiveRun>();
  private readonly now: () => Date;
  private purgeTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly deps: SubagentDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /** At start: runs left `running` by a previous process end as `failed`/`interrupted`; old runs are purged (with no run stored: nothing, and no ORM query). */
  async start(): Promise<void> {
    if (anyRunStored(this.deps.sql)) {
      const interrupted: RunRow[] = [];
      for (const row of await runningRuns(this.deps.db)) if (await this.end(row, { status: 'failed', error: 'interrupted' })) interrupted.push(row);
      if (interrupted.length) this.deps.log.warn({ runs: interrupted.map((r) => r.id) }, 'subagent runs interrupted by a restart');
      await this.purge();
    }
    const { purgeIntervalMs } = this.deps.config.subagents;
    this.purgeTimer = setInterval(() => {
      this.purgeStored().catch((error: unknown) => this.deps.log.error({ err: error }, 'subagent purge failed'));
    }, purgeIntervalMs);
    this.purgeTimer.unref();
  }

  running(): number {
    return this.live.size;
  }

  /** Starts a run in the background and answers at once. Refusals are `SubagentRefused`. */
  async spawn(request: SpawnRequest): Promise<SpawnAnswer> {
    const { maxRunning, timeoutMs: maxTimeoutMs } = this.deps.config.subagents;
    if (this.closed) throw new SubagentRefused(503, 'SHUTTING_DOWN', 'The agent is shutting down; no subagent was started.');
    if (request.depth >= MAX_SUBAGENT_DEPTH) {
      throw new SubagentRefused(403, 'SUBAGENT_DEPTH', 'Subagents cannot start subagents (nesting is limited to one level). Do the work yourself.');
    }
    if (this.live.size >= maxRunning) {
      throw new SubagentRefused(
        429,
        'SUBAGENT_LIMIT',
        `Too many subagents are running (${this.live.size} of at most ${maxRunning}); none was started. Wait until one ends (its result is announced to the chat) or do the task yourself.`,
      );
    }
    const id = randomBytes(6).toString('hex');
    const timeoutMs = Math.min(request.timeout_seconds !== undefined ? request.timeout_seconds * 1000 : maxTimeoutMs, maxTimeoutMs);
    const controller = new AbortController();
    // Reserved before the first await, so that concurrent spawns cannot pass the limit together.
    const live: LiveRun = { id, label: request.label, controller, done: Promise.resolve() };
    this.live.set(id, live);
    let row: RunRow;
    try {
      row = await insertRun(this.deps.db, {
        id,
        label: request.label,
        task: request.task,
        persona: request.persona ?? '',
        chatId: request.chatId,
        now: this.now(),
      });
    } catch (error) {
      this.live.delete(id);
      throw error;
    }
    live.done = this.execute(row, controller, timeoutMs).finally(() => this.live.delete(id));
    this.deps.log.info({ runId: id, chatId: request.chatId, label: request.label }, 'subagent started');
    return {
      run_id: id,
      status: 'running',
      message: `Started subagent "${request.label}" (run ${id}). It works in the background; its result will be announced in this chat when it ends.`,
    };
  }

  private async execute(row: RunRow, controller: AbortController, timeoutMs: number): Promise<void> {
    const { config, log, model, tools } = this.deps;
    const signal = controller.signal;
    const timer = setTimeout(() => controller.abort(new TimedOut()), timeoutMs);
    timer.unref();
    let end: { status: FinalStatus; result?: string | null; error?: string | null };
    try {
      if (!model) {
        end = { status: 'failed', error: 'No model is configured for this agent' };
      } else {
        const result = await runModelLoop({
          model,
          system: subagentSystemPrompt({ name: config.name, persona: row.persona, toolNames: Object.keys(tools), now: this.now() }),
          messages: [{ role: 'user', content: row.task }],
          tools,
          signal,
          maxSteps: config.chat.maxSteps,
          maxRetries: config.chat.modelRetries,
          onEvent: () => undefined,
        });
        const partial = result.text || null;
        if (result.status === 'completed') {
          end = { status: 'completed', result: result.text || '(the subagent ended without a reply)' };
        } else if (result.status === 'failed') {
          end = { status: 'failed', result: partial, error: result.error ?? 'Model error' };
        } else {
          const reason: unknown = signal.reason;
          if (reason instanceof TimedOut) end = { status: 'timeout', result: partial, error: `timed out after ${timeoutMs / 1000} s` };
          else if (reason instanceof Interrupted) end = { status: 'failed', result: partial, error: 'interrupted' };
          else end = { status: 'failed', result: partial, error: 'cancelled' };
        }
      }
    } catch (error) {
      log.error({ err: error, runId: row.id }, 'subagent run crashed');
      end = { status: 'failed', error: 'Internal error during the run' };
    } finally {
      clearTimeout(timer);
    }
    try {
      if (await this.end(row, end)) log.info({ runId: row.id, status: end.status, error: end.error }, 'subagent ended');
    } catch (error) {
      log.error({ err: error, runId: row.id }, 'could not record the end of a subagent run');
    }
  }

  /**
   * Ends a running run and stores its announcement in one transaction: with two separate writes,
   * a crash between them would leave a run that has ended but whose end its chat is never told
   * (the next start only interrupts runs still `running`). If the transaction fails, the run stays
   * `running` in the store and the next start interrupts and announces it. False when the run had
   * already ended (someone else won).
   */
  private async end(
    row: Pick<RunRow, 'id' | 'label' | 'chatId'>,
    end: { status: FinalStatus; result?: string | null; error?: string | null },
  ): Promise<boolean> {
    const now = this.now();
    const message = await this.deps.db.$transaction(async (tx) =>
      (await finishRun(tx, row.id, { ...end, now }))
        ? insertPending(tx, { chatId: row.chatId, content: announcement(row, end), source: 'subagent', now })
        : undefined,
    );
    if (message) this.deps.pending.notify(message);
    return message !== undefined;
  }

  /** `GET /subagents`: running first, then newest first. Expired runs are purged first. */
  async list(): Promise<SubagentSummary[]> {
    await this.purge();
    const now = this.now();
    return (await listRuns(this.deps.db)).map((row) => toSummary(row, now));
  }

  /** `GET /subagents/{run_id}`: 404 for an unknown (or purged) id. */
  async get(id: string): Promise<SubagentDetail> {
    await this.purge();
    const row = await findRun(this.deps.db, id);
    if (!row) throw notFound(`No subagent run ${id}`, 'SUBAGENT_NOT_FOUND');
    return toDetail(row, this.now());
  }

  /**
   * `POST /subagents/{run_id}/stop`: a running run ends as `failed` with error `cancelled` (the
   * end is recorded and announced here, then the run's loop is aborted and awaited briefly);
   * a run that is not running → 409, an unknown id → 404.
   */
  async stop(id: string): Promise<{ status: 'ok'; run_id: string; message: string }> {
    const row = await findRun(this.deps.db, id);
    if (!row) throw notFound(`No subagent run ${id}`, 'SUBAGENT_NOT_FOUND');
    const end = { status: 'failed' as const, error: 'cancelled' };
    if (row.status !== 'running' || !(await this.end(row, end))) {
      const status = row.status !== 'running' ? row.status : ((await findRun(this.deps.db, id))?.status ?? 'gone');
      throw conflict(`Subagent "${row.label}" (${id}) is not running (status: ${status})`, 'SUBAGENT_NOT_RUNNING');
    }
    const live = this.live.get(id);
    live?.controller.abort(new Stopped());
    if (live) await Promise.race([live.done, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
    this.deps.log.info({ runId: id }, 'subagent stopped');
    return { status: 'ok', run_id: id, message: `Subagent "${row.label}" (${id}) stopped` };
  }

  /** The periodic purge: an empty table needs no ORM query. */
  private async purgeStored(): Promise<void> {
    if (anyRunStored(this.deps.sql)) await this.purge();
  }

  /** Deletes runs that ended more than the retention (1 hour) before `now`. */
  purge(now: Date = this.now()): Promise<number> {
    return purgeRuns(this.deps.db, now, this.deps.config.subagents.retentionMs);
  }

  /** No new runs; resolves when the live ones have ended or after `graceMs` (then `close` interrupts the rest). */
  async drain(graceMs: number): Promise<void> {
    this.closed = true;
    const runs = [...this.live.values()];
    if (runs.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(runs.map((run) => run.done)), new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }

  /** Interrupts the live runs (they end as `failed`/`interrupted`, announced) and waits for them. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.purgeTimer);
    const runs = [...this.live.values()];
    for (const run of runs) run.controller.abort(new Interrupted());
    await Promise.all(runs.map((run) => run.done));
  }
}
