/**
 * Accounts and the identities that sign into them (provider + subject), shared by every
 * sign-in method. The rules (docs/api.md, Decisions: "Guest upgrade"):
 * - a known identity signs into its account;
 * - a guest who signs in with a new identity keeps their account: the identity is attached in
 *   place and the guest flag cleared; an identity owned by another account → 409 IDENTITY_IN_USE;
 * - a new identity that asserts a *verified* e-mail joins the account holding that verified
 *   address; an unverified address never links;
 * - otherwise a new account is created.
 */
import { conflict } from '../../common/errors.js';
import { Prisma } from '../../generated/account/client.js';
import type { AccountDb } from '../store.js';

export type IdentityProvider = 'guest' | 'email' | 'idpa' | 'idpb' | 'wallet';

export interface IdentityClaim {
  provider: IdentityProvider;
  subject: string;
  email?: string | undefined;
  emailVerified?: boolean | undefined;
}

export interface SignedInUser {
  userId: string;
  guest: boolean;
  created: boolean;
}

const identityInUse = () => conflict('This sign-in method already belongs to another account', 'IDENTITY_IN_USE');

const isUniqueViolation = (error: unknown) => error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002';

/** The guest's own device identity is dropped on upgrade: a device id is no credential for a full account. */
async function upgradeGuest(tx: Prisma.TransactionClient, guestUserId: string, claim: IdentityClaim): Promise<SignedInUser> {
  const verifiedEmail = claim.emailVerified ? claim.email?.toLowerCase() : undefined;
  if (verifiedEmail) {
    const holder = await tx.user.findUnique({ where: { email: verifiedEmail }, select: { id: true } });
    if (holder && holder.id !== guestUserId) throw identityInUse();
  }
  await tx.identity.create({ data: { userId: guestUserId, provider: claim.provider, subject: claim.subject, email: claim.email ?? null, emailVerified: claim.emailVerified ?? false } });
  await tx.identity.deleteMany({ where: { userId: guestUserId, provider: 'guest' } });
  await tx.user.update({ where: { id: guestUserId }, data: { isGuest: false, ...(verifiedEmail ? { email: verifiedEmail } : {}) } });
  return { userId: guestUserId, guest: false, created: false };
}

async function attempt(db: AccountDb, claim: IdentityClaim, guestUserId: string | undefined): Promise<SignedInUser> {
  return db.$transaction(async (tx) => {
    const known = await tx.identity.findUnique({
      where: { provider_subject: { provider: claim.provider, subject: claim.subject } },
      select: { user: { select: { id: true, isGuest: true } } },
    });
    if (known) {
      if (guestUserId && known.user.id !== guestUserId) throw identityInUse();
      return { userId: known.user.id, guest: known.user.isGuest, created: false };
    }
    if (guestUserId) {
      const guest = await tx.user.findUnique({ where: { id: guestUserId }, select: { isGuest: true } });
      if (guest?.isGuest) return upgradeGuest(tx, guestUserId, claim);
    }
    const verifiedEmail = claim.emailVerified ? claim.email?.toLowerCase() : undefined;
    const holder = verifiedEmail ? await tx.user.findUnique({ where: { email: verifiedEmail }, select: { id: true, isGuest: true } }) : null;
    const identity = { provider: claim.provider, subject: claim.subject, email: claim.email ?? null, emailVerified: claim.emailVerified ?? false };
    if (holder) {
      await tx.identity.create({ data: { ...identity, userId: holder.id } });
      return { userId: holder.id, guest: holder.isGuest, created: false };
    }
    const user = await tx.user.create({
      data: { isGuest: claim.provider === 'guest', email: verifiedEmail ?? null, identities: { create: identity } },
      select: { id: true, isGuest: true },
    });
    return { userId: user.id, guest: user.isGuest, created: true };
  });
}

/**
 * Finds or creates the account for an identity. Two first sign-ins of one identity can race;
 * the loser hits the unique index and simply retries, finding the winner's account.
 */
export async function signInWithIdentity(db: AccountDb, claim: IdentityClaim, guestUserId?: string): Promise<SignedInUser> {
  try {
    return await attempt(db, claim, guestUserId);
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    return attempt(db, claim, guestUserId);
  }
}
