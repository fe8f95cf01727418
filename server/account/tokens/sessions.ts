/**
 * Sessions are refresh-token families (docs/security.md, "Tokens and sessions"). A session row holds a generation
 * counter; the refresh token carries the generation it may rotate. Rotation is one conditional
 * UPDATE, so of N concurrent refreshes of one token exactly one matches the row.
 *
 * Each rotation also stores the SHA-256 of the refresh token it hands out (`refresh_digest`),
 * and the next rotation requires the presented token to have exactly that digest: the token is
 * then byte for byte one we signed, so its signature need not be checked again (an Ed25519 verify
 * was the largest CPU cost of a refresh). A session that holds no digest — new, never rotated, or
 * stored before digests were — rotates only with a token whose signature has been verified
 * (TokenService.refresh). Only digests are stored, so a copy of the table yields no usable token.
 *
 * A token from an older generation is a reuse: within 10 s of the rotation it is the loser of a
 * race (answer 401, keep the session); later — or more than one generation back — it means the
 * token was copied, so the whole family is revoked.
 */
import { createHash, randomUUID } from 'node:crypto';
import { unauthorized } from '../../common/errors.js';
import { emitEvent } from '../events/outbox.js';
import type { AccountDb, AccountStore } from '../store.js';
import { activityRow, NO_CLIENT, type ClientInfo } from '../events/activity.js';
import { newRowId } from '../ids.js';
import { refreshExpiry, type Aal } from './jwt.js';
import { signInRefusal } from '../users/bans.js';

const REUSE_GRACE_MS = 10_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Sessions are on the hot paths: single statements go straight to the driver (hot-sql.ts). */
export type SessionStore = Pick<AccountStore, 'db' | 'sql'>;

/** How a session came to be: the client it was opened from and the sign-in method, for the session list and the activity log. */
export interface SessionOrigin {
  client: ClientInfo;
  method: string;
  /**
   * The sign-in already proved a second factor (auth/mfa/): a passkey with user verification, or
   * a method linked from a session of the same account that had passed one. The session starts
   * at `aal2`; otherwise at `aal1` when the account has a confirmed factor, or with no level.
   */
  secondFactor?: boolean;
}

/**
 * One statement: the session, its `sign_in` event (events/activity.ts) and the user's last-active
 * time are written together or not at all — and not for a banned user (users/bans.ts), who gets
 * 403 USER_BANNED with the ban's end instead. The session's assurance level is settled in the
 * same statement (an account with a confirmed factor starts at `aal1`), so no sign-in can slip
 * between a factor's check and the session it governs.
 */
export async function createSession(
  { sql }: SessionStore,
  userId: string,
  origin: SessionOrigin,
  now = new Date(),
): Promise<{ sessionId: string; generation: number; metadata: unknown; aal: Aal | null }> {
  const sessionId = newRowId();
  const { ip, userAgent } = origin.client;
  const rows = await sql<{ metadata: unknown; aal: Aal | null }>`
    WITH target AS (
      SELECT id, metadata, EXISTS (SELECT 1 FROM mfa_factors AS f WHERE f.user_id = users.id AND f.confirmed_at IS NOT NULL) AS has_factor FROM users
       WHERE id = ${userId}::uuid AND NOT (banned_at IS NOT NULL AND (banned_until IS NULL OR banned_until > ${now}))
    ), opened AS (
      INSERT INTO sessions (id, user_id, generation, rotated_at, expires_at, created_at, ip, user_agent, aal)
      SELECT ${sessionId}::uuid, id, 0, ${now}, ${refreshExpiry(now)}, ${now}, ${ip}, ${userAgent},
             CASE WHEN ${origin.secondFactor === true}::boolean THEN 'aal2' WHEN has_factor THEN 'aal1' END FROM target
      RETURNING user_id, aal
    ), touched AS (
      UPDATE users SET last_active_at = ${now} WHERE id IN (SELECT user_id FROM opened)
    ), logged AS (
      INSERT INTO activity_events (id, user_id, type, at, ip, user_agent, detail)
      SELECT ${randomUUID()}::uuid, user_id, 'sign_in', ${now}, ${ip}, ${userAgent}, ${JSON.stringify({ method: origin.method, session_id: sessionId })}::jsonb FROM opened
    )
    SELECT t.metadata, o.aal FROM target AS t JOIN opened AS o ON o.user_id = t.id`;
  if (!rows[0]) throw await signInRefusal({ sql }, userId);
  return { sessionId, generation: 0, metadata: rows[0].metadata, aal: rows[0].aal };
}

/** What `refresh_digest` holds for a refresh token. */
export const refreshDigest = (token: string): string => createHash('sha256').update(token).digest('base64url');

