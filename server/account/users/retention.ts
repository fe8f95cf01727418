/**
 * Guests who went away are forgotten: a guest with no sign-in, refresh or use of a session for
 * GUEST_RETENTION_DAYS is removed with everything of theirs (delete.ts, removeUser: sessions,
 * agent, agent data and workspace). The sweep runs hourly on one instance at a time (a PostgreSQL
 * advisory lock: store.exclusively), in batches, and logs what it removed.
 */
import type { Logger } from '../../common/log.js';
import type { AccountStore } from '../store.js';
import { removeUser, type UserRemoval } from './delete.js';

/** The advisory lock key of the sweep (any constant unique among this service's locks). */
export const GUEST_SWEEP_LOCK = 0x67_75_65_73; // "gues"
const BATCH = 100;
const SWEEP_EVERY_MS = 60 * 60 * 1000;

type Services = UserRemoval & { store: Pick<AccountStore, 'db' | 'sql' | 'exclusively'> };

export class GuestRetention {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly services: Services,
    private readonly retentionDays: number,
    private readonly log: Logger,
  ) {}

  /** Guests whose last sign-in, refresh or session use is older than the retention. */
  private async abandoned(now: Date): Promise<string[]> {
    const cutoff = new Date(now.getTime() - this.retentionDays * 24 * 60 * 60 * 1000);
    const rows = await this.services.store.sql<{ id: string }>`
      SELECT u.id FROM users u
       WHERE u.tier = 'guest' AND u.created_at < ${cutoff}
         AND NOT EXISTS (
           SELECT 1 FROM sessions s
            WHERE s.user_id = u.id
              AND (s.created_at >= ${cutoff} OR s.rotated_at >= ${cutoff} OR s.last_used_at >= ${cutoff}))
       ORDER BY u.created_at
       LIMIT ${BATCH}`;
    return rows.map((row) => row.id);
  }

  /** One sweep; resolves to the number of guests removed (0 when another instance is sweeping). */
  async sweep(now = new Date()): Promise<number> {
    let removed = 0;
    await this.services.store.exclusively(GUEST_SWEEP_LOCK, async () => {
      for (;;) {
        const batch = await this.abandoned(now);
        for (const userId of batch) {
          await removeUser(this.services, userId, now);
          removed += 1;
        }
        if (batch.length < BATCH) break;
      }
    });
    if (removed) this.log.info({ removed, retentionDays: this.retentionDays }, 'removed abandoned guests');
    return removed;
  }

  start(): void {
    const tick = () => {
      this.running = this.sweep().catch((error: unknown) => this.log.error({ err: error }, 'guest retention sweep failed'));
    };
    this.timer = setInterval(tick, SWEEP_EVERY_MS);
    this.timer.unref();
    tick();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
