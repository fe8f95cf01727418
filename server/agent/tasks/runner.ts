/**
 * Runs scheduled tasks when they are due (docs/agent.md, "Scheduled tasks"). One timer, armed for
 * the earliest `next_run_at` and re-armed whenever the tasks change; at start it fires at once for
 * anything that fell due while the agent slept (the account service wakes a sleeping agent for its
 * next task: `nextDueAt` goes into the lifecycle report).
 *
 * A claimed task runs as a turn in its chat, through the chat runtime (so the turn is in the
 * chat's history and a client following the chat sees it stream), with the task's source and
 * TASK_MODEL. It never cuts into a reply: while one runs in the chat the task waits for it (up to
 * the run timeout). Its answer becomes a pending message (`source: "task"`), which the messenger
 * also sends to the owner's Telegram. Before the turn the budget gate is asked: a turn the budget
 * has no room for does not start (the user is told once a budget day).
 */
import type { ChatEvent } from '@contracts/agent/chat.js';
import { AppError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { ChatModel } from '../model/chat-model.js';
import type { ChatRuntime } from '../chat/runtime.js';
import type { PendingStore } from '../pending/store.js';
import { budgetNotice, type ProactiveBudgetGate } from '../proactive/budget.js';
import type { TaskRow, TaskStore } from './tasks.js';

/** setTimeout's ceiling is about 24.8 days; a later task re-arms the timer on the way. */
const MAX_TIMER_MS = 24 * 3600 * 1000;

export interface TaskRunnerDeps {
  store: TaskStore;
  chat: Pick<ChatRuntime, 'start' | 'settled'>;
  pending: PendingStore;
  gate: Pick<ProactiveBudgetGate, 'admit'>;
  /** TASK_MODEL's; undefined: the chat's. */
  model?: ChatModel;
  log: Logger;
  /** How long a task waits for a reply running in its chat before it gives up (AGENT_RUN_TIMEOUT). */
  waitMs: number;
}

export type TaskOutcome = 'ok' | 'failed' | 'interrupted' | 'budget';

/** What the model is handed as the turn's message: the prompt, marked as the scheduler's. */
export const taskMessage = (prompt: string): string => `[Scheduled task] ${prompt}`;

export class TaskRunner {
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private ticking: Promise<void> | undefined;
  private closed = false;
  /** Settles when a started turn has ended (tests, the bench). */
  onTurnEnded: (taskId: string, outcome: TaskOutcome) => void = () => undefined;

  constructor(private readonly deps: TaskRunnerDeps) {
    deps.store.onChange = () => this.arm();
  }

  start(): void {
    this.arm();
  }

  /** Turns running now (the agent is busy while there are any). */
  get running(): number {
    return this.inFlight.size;
  }

  /** When the next task is due, for the lifecycle report; undefined when none is. */
  nextDueAt(): Promise<Date | undefined> {
    return this.deps.store.nextDueAt();
  }

  /** Re-arms the timer for the earliest due task. */
  private arm(): void {
    if (this.closed) return;
    void this.deps.store.nextDueAt().then(
      (at) => {
        clearTimeout(this.timer);
        this.timer = undefined;
        if (!at || this.closed) return;
        const delay = Math.min(MAX_TIMER_MS, Math.max(0, at.getTime() - Date.now()));
        this.timer = setTimeout(() => void this.tick(), delay);
        this.timer.unref();
      },
      (error: unknown) => this.deps.log.error({ err: error }, 'tasks: could not read the next due time'),
    );
  }

  /** Claims what is due and starts each turn; one round at a time. */
  tick(): Promise<void> {
    this.ticking ??= this.claimAndRun().finally(() => {
      this.ticking = undefined;
      this.arm();
    });
    return this.ticking;
  }

  private async claimAndRun(): Promise<void> {
    if (this.closed) return;
    let due: TaskRow[];
    try {
      due = await this.deps.store.claimDue();
    } catch (error) {
      this.deps.log.error({ err: error }, 'tasks: could not claim due tasks');
      return;
    }
    for (const task of due) {
      const turn = this.runTurn(task).finally(() => this.inFlight.delete(turn));
      this.inFlight.add(turn);
    }
  }

  private async runTurn(task: TaskRow): Promise<void> {
    const { log } = this.deps;
    let outcome: TaskOutcome = 'failed';
    try {
      outcome = await this.turn(task);
    } catch (error) {
      log.error({ err: error, taskId: task.id }, 'tasks: a task turn crashed');
    }
    await this.deps.store.recordOutcome(task.id, outcome).catch((error: unknown) => log.warn({ err: error, taskId: task.id }, 'tasks: outcome not recorded'));
    log.info({ taskId: task.id, outcome }, 'task ran');
    this.onTurnEnded(task.id, outcome);
  }

  private async turn(task: TaskRow): Promise<TaskOutcome> {
    const { pending, gate } = this.deps;
    const admission = await gate.admit('task');
    if (!admission.allowed) {
      if (admission.tellUser)
        await pending.add({ chatId: task.chatId, source: 'task', content: budgetNotice(`Your scheduled task "${summary(task.prompt)}"`, admission.resetsAt) });
      return 'budget';
    }
    const run = await this.startWhenFree(task);
    if (!run) return 'interrupted';
    await run.finished;
    const { text, failed } = answerOf(run.events);
    // Superseded by the user's message, stopped, timed out or interrupted: no answer to deliver.
    if (run.signal.aborted) return 'interrupted';
    if (failed) return 'failed';
    if (text) await pending.add({ chatId: task.chatId, source: 'task', content: text });
    return 'ok';
  }

  /** Starts the turn once no reply runs in the chat; undefined when it stayed busy past `waitMs` or the agent is stopping. */
  private async startWhenFree(task: TaskRow) {
    const deadline = Date.now() + this.deps.waitMs;
    const proactive = { source: 'task' as const, ...(this.deps.model ? { model: this.deps.model } : {}) };
    while (!this.closed) {
      await this.deps.chat.settled(task.chatId);
      try {
        return await this.deps.chat.start(task.chatId, taskMessage(task.prompt), { proactive });
      } catch (error) {
        // A reply started between settling and our start: wait for that one too.
        if (!(error instanceof AppError && error.appCode === 'RUN_ACTIVE') || Date.now() >= deadline) throw error;
      }
    }
    return undefined;
  }

  /** No new turns; resolves when the running ones have ended or after `graceMs`. */
  async drain(graceMs: number): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(this.inFlight), new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }

  /** The chat runtime's close interrupts the turns; this waits for their bookkeeping. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.ticking;
    await Promise.all(this.inFlight);
  }
}

/** The assistant's text of a finished turn, and whether the model failed it. */
function answerOf(events: readonly ChatEvent[]): { text: string; failed: boolean } {
  let text = '';
  let failed = false;
  for (const event of events) {
    if (event.type === 'text') text += event.content;
    else if (event.type === 'error') failed = true;
  }
  return { text: text.trim(), failed };
}

/** A prompt's first line, cut to fit a notice. */
function summary(prompt: string): string {
  const line = prompt.trim().split('\n')[0] ?? '';
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}
