/**
 * The one-time auth code that carries a finished browser sign-in from the callback redirect to
 * POST /auth/exchange (spec: random, single use, 60 s). Only its SHA-256 is stored; consuming
 * it is one conditional UPDATE, so of concurrent exchanges exactly one succeeds.
 */
import { randomBytes } from 'node:crypto';
import { conflict, unauthorized } from '../../../common/errors.js';
import type { AccountDb } from '../../store.js';
import type { SignedInUser } from '../../users/identities.js';
import { sha256 } from './state.js';

export async function issueAuthCode(
  db: AccountDb,
  input: { userId: string; createdUser: boolean; now: Date; ttlSeconds: number },
): Promise<string> {
  const code = randomBytes(32).toString('base64url');
  await db.authCode.deleteMany({ where: { expiresAt: { lt: new Date(input.now.getTime() - 3600_000) } } });
  await db.authCode.create({
    data: { codeHash: sha256(code), userId: input.userId, createdUser: input.createdUser, expiresAt: new Date(input.now.getTime() + input.ttlSeconds * 1000) },
  });
  return code;
}

const invalidCode = () => unauthorized('The auth code is invalid, expired or already used', 'INVALID_AUTH_CODE');
const identityInUse = () => conflict('This sign-in method already belongs to another account', 'IDENTITY_IN_USE');

/**
 * Consumes the code and answers whose session to start. With a guest's token (docs/api.md,
 * Decisions: guest upgrade) the guest must end up as that user: either the callback already upgraded this
 * guest, or the callback created a fresh account for a new identity, which the guest then
 * adopts in place (the fresh, never-used account is removed). An identity of an older account
 * is never moved: 409 IDENTITY_IN_USE.
 */
export async function exchangeAuthCode(
  db: AccountDb,
  input: { code: string; now: Date; guestUserId: string | undefined },
): Promise<Pick<SignedInUser, 'userId' | 'guest'>> {
  if (input.code.length > 256) throw invalidCode();
  const codeHash = sha256(input.code);
  const { count } = await db.authCode.updateMany({
    where: { codeHash, usedAt: null, expiresAt: { gt: input.now } },
    data: { usedAt: input.now },
  });
  if (count !== 1) throw invalidCode();
  const row = await db.authCode.findUniqueOrThrow({ where: { codeHash }, select: { userId: true, createdUser: true } });
  if (input.guestUserId && input.guestUserId !== row.userId) {
    if (!row.createdUser) throw identityInUse();
    await adoptFreshAccount(db, { freshUserId: row.userId, guestUserId: input.guestUserId });
    return { userId: input.guestUserId, guest: false };
  }
  const user = await db.user.findUnique({ where: { id: row.userId }, select: { isGuest: true } });
  if (!user) throw invalidCode();
  return { userId: row.userId, guest: user.isGuest };
}

async function adoptFreshAccount(db: AccountDb, ids: { freshUserId: string; guestUserId: string }): Promise<void> {
  await db.$transaction(async (tx) => {
    const fresh = await tx.user.findUnique({
      where: { id: ids.freshUserId },
      select: { email: true, identities: { select: { id: true } }, _count: { select: { sessions: true } } },
    });
    const guest = await tx.user.findUnique({ where: { id: ids.guestUserId }, select: { isGuest: true } });
    // Anything but an untouched one-identity account means somebody else uses it: do not move.
    if (!fresh || fresh.identities.length !== 1 || fresh._count.sessions > 0 || !guest?.isGuest) throw identityInUse();
    await tx.identity.updateMany({ where: { userId: ids.freshUserId }, data: { userId: ids.guestUserId } });
    await tx.user.delete({ where: { id: ids.freshUserId } });
    await tx.identity.deleteMany({ where: { userId: ids.guestUserId, provider: 'guest' } });
    await tx.user.update({ where: { id: ids.guestUserId }, data: { isGuest: false, ...(fresh.email ? { email: fresh.email } : {}) } });
  });
}
