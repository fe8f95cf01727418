/**
 * Account self-service (docs/api.md, "Account self-service"): who am I with every linked
 * method, unlinking a method. Every query is scoped to the caller's user id, so another user's
 * identity is simply not found (404) and nothing of theirs is touched.
 */
import { badRequest, conflict, notFound } from '../../common/errors.js';
import { emitEvent } from '../events/outbox.js';
import type { AccountDb } from '../store.js';
import { activityRow, type ClientInfo } from '../events/activity.js';
import { identityLabel, onGuestTerms } from './identities.js';

/** Every provider but `guest`, which is never listed. */
export type ListedMethod = 'email' | 'idpa' | 'idpb' | 'wallet' | 'passkey';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** UTC, ISO 8601 without a zone suffix (docs/api.md, timestamps): `2026-11-22T20:04:33.208`. */
export const utc = (date: Date): string => date.toISOString().slice(0, -1);

/** A guest's device id is how a guest signs in, not a method a person manages: it is never listed. */
const listed = { provider: { not: 'guest' } } as const;

const identitySelect = {
  id: true,
  provider: true,
  subject: true,
  email: true,
  createdAt: true,
  lastUsedAt: true,
  passkey: { select: { name: true } },
} as const;

export const identityNotFound = () => notFound('No such sign-in method on this account', 'IDENTITY_NOT_FOUND');

export async function getAccount(db: AccountDb, userId: string) {
  const user = await db.user.findUnique({
    where: { id: userId },
    select: {
      id: true,
      tier: true,
      createdAt: true,
      timezone: true,
      identities: { where: listed, select: identitySelect, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] },
    },
  });
  if (!user) throw notFound('No such account', 'ACCOUNT_NOT_FOUND');
  return {
    user_id: user.id,
    guest: onGuestTerms(user.tier),
    tier: user.tier,
    created_at: utc(user.createdAt),
    timezone: user.timezone,
    identities: user.identities.map((identity) => ({
      id: identity.id,
      method: identity.provider as ListedMethod,
      label: identityLabel({ ...identity, passkeyName: identity.passkey?.name }),
      created_at: utc(identity.createdAt),
      last_used_at: identity.lastUsedAt ? utc(identity.lastUsedAt) : null,
    })),
  };
}

/** Keeps the user's time zone (an IANA name the runtime knows; 400 otherwise); true when it changed. */
export async function setTimezone(db: AccountDb, userId: string, timezone: string): Promise<boolean> {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw badRequest(`Unknown time zone: ${timezone}`);
  }
  const { count } = await db.user.updateMany({ where: { id: userId, OR: [{ timezone: null }, { timezone: { not: timezone } }] }, data: { timezone } });
  return count === 1;
}

/** The user's time zone as kept (null until the web client reported one). */
export async function timezoneOf(db: AccountDb, userId: string): Promise<string | null> {
  return (await db.user.findUnique({ where: { id: userId }, select: { timezone: true } }))?.timezone ?? null;
}

/**
 * Removes one sign-in method, never the last of a full account (409 LAST_IDENTITY). The user row
 * is locked first: concurrent unlinks of one account queue on it, and each counts what the one
 * before it left (in its own, later statement), so of N racing unlinks at least one method stays.
 */
export async function unlinkIdentity(db: AccountDb, userId: string, identityId: string, client: ClientInfo, now = new Date()): Promise<void> {
  if (!UUID.test(identityId)) throw identityNotFound();
  await db.$transaction(async (tx) => {
    const locked = await tx.$queryRaw<Array<{ email: string | null }>>`SELECT email FROM users WHERE id = ${userId}::uuid FOR UPDATE`;
    const user = locked[0];
    if (!user) throw identityNotFound();
    const identities = await tx.identity.findMany({ where: { userId, ...listed }, select: identitySelect });
    const identity = identities.find((candidate) => candidate.id === identityId);
    if (!identity) throw identityNotFound();
    if (identities.length === 1) throw conflict('This is the only way to sign in to this account; link another method first', 'LAST_IDENTITY');
    await tx.identity.delete({ where: { id: identityId } });
    // The account's verified address stops joining new sign-ins to it once nothing vouches for it.
    if (user.email && !(await tx.identity.findFirst({ where: { userId, email: user.email, emailVerified: true }, select: { id: true } }))) {
      await tx.user.update({ where: { id: userId }, data: { email: null } });
    }
    const detail = { method: identity.provider, label: identityLabel({ ...identity, passkeyName: identity.passkey?.name }) };
    await tx.activityEvent.create({ data: activityRow(userId, { type: 'identity_unlinked', detail }, client, now) });
    await emitEvent(tx, { type: 'identity.unlinked', data: { user_id: userId, identity_id: identityId, method: identity.provider } }, now);
  });
}