export interface Rotation {
  sessionId: string;
  userId: string;
  /** The generation the presented token may rotate. */
  generation: number;
  /** refreshDigest of the presented token, or null for a verified token of a session that holds no digest. */
  presented: string | null;
  /** refreshDigest of the token this rotation hands out. */
  next: string;
}

export type RotationOutcome = { ok: true; generation: number; guest: boolean; metadata: unknown; aal: Aal | null } | { ok: false };

/**
 * One statement: bump the generation if (and only if) the presented token is the current one. The
 * user's last activity is noted by the caller and written behind (usage.ts), not here.
 */
export async function rotateSession({ sql }: SessionStore, rotation: Rotation, now = new Date()): Promise<RotationOutcome> {
  const { sessionId, userId, generation, presented, next } = rotation;
  if (!UUID.test(sessionId) || !UUID.test(userId)) return { ok: false };
  const rows = await sql<{ guest: boolean; metadata: unknown; aal: Aal | null }>`
    UPDATE sessions AS s
       SET generation = s.generation + 1, rotated_at = ${now}, expires_at = ${refreshExpiry(now)}, refresh_digest = ${next}
      FROM users AS u
     WHERE s.id = ${sessionId}::uuid AND s.user_id = ${userId}::uuid AND u.id = s.user_id
       AND s.generation = ${generation} AND s.refresh_digest IS NOT DISTINCT FROM ${presented}::text
       AND s.revoked_at IS NULL AND s.expires_at > ${now}
    RETURNING u.tier <> 'full' AS guest, u.metadata, s.aal`;
  const row = rows[0];
  return row ? { ok: true, generation: generation + 1, guest: row.guest, metadata: row.metadata, aal: row.aal } : { ok: false };
}

/**
 * The second factor passed (auth/mfa/): the session moves to `aal2` and to a new generation, so
 * the refresh token it had (an `aal1` one) is spent — a refresh of it is a reuse — and the caller
 * signs a new pair of that generation. The digest is cleared: the new refresh token's signature
 * is verified at its first rotation, as for a new session's. Undefined when the session is no
 * longer live.
 */
export async function elevateSession(
  { sql }: SessionStore,
  sessionId: string,
  userId: string,
  now = new Date(),
): Promise<{ generation: number; guest: boolean; metadata: unknown } | undefined> {
  if (!UUID.test(sessionId) || !UUID.test(userId)) return undefined;
  const rows = await sql<{ generation: number; guest: boolean; metadata: unknown }>`
    UPDATE sessions AS s
       SET aal = 'aal2', generation = s.generation + 1, rotated_at = ${now}, refresh_digest = NULL
      FROM users AS u
     WHERE s.id = ${sessionId}::uuid AND s.user_id = ${userId}::uuid AND u.id = s.user_id AND s.revoked_at IS NULL AND s.expires_at > ${now}
    RETURNING s.generation, u.tier <> 'full' AS guest, u.metadata`;
  return rows[0];
}

/**
 * After a failed rotation with a genuine token (signature verified): was it a reuse that means
 * the token was copied? Then the whole session is revoked. Losing a race within the grace period
 * is not theft, nor is a token of a session that has already ended.
 */
export async function revokeIfStolen({ db }: SessionStore, sessionId: string, generation: number, now = new Date()): Promise<boolean> {
  if (!UUID.test(sessionId)) return false;
  const session = await db.session.findUnique({ where: { id: sessionId }, select: { userId: true, generation: true, rotatedAt: true, revokedAt: true } });
  if (!session || session.revokedAt || session.generation <= generation) return false;
  const theft = session.generation > generation + 1 || now.getTime() - session.rotatedAt.getTime() > REUSE_GRACE_MS;
  if (theft) {
    // The client presenting a stolen token is not the user's: the event carries no address of it.
    await db.$transaction(async (tx) => {
      const { count } = await tx.session.updateMany({ where: { id: sessionId, revokedAt: null }, data: { revokedAt: now } });
      if (count === 1) {
        await tx.activityEvent.create({
          data: activityRow(session.userId, { type: 'refresh_token_reused', detail: { session_id: sessionId } }, NO_CLIENT, now),
        });
        await emitEvent(tx, sessionRevoked(session.userId, [sessionId], 'refresh_token_reused'), now);
      }
    });
  }
  return theft;
}

/** Logout: ends one session, whoever's it is (the refresh token proved it). */
export async function revokeSession(db: AccountDb, sessionId: string, now = new Date()): Promise<void> {
  if (!UUID.test(sessionId)) return;
  await db.$transaction(async (tx) => {
    const revoked = await tx.$queryRaw<Array<{ user_id: string }>>`
      UPDATE sessions SET revoked_at = ${now} WHERE id = ${sessionId}::uuid AND revoked_at IS NULL RETURNING user_id::text`;
    const userId = revoked[0]?.user_id;
    if (userId) await emitEvent(tx, sessionRevoked(userId, [sessionId], 'logout'), now);
  });
}

