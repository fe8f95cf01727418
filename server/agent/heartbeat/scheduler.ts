/**
 * Runs a heartbeat every `HEARTBEAT_INTERVAL` seconds (0: never). A tick that finds the previous
 * heartbeat still running is skipped, so heartbeats never overlap. `runNow()` runs one at once
 * (the same guard applies); tests use it.
 */
import { runHeartbeat, type HeartbeatDeps, type HeartbeatOutcome } from './run.js';

export class HeartbeatScheduler {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<HeartbeatOutcome> | undefined;
  private readonly controller = new AbortController();

  constructor(
    private readonly deps: HeartbeatDeps,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    if (this.intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.runNow(), this.intervalMs);
    this.timer.unref();
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

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.controller.abort();
    await this.current;
  }
}
