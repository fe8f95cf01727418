/**
 * When and from where each session was last used, for the session list, and when each user last
 * refreshed, for the admin list's "last active", without a database write on the token paths: a
 * protected call notes its session in memory (a Map lookup), at most once a minute per session,
 * a refresh notes its user, and a background flush writes every note in one statement per table.
 * Refreshes leave the session alone here: rotation already writes `rotated_at` (sessions.ts).
 *
 * A user's `last_active_at` is kept to the minute: a note within a minute of the stored stamp
 * leaves the row alone, since the column is indexed for the admin list and every write of it is a
 * new row version with new index entries (which is also why protected calls do not note users: a
 * user active all day would rewrite the row every minute or two, not at each refresh). It was once
 * written by the refresh statement itself, whose extra data-changing part (users and all its
 * indexes opened on every refresh, written or not) cost a refresh about an eighth of its CPU.
 *
 * Losing the notes of the last minute when an instance stops (`close` flushes them) would only
 * make "last used" or "last active" a minute older; nothing security-relevant depends on them.
 */
import type { ClientInfo } from '../events/activity.js';
import type { SessionStore } from './sessions.js';

export const USAGE_INTERVAL_MS = 60_000;

/** How fresh a stored `last_active_at` a newer note leaves alone. */
const LAST_ACTIVE_RESOLUTION_MS = 60_000;

interface Seen extends ClientInfo {
  at: Date;
}

export class SessionUsage {
  private pending = new Map<string, Seen>();
  /** Users active since the last flush, and when (the latest note wins). */
  private active = new Map<string, Date>();
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

  /** A protected call's use of its session. `seen.client` is read only when the use is noted: working out the address costs a little. */
  note(sessionId: string, seen: { readonly client: ClientInfo }, now = Date.now()): void {
    const last = this.noted.get(sessionId);
    if (last !== undefined && now - last < USAGE_INTERVAL_MS) return;
    if (this.noted.size >= this.maxEntries) this.noted.clear();
    this.noted.set(sessionId, now);
    this.pending.set(sessionId, { ...seen.client, at: new Date(now) });
  }

  /** The user refreshed a session. */
  noteActive(userId: string, now = Date.now()): void {
    if (this.active.size >= this.maxEntries && !this.active.has(userId)) return;
    this.active.set(userId, new Date(now));
  }

  /** Writes what was noted since the last flush, sessions and users one statement each; how many of each were noted. */
  async flush(): Promise<{ sessions: number; users: number }> {
    const sessions = [...this.pending].map(([id, seen]) => ({ id, at: seen.at.toISOString(), ip: seen.ip, ua: seen.userAgent }));
    // In id order: two instances flushing at once then tend to lock rows in the same order (the plan decides).
    const users = [...this.active].map(([id, at]) => ({ id, at: at.toISOString() })).sort((a, b) => (a.id < b.id ? -1 : 1));
    this.pending = new Map();
    this.active = new Map();
    // jsonb_to_recordset: one parameter for the whole batch, on pg and PGlite alike. Each statement
    // runs whether the other failed or not.
    const writes: Array<Promise<unknown>> = [];
    if (sessions.length)
      writes.push(this.store.sql`
        UPDATE sessions AS s
           SET last_used_at = GREATEST(s.last_used_at, v.at), ip = COALESCE(v.ip, s.ip), user_agent = COALESCE(v.ua, s.user_agent)
          FROM jsonb_to_recordset(${JSON.stringify(sessions)}::jsonb) AS v(id uuid, at timestamp(3), ip text, ua text)
         WHERE s.id = v.id`);
    if (users.length)
      writes.push(this.store.sql`
        UPDATE users AS u SET last_active_at = v.at
          FROM jsonb_to_recordset(${JSON.stringify(users)}::jsonb) AS v(id uuid, at timestamp(3))
         WHERE u.id = v.id AND u.last_active_at < v.at - ${`${LAST_ACTIVE_RESOLUTION_MS} milliseconds`}::interval`);
    const failed = (await Promise.allSettled(writes)).find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    return { sessions: sessions.length, users: users.length };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch(this.onError);
  }
}
