/**
 * Wakes sleeping agents when they are due (their next heartbeat, as they last reported it; the
 * provisioner stores it in `agents.next_wake_at`). Every AGENT_WAKE_POLL seconds each instance
 * claims due agents with one statement — `FOR UPDATE SKIP LOCKED` under an UPDATE that sets a
 * lease — so that one instance at a time wakes an agent, on PostgreSQL and PGlite alike; a lease
 * that outlives a crashed instance expires on its own.
 *
 * A woken agent runs its due heartbeat right after start (the provisioner hands it the due time)
 * and sleeps again by the idle rule; its next wake time arrives with its report when it is
 * stopped. A wake that fails (the agent does not start, the service is at capacity) is retried
 * with backoff (AGENT_WAKE_POLL · 2^attempts, at most 15 minutes) and logged.
 *
 * It wakes the agents of whichever provisioner this service runs whose agents sleep (local and
 * kubernetes alike), and never a banned user's: a ban clears the wake time, the registry keeps it
 * cleared while the ban lasts, and the claim skips banned users besides.
 */
import type { Logger } from '../../../common/log.js';
import { bannedAt } from '../../users/bans.js';
import type { AccountDb } from '../../store.js';

export interface WakeTarget {
  /** Starts the user's agent unless it runs; resolves once it answers. */
  wake(userId: string): Promise<void>;
}

export interface WakeSchedulerOptions {
  pollMs: number;
  /** The registry kind of the agents this service's provisioner starts (`agents.kind`): those it wakes. */
  kind: string;
  /** Agents claimed per round. */
  batch?: number;
  now?: () => Date;
}

const MAX_BACKOFF_MS = 15 * 60_000;

export class WakeScheduler {
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly db: AccountDb,
    private readonly target: WakeTarget,
    private readonly log: Logger,
    private readonly options: WakeSchedulerOptions,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.round ??= this.tick().finally(() => (this.round = undefined));
    }, this.options.pollMs);
    this.timer.unref();
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  /** Due agents this instance won, claimed for longer than a start may take. */
  private async claim(): Promise<Array<{ id: string; user_id: string; wake_attempts: number }>> {
    const now = this.now();
    const leaseUntil = new Date(now.getTime() + Math.max(60_000, this.options.pollMs * 4));
    return this.db.$queryRaw<Array<{ id: string; user_id: string; wake_attempts: number }>>`
      UPDATE agents SET wake_lease_until = ${leaseUntil}
      WHERE id IN (
        SELECT id FROM agents
        WHERE kind = ${this.options.kind} AND user_id IS NOT NULL AND next_wake_at <= ${now}
          AND (wake_lease_until IS NULL OR wake_lease_until < ${now})
          AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = agents.user_id AND ${bannedAt('u', now)})
        ORDER BY next_wake_at
        LIMIT ${this.options.batch ?? 20}
        FOR UPDATE SKIP LOCKED)
      RETURNING id::text AS id, user_id::text AS user_id, wake_attempts`;
  }

  /** One round: claim, wake each, record the outcome. Never throws. */
  async tick(): Promise<void> {
    if (this.closed) return;
    let due: Awaited<ReturnType<WakeScheduler['claim']>>;
    try {
      due = await this.claim();
    } catch (error) {
      this.log.error({ err: error }, 'wake scheduler: could not claim due agents');
      return;
    }
    await Promise.all(due.map((row) => this.wakeOne(row)));
  }

  private async wakeOne(row: { id: string; user_id: string; wake_attempts: number }): Promise<void> {
    try {
      await this.target.wake(row.user_id);
      // Its next wake comes with its report when it goes to sleep again.
      await this.db.agent.updateMany({ where: { id: row.id }, data: { nextWakeAt: null, wakeAttempts: 0, wakeLeaseUntil: null } });
      this.log.info({ agentId: row.id }, 'woke a sleeping agent on schedule');
    } catch (error) {
      const attempts = row.wake_attempts + 1;
      const delayMs = Math.min(MAX_BACKOFF_MS, this.options.pollMs * 2 ** attempts);
      this.log.warn(
        { agentId: row.id, attempts, retryInMs: delayMs, reason: error instanceof Error ? error.message : String(error) },
        'wake scheduler: waking an agent failed; retrying',
      );
      await this.db.agent
        .updateMany({ where: { id: row.id }, data: { nextWakeAt: new Date(this.now().getTime() + delayMs), wakeAttempts: attempts, wakeLeaseUntil: null } })
        .catch((failure: unknown) => this.log.error({ err: failure, agentId: row.id }, 'wake scheduler: could not record a failed wake'));
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.round;
  }
}
