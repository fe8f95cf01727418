/**
 * The one-time auth code that carries a finished browser sign-in from the callback redirect to
 * POST /auth/exchange (spec: random, single use, 60 s). Only its SHA-256 is stored; consuming
 * it is one conditional UPDATE, so of concurrent exchanges exactly one succeeds.
 */
import { randomBytes } from 'node:crypto';
import { unauthorized } from '../../../common/errors.js';
import { emitEvent } from '../../admin/webhooks/outbox.js';
import type { AccountDb } from '../../store.js';
import type { ClientInfo } from '../../users/activity.js';
import { attachIdentity, identityInUse, type IdentityProvider, type SignedInUser } from '../../users/identities.js';
import { sha256 } from './state.js';

export async function issueAuthCode(
  db: AccountDb,
  input: { userId: string; provider: string; createdUser: boolean; now: Date; ttlSeconds: number },
): Promise<string> {
  const code = randomBytes(32).toString('base64url');
  await db.authCode.deleteMany({ where: { expiresAt: { lt: new Date(input.now.getTime() - 3600_000) } } });
  await db.authCode.create({
    data: {
      codeHash: sha256(code),
      userId: input.userId,
      provider: input.provider,
      createdUser: input.createdUser,
      expiresAt: new Date(input.now.getTime() + input.ttlSeconds * 1000),
    },
  });
  return code;
}

const invalidCode = () => unauthorized('The auth code is invalid, expired or already used', 'INVALID_AUTH_CODE');

/**
 * Consumes the code and answers whose session to start, and by which method. With an access
 * token (guest upgrade, linking: users/sign-in.ts) the caller must end up as that user: either
 * the callback already attached the identity to it, or the callback created a fresh account for
 * a new identity, which the caller then adopts in place (the fresh, never-used account is
 * removed). An identity of an older account is never moved: 409 IDENTITY_IN_USE.
 */
export async function exchangeAuthCode(
  db: AccountDb,
  input: { code: string; now: Date; linkUserId: string | undefined; client: ClientInfo },
): Promise<Pick<SignedInUser, 'userId' | 'guest'> & { method: string }> {
  if (input.code.length > 256) throw invalidCode();
  const codeHash = sha256(input.code);
  const { count } = await db.authCode.updateMany({
    where: { codeHash, usedAt: null, expiresAt: { gt: input.now } },
    data: { usedAt: input.now },
  });
  if (count !== 1) throw invalidCode();
  const row = await db.authCode.findUniqueOrThrow({ where: { codeHash }, select: { userId: true, createdUser: true, provider: true } });
  const method = row.provider || 'oauth';
  if (input.linkUserId && input.linkUserId !== row.userId) {
    if (!row.createdUser) throw identityInUse();
    await adoptFreshAccount(db, { freshUserId: row.userId, linkUserId: input.linkUserId, client: input.client });
    return { userId: input.linkUserId, guest: false, method };
  }
  const user = await db.user.findUnique({ where: { id: row.userId }, select: { isGuest: true } });
  if (!user) throw invalidCode();
  return { userId: row.userId, guest: user.isGuest, method };
}

async function adoptFreshAccount(db: AccountDb, ids: { freshUserId: string; linkUserId: string; client: ClientInfo }): Promise<void> {
  await db.$transaction(async (tx) => {
    const fresh = await tx.user.findUnique({
      where: { id: ids.freshUserId },
      select: { identities: { select: { provider: true, subject: true, email: true, emailVerified: true } }, _count: { select: { sessions: true } } },
    });
    const target = await tx.user.findUnique({ where: { id: ids.linkUserId }, select: { id: true, isGuest: true, email: true } });
    const identity = fresh?.identities[0];
    // Anything but an untouched one-identity account means somebody else uses it: do not move.
    if (!fresh || !identity || fresh.identities.length !== 1 || fresh._count.sessions > 0 || !target) throw identityInUse();
    // The fresh account goes first, so its verified address is free for the target to take.
    await tx.user.delete({ where: { id: ids.freshUserId } });
    await emitEvent(tx, { type: 'user.deleted', data: { user_id: ids.freshUserId, reason: 'adopted' } });
    await attachIdentity(tx, target, { ...identity, provider: identity.provider as IdentityProvider, email: identity.email ?? undefined }, ids.client);
  });
}
