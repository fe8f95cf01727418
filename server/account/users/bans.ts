/**
 * Banning (docs/admin.md, "Ban"): a banned user cannot sign in — every sign-in answers 403
 * USER_BANNED with the ban's end (`expires_at`, null: until lifted) — and the ban ends every
 * session, stops the agent and disconnects the user's Telegram bot (admin/users.ts does those).
 * A ban is active while `banned_at` is set and `banned_until` is null or in the future: one
 * whose expiry passed lets the user in again with nothing else to do.
 */
import { AppError, unauthorized } from '../../common/errors.js';
import { Prisma } from '../../generated/account/client.js';
import type { HotSql } from '../hot-sql.js';
import type { AccountDb } from '../store.js';

export const isBanned = (user: { bannedAt: Date | null; bannedUntil: Date | null }, now = new Date()): boolean =>
  user.bannedAt !== null && (user.bannedUntil === null || user.bannedUntil > now);

/** The same rule in SQL, for the user row `alias` (the wake scheduler and the registry skip banned users with it). */
export const bannedAt = (alias: string, now: Date): Prisma.Sql => {
  const user = Prisma.raw(alias);
  return Prisma.sql`${user}.banned_at IS NOT NULL AND (${user}.banned_until IS NULL OR ${user}.banned_until > ${now})`;
};

/**
 * 403 USER_BANNED when `userId` is banned: what wakes an agent without its user asking (an
 * operator's restart, a bot's update) wakes no banned user's (docs/security.md, "Bans hold").
 */
export async function refuseBanned(db: Pick<AccountDb, 'user'>, userId: string, now = new Date()): Promise<void> {
  const user = await db.user.findUnique({ where: { id: userId }, select: { bannedAt: true, bannedUntil: true } });
  if (user && isBanned(user, now)) throw userBanned(user.bannedUntil);
}

export const userBanned = (until: Date | null): AppError =>
  new AppError(
    403,
    'USER_BANNED',
    until ? `This account is banned until ${until.toISOString()}` : 'This account is banned',
    {},
    { expires_at: until ? until.toISOString() : null },
  );

/** Why a session could not be opened for `userId` (tokens/sessions.ts): a ban, or no such account any more. */
export async function signInRefusal({ sql }: { sql: HotSql }, userId: string, now = new Date()): Promise<AppError> {
  const rows = await sql<{ banned_until: string | Date | null; active: boolean }>`
    SELECT banned_until, (banned_at IS NOT NULL AND (banned_until IS NULL OR banned_until > ${now})) AS active FROM users WHERE id = ${userId}::uuid`;
  const row = rows[0];
  if (!row?.active) return unauthorized('The account no longer exists', 'SESSION_REVOKED');
  return userBanned(row.banned_until === null ? null : utcDate(row.banned_until));
}

/** A `timestamp(3)` column holds UTC without a zone; drivers hand it over as a string or a local-time Date. */
function utcDate(value: string | Date): Date {
  if (value instanceof Date) return new Date(value.getTime() - value.getTimezoneOffset() * 60_000);
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value.replace(' ', 'T')}Z`);
}