/** The `session.revoked` webhook event (events/outbox.ts); `reason` says which path ended them. */
export const sessionRevoked = (userId: string, sessionIds: string[], reason: string) =>
  ({ type: 'session.revoked', data: { user_id: userId, session_ids: sessionIds, reason } }) as const;

/** Ends one live session of this user (and logs it); false when the user has no such live session. */
export async function revokeOwnSession(db: AccountDb, userId: string, sessionId: string, client: ClientInfo, now = new Date()): Promise<boolean> {
  if (!UUID.test(sessionId)) return false;
  return db.$transaction(async (tx) => {
    const { count } = await tx.session.updateMany({ where: { id: sessionId, userId, revokedAt: null, expiresAt: { gt: now } }, data: { revokedAt: now } });
    if (count === 1) {
      await tx.activityEvent.create({ data: activityRow(userId, { type: 'session_revoked', detail: { session_id: sessionId } }, client, now) });
      await emitEvent(tx, sessionRevoked(userId, [sessionId], 'revoked'), now);
    }
    return count === 1;
  });
}

/** Revokes every live session of the user; returns their ids (to drop them from caches). */
export async function revokeAllSessions(db: AccountDb, userId: string, client: ClientInfo, now = new Date()): Promise<string[]> {
  return db.$transaction(async (tx) => {
    const live = await tx.session.findMany({ where: { userId, revokedAt: null }, select: { id: true } });
    await tx.session.updateMany({ where: { userId, revokedAt: null }, data: { revokedAt: now } });
    await tx.activityEvent.create({ data: activityRow(userId, { type: 'logout_all' }, client, now) });
    if (live.length)
      await emitEvent(
        tx,
        sessionRevoked(
          userId,
          live.map((s) => s.id),
          'logout_all',
        ),
        now,
      );
    return live.map((s) => s.id);
  });
}

/**
 * The user's live sessions, newest first. Last use is the later of the last refresh (rotated_at,
 * which rotation writes anyway) and the last access-token use (last_used_at, usage.ts).
 */
export async function listSessions(db: AccountDb, userId: string, now = new Date()) {
  const rows = await db.session.findMany({
    where: { userId, revokedAt: null, expiresAt: { gt: now } },
    orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    select: { id: true, createdAt: true, rotatedAt: true, lastUsedAt: true, userAgent: true, ip: true },
  });
  return rows.map((row) => {
    const lastUsed = Math.max(row.rotatedAt.getTime(), row.lastUsedAt?.getTime() ?? 0, row.createdAt.getTime());
    return { id: row.id, createdAt: row.createdAt, lastUsedAt: new Date(lastUsed), userAgent: row.userAgent, ip: row.ip };
  });
}

/** What every protected call needs of its session: whether it is live, and its assurance level (auth/mfa/). */
export interface SessionStatus {
  active: boolean;
  aal: Aal | null;
}

const ENDED: SessionStatus = { active: false, aal: null };

/**
 * Whether access tokens of a session still work, and at which level. Answers are cached briefly,
 * because every protected call asks; changes made by this instance (revocations, a level reached)
 * update the cache at once, and other instances see them within `ttlMs`.
 */
export class SessionStatusCache {
  private readonly entries = new Map<string, { status: SessionStatus; until: number }>();

  constructor(
    private readonly store: SessionStore,
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 100_000,
  ) {}

  async status(sessionId: string, now = Date.now()): Promise<SessionStatus> {
    const cached = this.entries.get(sessionId);
    if (cached && cached.until > now) return cached.status;
    if (!UUID.test(sessionId)) return ENDED;
    const rows = await this.store.sql<{ active: boolean; aal: Aal | null }>`
      SELECT (revoked_at IS NULL AND expires_at > ${new Date(now)}) AS active, aal FROM sessions WHERE id = ${sessionId}::uuid`;
    const status = rows[0] ? { active: rows[0].active === true, aal: rows[0].aal } : ENDED;
    this.remember(sessionId, status, now + this.ttlMs);
    return status;
  }

  markRevoked(sessionIds: string[]): void {
    for (const id of sessionIds) this.remember(id, ENDED, Number.POSITIVE_INFINITY);
  }

  /** A level this instance just wrote (auth/mfa/): seen here at once, elsewhere within `ttlMs`. */
  markLevel(sessionIds: string[], aal: Aal, now = Date.now()): void {
    for (const id of sessionIds) this.remember(id, { active: true, aal }, now + this.ttlMs);
  }

  private remember(sessionId: string, status: SessionStatus, until: number): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(sessionId, { status, until });
  }
}

export const refreshRejected = (theft: boolean) =>
  theft
    ? unauthorized('This refresh token was already used; the session has been ended', 'REFRESH_TOKEN_REUSED')
    : unauthorized('The refresh token is no longer valid', 'INVALID_REFRESH_TOKEN');
