/**
 * When and from where each session was last used, for the session list, without a database
 * write on the token path: a protected call only notes its session in memory (a Map lookup),
 * at most once a minute per session, and a background flush writes every noted session in one
 * statement. Refreshes need nothing here: rotation already writes `rotated_at` (sessions.ts).
 *
 * Losing the notes of the last minute when an instance stops (`close` flushes them) would only
 * make "last used" a minute older; nothing security-relevant depends on it.
 */
import type { ClientInfo } from '../events/activity.js';
import type { SessionStore } from './sessions.js';

export const USAGE_INTERVAL_MS = 60_000;

interface Seen extends ClientInfo {
  at: Date;
}

export class SessionUsage {
  private pending = new Map<string, Seen>();
  /** Per session, when its use was last noted: a session is noted again only a minute later. */
  private readonly noted = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: SessionStore,
    private readonly onError: (error: unknown) => void,
    private readonly maxEntries = 100_000,
  ) {
    this.timer = setInterval(() => this.flush().catch(onError), USAGE_INTERVAL_MS);
    this.timer.unref();
  }

  /** `seen.client` is read only when the use is noted: working out the address costs a little. */
  note(sessionId: string, seen: { readonly client: ClientInfo }, now = Date.now()): void {
    const last = this.noted.get(sessionId);
    if (last !== undefined && now - last < USAGE_INTERVAL_MS) return;
    if (this.noted.size >= this.maxEntries) this.noted.clear();
    this.noted.set(sessionId, now);
    this.pending.set(sessionId, { ...seen.client, at: new Date(now) });
  }

  /** Writes what was noted since the last flush, in one statement. */
  async flush(): Promise<number> {
    if (this.pending.size === 0) return 0;
    const batch = [...this.pending].map(([id, seen]) => ({ id, at: seen.at.toISOString(), ip: seen.ip, ua: seen.userAgent }));
    this.pending = new Map();
    // jsonb_to_recordset: one parameter for the whole batch, on pg and PGlite alike.
    await this.store.sql`
      UPDATE sessions AS s
         SET last_used_at = GREATEST(s.last_used_at, v.at), ip = COALESCE(v.ip, s.ip), user_agent = COALESCE(v.ua, s.user_agent)
        FROM jsonb_to_recordset(${JSON.stringify(batch)}::jsonb) AS v(id uuid, at timestamp(3), ip text, ua text)
       WHERE s.id = v.id`;
    return batch.length;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch(this.onError);
  }
}
