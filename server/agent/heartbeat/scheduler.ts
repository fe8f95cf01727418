/**
 * Runs a heartbeat every `HEARTBEAT_INTERVAL` seconds (0: never). A tick that finds the previous
 * heartbeat still running is skipped, so heartbeats never overlap. `runNow()` runs one at once
 * (the same guard applies); tests use it.
 *
 * The first tick comes at `firstAt` when given (the time it stored before it last stopped, else
 * the wake time the account service kept, HEARTBEAT_NEXT_AT): a heartbeat that fell due while the
 * agent was asleep runs right after start, and an agent woken early (for a scheduled task) keeps
 * its heartbeat where it was. Each tick's time is stored (`onScheduled`). `nextAt` is what the
 * agent reports as its next wake time.
 */
import { runHeartbeat, type HeartbeatDeps, type HeartbeatOutcome } from './run.js';

export class HeartbeatScheduler {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<HeartbeatOutcome> | undefined;
  private readonly controller = new AbortController();
  private next: Date | undefined;

  constructor(
    private readonly deps: HeartbeatDeps,
    private readonly intervalMs: number,
    /** Each next tick as it is set, to be stored (agent_state). */
    private readonly onScheduled: (at: Date) => void = () => undefined,
  ) {}

  start(firstAt?: Date): void {
    if (this.intervalMs <= 0 || this.timer || this.controller.signal.aborted) return;
    this.schedule(firstAt ?? new Date(Date.now() + this.intervalMs));
  }

  private schedule(at: Date): void {
    this.next = at;
    this.onScheduled(at);
    this.timer = setTimeout(
      () => {
        this.schedule(new Date(Date.now() + this.intervalMs));
        void this.runNow();
      },
      Math.max(0, at.getTime() - Date.now()),
    );
    this.timer.unref();
  }

  /** When the next tick is due; undefined when heartbeats are off or the scheduler stopped. */
  get nextAt(): Date | undefined {
    return this.timer ? this.next : undefined;
  }

  /** Runs a heartbeat now unless one is running (then `{kind: 'overlap'}`). Never throws. */
  runNow(): Promise<HeartbeatOutcome> {
    if (this.current) return Promise.resolve({ kind: 'overlap' });
    if (this.controller.signal.aborted) return Promise.resolve({ kind: 'aborted' });
    const run = runHeartbeat(this.deps, this.controller.signal)
      .then((outcome) => {
        this.deps.log.debug({ outcome: outcome.kind }, 'heartbeat');
        return outcome;
      })
      .catch((error: unknown): HeartbeatOutcome => {
        this.deps.log.error({ err: error }, 'heartbeat crashed');
        return { kind: 'aborted' };
      })
      .finally(() => {
        this.current = undefined;
      });
    this.current = run;
    return run;
  }

  get running(): boolean {
    return this.current !== undefined;
  }

  /** No more ticks; resolves when a running heartbeat has ended or after `graceMs`. */
  async drain(graceMs: number): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const current = this.current;
    if (!current) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([current, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.controller.abort();
    await this.current;
  }
}
