/**
 * Guest sign-in (the hot path of `POST /auth/guest`): find the user of the device identity — or
 * create user and identity — and open a session, atomically, in one statement. It keeps the
 * rules of users/identities.ts for the `guest` provider (one device id → one guest account; a
 * device id whose guest was upgraded no longer has an identity, so it gets a fresh guest).
 *
 * Two statements, each one round trip:
 * - `firstSignIn`, for a device never seen on a deployment where no webhook endpoint wants
 *   `user.created`: it only inserts (user, identity, session). It checks both conditions in its
 *   own snapshot and creates nothing when either fails, so it writes exactly what `signIn` would
 *   have written in that snapshot: no event, because no endpoint would have received one.
 * - `signIn`, for everything else: a returning device (its last activity stamped, a ban refused)
 *   and a new device whose `user.created` event is written by the same statement (events/outbox.ts
 *   says why; this is its one inlined copy, for the single round trip).
 * A new device takes the first, a returning one the first and then the second. Each statement
 * tells whether an endpoint wants `user.created`; while one does, new devices go straight to
 * `signIn`. Why not `signIn` alone: every data-changing part of a statement opens its table and
 * indexes whether it writes a row or not, and the event tables, the activity stamp and the ban
 * join made a new device's statement cost PostgreSQL about a third more (pgbench, 8 clients).
 *
 * Two first sign-ins of one new device race on the identity's unique index: the loser's whole
 * statement rolls back (no orphan user) and `signIn` then finds the winner's account.
 *
 * New guests are capped (ratelimit/policy.ts) but returning devices never are: the caps are
 * claimed before the statement and given back when it found an existing guest; when a cap
 * refuses, the device may still sign in to the guest it already has.
 */
import { isUniqueViolation, type HotSql } from '../../hot-sql.js';
import { newRowId } from '../../ids.js';
import type { RateLimits } from '../../ratelimit/limits.js';
import { signUpCapped } from '../../ratelimit/policy.js';
import { refreshExpiry } from '../../tokens/jwt.js';
import { signInRefusal } from '../../users/bans.js';

export interface GuestSession {
  userId: string;
  sessionId: string;
  guest: boolean;
  /** The session's generation (0: new). */
  generation: number;
  /** This sign-in created the guest. */
  created: boolean;
}

/**
 * Per store: whether the last statement saw an endpoint that wants `user.created`. Only a hint for
 * which statement goes first; what is written is decided in each statement's own snapshot.
 */
const userCreatedHooked = new WeakMap<HotSql, boolean>();

/**
 * A device's first sign-in where no endpoint wants `user.created`: a new guest and its session, or
 * nothing (the device has a guest, or an endpoint wants the event: `hooked` says which).
 */
async function firstSignIn(sql: HotSql, deviceId: string, now: Date): Promise<GuestSession | { hooked: boolean }> {
  const sessionId = newRowId();
  const [row] = await sql<{ user_id: string | null; hooked: boolean }>`
    WITH known AS (
      SELECT 1 FROM identities WHERE provider = 'guest' AND subject = ${deviceId}
    ), hooked AS (
      SELECT 1 FROM webhook_endpoints
       WHERE enabled AND (cardinality(coalesce(event_types, '{}')) = 0 OR 'user.created' = ANY(event_types))
    ), new_user AS (
      INSERT INTO users (id, tier, created_at, updated_at)
      SELECT ${newRowId()}::uuid, 'guest', ${now}, ${now} WHERE NOT EXISTS (SELECT 1 FROM known) AND NOT EXISTS (SELECT 1 FROM hooked)
      RETURNING id
    ), new_identity AS (
      INSERT INTO identities (id, user_id, provider, subject, email_verified, created_at)
      SELECT ${newRowId()}::uuid, id, 'guest', ${deviceId}, false, ${now} FROM new_user
      RETURNING user_id
    ), opened AS (
      INSERT INTO sessions (id, user_id, generation, rotated_at, expires_at, created_at)
      SELECT ${sessionId}::uuid, user_id, 0, ${now}, ${refreshExpiry(now)}, ${now} FROM new_identity
      RETURNING user_id
    )
    SELECT (SELECT user_id FROM opened) AS user_id, EXISTS (SELECT 1 FROM hooked) AS hooked`;
  if (!row) throw new Error('guest sign-in answered no row');
  if (row.user_id) return { userId: row.user_id, sessionId, guest: true, generation: 0, created: true };
  return { hooked: row.hooked };
}

