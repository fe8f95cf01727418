/**
 * The security activity log a user sees (docs/api.md, "Account self-service"): sign-ins with
 * their method, a refresh-token reuse and the session it ended, identities linked and unlinked,
 * sessions revoked, logout everywhere, passkeys added, second factors added, removed and passed;
 * and what the user's agent did on the web (each page fetched, each search).
 *
 * Each event is written by the statement or transaction that does what it records (tokens/sessions.ts,
 * users/identities.ts, users/account.ts, passkeys), so the log never claims what did not happen nor misses
 * what did. Events are kept 90 days; `pruneActivity` runs in the background (services.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Prisma } from '../../generated/account/client.js';
import type { AccountDb } from '../store.js';

export const ACTIVITY_TYPES = [
  'sign_in',
  'refresh_token_reused',
  'identity_linked',
  'identity_unlinked',
  'session_revoked',
  'logout_all',
  'passkey_added',
  /** A second factor confirmed, removed, or passed at sign-in (`detail.method`: totp, recovery_code): auth/mfa/. */
  'mfa_enabled',
  'mfa_disabled',
  'mfa_verified',
  /** The user's agent fetched a page (`detail.url`) or searched the web (`detail.query`, `detail.provider`): agents/egress/web-ledger.ts. */
  'web_fetch',
  'web_search',
] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

export const ACTIVITY_RETENTION_MS = 90 * 24 * 60 * 60 * 1000;

/** Where a request came from, as far as the account service can tell (request.ts). */
export interface ClientInfo {
  ip: string | null;
  userAgent: string | null;
}

export const NO_CLIENT: ClientInfo = { ip: null, userAgent: null };

/** User agents are free text from the client: bounded before they are stored. */
export const boundedUserAgent = (value: string | undefined): string | null => (value ? value.slice(0, 512) : null);

export interface ActivityEvent {
  type: ActivityType;
  detail?: Record<string, string>;
}

/** The row for `tx.activityEvent.create`, inside the caller's transaction. */
export const activityRow = (userId: string, event: ActivityEvent, client: ClientInfo, at = new Date()): Prisma.ActivityEventUncheckedCreateInput => ({
  id: randomUUID(),
  userId,
  type: event.type,
  at,
  ip: client.ip,
  userAgent: client.userAgent,
  detail: event.detail ?? {},
});

/** What the agent did on the web, apart from what happened to the account. */
const WEB_TYPES: ActivityType[] = ['web_fetch', 'web_search'];

/** How many of each kind `listActivity` shows: the account's own events, and the agent's web calls. */
export interface ActivityWindows {
  account: number;
  web: number;
}

/** The user's view (GET /account/activity); the admin's user view shows fewer (admin/users.ts). */
export const USER_ACTIVITY_WINDOWS: ActivityWindows = { account: 500, web: 100 };

/**
 * The newest events of the last 90 days, newest first: the account's own events and the agent's
 * web calls in windows of their own, merged. One window for both let a busy agent (or a page
 * that talks it into fetching 500 URLs) push a sign-in out of the view its user checks for
 * sign-ins they did not make.
 */
export async function listActivity(db: AccountDb, userId: string, windows: ActivityWindows, now = new Date()) {
  const since = { gt: new Date(now.getTime() - ACTIVITY_RETENTION_MS) };
  const newest = (type: Prisma.StringFilter<'ActivityEvent'>, take: number) =>
    db.activityEvent.findMany({
      where: { userId, at: since, type },
      orderBy: [{ at: 'desc' }, { id: 'asc' }],
      take,
      select: { id: true, type: true, at: true, ip: true, userAgent: true, detail: true },
    });
  const [account, web] = await Promise.all([newest({ notIn: WEB_TYPES }, windows.account), newest({ in: WEB_TYPES }, windows.web)]);
  return [...account, ...web]
    .sort((a, b) => b.at.getTime() - a.at.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((row) => ({
      type: row.type as ActivityType,
      at: row.at,
      ip: row.ip,
      user_agent: row.userAgent,
      detail: (row.detail ?? {}) as Record<string, string>,
    }));
}

export async function pruneActivity(db: AccountDb, now = new Date()): Promise<number> {
  const { count } = await db.activityEvent.deleteMany({ where: { at: { lt: new Date(now.getTime() - ACTIVITY_RETENTION_MS) } } });
  return count;
}