/** `create: false` signs in only an existing guest (undefined when the device has none). */
async function signIn(sql: HotSql, deviceId: string, now: Date, create: boolean): Promise<GuestSession | undefined> {
  const sessionId = newRowId();
  // `guest`: guest terms apply (any tier but `full`: users/identities.ts). `touched` stamps a
  // returning guest's last activity (a new guest's row has it from its default) and is read from
  // `existing`, not `opened`: that one made every new device pay an index look-up on users,
  // about 15 % of the statement's CPU in PostgreSQL.
  const rows = await sql<{ user_id: string; guest: boolean; created: boolean; opened: boolean; hooked: boolean }>`
    WITH existing AS (
      SELECT u.id, u.tier <> 'full' AS guest, (u.banned_at IS NOT NULL AND (u.banned_until IS NULL OR u.banned_until > ${now})) AS banned
        FROM identities AS i JOIN users AS u ON u.id = i.user_id
       WHERE i.provider = 'guest' AND i.subject = ${deviceId}
    ), new_user AS (
      INSERT INTO users (id, tier, created_at, updated_at)
      SELECT ${newRowId()}::uuid, 'guest', ${now}, ${now} WHERE NOT EXISTS (SELECT 1 FROM existing) AND ${create}::boolean
      RETURNING id, true AS guest
    ), new_identity AS (
      INSERT INTO identities (id, user_id, provider, subject, email_verified, created_at)
      SELECT ${newRowId()}::uuid, id, 'guest', ${deviceId}, false, ${now} FROM new_user
      RETURNING user_id
    ), target AS (
      SELECT id, guest, false AS created, banned FROM existing
      UNION ALL
      SELECT nu.id, nu.guest, true, false FROM new_user AS nu JOIN new_identity AS ni ON ni.user_id = nu.id
    ), opened AS (
      INSERT INTO sessions (id, user_id, generation, rotated_at, expires_at, created_at)
      SELECT ${sessionId}::uuid, id, 0, ${now}, ${refreshExpiry(now)}, ${now} FROM target WHERE NOT banned
      RETURNING user_id
    ), hooked AS (
      SELECT id FROM webhook_endpoints
       WHERE enabled AND (cardinality(coalesce(event_types, '{}')) = 0 OR 'user.created' = ANY(event_types))
    ), created_event AS (
      INSERT INTO webhook_events (id, type, data, created_at)
      SELECT gen_random_uuid(), 'user.created', jsonb_build_object('user_id', id, 'guest', true, 'method', 'guest'), ${now}
        FROM new_user WHERE EXISTS (SELECT 1 FROM hooked)
      RETURNING id
    ), created_deliveries AS (
      INSERT INTO webhook_deliveries (id, event_id, endpoint_id, state, attempts, next_attempt_at, created_at)
      SELECT gen_random_uuid(), e.id, h.id, 'pending', 0, ${now}, ${now} FROM created_event AS e CROSS JOIN hooked AS h
    ), touched AS (
      UPDATE users SET last_active_at = ${now} WHERE id IN (SELECT id FROM existing WHERE NOT banned)
    )
    SELECT t.id AS user_id, t.guest, t.created, o.user_id IS NOT NULL AS opened, EXISTS (SELECT 1 FROM hooked) AS hooked
      FROM target AS t LEFT JOIN opened AS o ON o.user_id = t.id`;
  const row = rows[0];
  if (!row) {
    if (create) throw new Error('guest sign-in opened no session');
    return undefined;
  }
  userCreatedHooked.set(sql, row.hooked);
  // A banned guest (users/bans.ts): 403 USER_BANNED with the ban's end.
  if (!row.opened) throw await signInRefusal({ sql }, row.user_id, now);
  return { userId: row.user_id, sessionId, guest: row.guest, generation: 0, created: row.created };
}

/** Signs the device's guest in, creating it when the device has none. No caps: see `signInGuestCapped`. */
export async function signInGuest(sql: HotSql, deviceId: string, now = new Date()): Promise<GuestSession> {
  if (!userCreatedHooked.get(sql)) {
    // A unique violation: another first sign-in of this device won; `signIn` finds its guest.
    const first = await firstSignIn(sql, deviceId, now).catch((error: unknown) => {
      if (isUniqueViolation(error)) return undefined;
      throw error;
    });
    if (first && 'userId' in first) return first;
    if (first) userCreatedHooked.set(sql, first.hooked);
  }
  try {
    return (await signIn(sql, deviceId, now, true))!;
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    return (await signIn(sql, deviceId, now, true))!;
  }
}

/** `signInGuest` under the new-account caps of this client (`clientKey`) and of the service. */
export function signInGuestCapped(sql: HotSql, rateLimits: RateLimits, deviceId: string, clientKey: string, now = new Date()): Promise<GuestSession> {
  return signUpCapped(rateLimits, clientKey, 'guest', (create) => (create ? signInGuest(sql, deviceId, now) : signIn(sql, deviceId, now, false)));
}
