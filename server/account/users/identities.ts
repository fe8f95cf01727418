/**
 * Accounts and the identities that sign into them (provider + subject), shared by every
 * sign-in method. The rules (docs/api.md: "Guest upgrade", "Account self-service"):
 * - a known identity signs into its account;
 * - a caller with an access token keeps their account: a new identity is attached to it (a guest
 *   becomes a full account in place; a full account gains a method); an identity owned by another
 *   account → 409 IDENTITY_IN_USE and nothing moves;
 * - a new identity that asserts a *verified* e-mail joins the account holding that verified
 *   address; an unverified address never links;
 * - otherwise a new account is created.
 * And the account's tier (docs/security.md, "Accounts nothing vouches for"): an account is `full`
 * once an identity that vouches for a person (a verified e-mail, a provider's account) is on it;
 * until then a guest (device id only) or `unverified` (a wallet, a passkey), on guest terms. The
 * tier only rises.
 * Each change writes its webhook event in its own transaction (events/outbox.ts).
 */
import { randomUUID } from 'node:crypto';
import { getAddress } from 'viem';
import { conflict, unauthorized } from '../../common/errors.js';
import { Prisma, type AccountTier } from '../../generated/account/client.js';
import type { AccountDb } from '../store.js';
import { emitEvent } from '../events/outbox.js';
import { activityRow, type ClientInfo } from '../events/activity.js';

export type IdentityProvider = 'guest' | 'email' | 'idpa' | 'idpb' | 'wallet' | 'passkey';

export interface IdentityClaim {
  provider: IdentityProvider;
  subject: string;
  email?: string | undefined;
  emailVerified?: boolean | undefined;
  /** A passkey being registered: its credential is stored with its identity (auth/passkey). */
  passkey?: NewPasskey | undefined;
  /** The operator lets this method's identities vouch for a person (WALLET_ACCOUNTS=full). */
  vouches?: boolean | undefined;
  /** The credential proved two factors at once (a passkey with user verification): the session starts at `aal2` (auth/mfa/). */
  secondFactor?: boolean | undefined;
}

export interface NewPasskey {
  credentialId: string;
  publicKey: Buffer;
  counter: number;
  transports: string;
  name: string;
}

export interface SignedInUser {
  userId: string;
  /** Guest terms apply (the access token's `guest` claim): any tier but `full`. */
  guest: boolean;
  created: boolean;
}

/** Whether an identity vouches for a person: a verified e-mail, a provider's account, or the operator says so. */
export const identityVouches = (claim: Pick<IdentityClaim, 'provider' | 'emailVerified' | 'vouches'>): boolean =>
  claim.vouches === true || claim.emailVerified === true || claim.provider === 'idpa' || claim.provider === 'idpb';

export const onGuestTerms = (tier: AccountTier): boolean => tier !== 'full';

/** The tier of a new account whose first identity is `claim`. */
const tierOf = (claim: IdentityClaim): AccountTier => (claim.provider === 'guest' ? 'guest' : identityVouches(claim) ? 'full' : 'unverified');

export const identityInUse = () => conflict('This sign-in method already belongs to another account', 'IDENTITY_IN_USE');

const isUniqueViolation = (error: unknown) => error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002';

/** What a person recognises an identity by (GET /account): the address, the checksummed wallet, the provider's e-mail or id, the passkey's name. */
export function identityLabel(identity: { provider: string; subject: string; email: string | null; passkeyName?: string | null | undefined }): string {
  switch (identity.provider) {
    case 'wallet':
      try {
        return getAddress(identity.subject);
      } catch {
        return identity.subject;
      }
    case 'passkey':
      return identity.passkeyName ?? 'Passkey';
    case 'idpa':
    case 'idpb':
      return identity.email ?? identity.subject;
    default:
      return identity.subject;
  }
}

const identityData = (claim: IdentityClaim, now: Date) => ({
  id: randomUUID(),
  provider: claim.provider,
  subject: claim.subject,
  email: claim.email ?? null,
  emailVerified: claim.emailVerified ?? false,
  createdAt: now,
  lastUsedAt: now,
});

/**
 * Attaches a new identity to an existing account, in the caller's transaction, and logs it. A
 * guest's device identity is dropped (a device id is no credential beside a real one); the
 * account becomes `full` when the identity vouches, else a guest becomes `unverified`. An
 * identity that asserts a verified address held by another account → 409.
 */
export async function attachIdentity(
  tx: Prisma.TransactionClient,
  target: { id: string; tier: AccountTier; email: string | null },
  claim: IdentityClaim,
  client: ClientInfo,
  now = new Date(),
): Promise<SignedInUser> {
  const verifiedEmail = claim.emailVerified ? claim.email?.toLowerCase() : undefined;
  if (verifiedEmail) {
    const holder = await tx.user.findUnique({ where: { email: verifiedEmail }, select: { id: true } });
    if (holder && holder.id !== target.id) throw identityInUse();
  }
  const identity = await tx.identity.create({ data: { ...identityData(claim, now), userId: target.id }, select: { id: true } });
  await emitEvent(tx, { type: 'identity.linked', data: { user_id: target.id, identity_id: identity.id, method: claim.provider } }, now);
  if (claim.passkey) {
    const { credentialId, publicKey, counter, transports, name } = claim.passkey;
    await tx.passkeyCredential.create({
      data: {
        identityId: identity.id,
        userId: target.id,
        credentialId,
        publicKey: new Uint8Array(publicKey),
        counter: BigInt(counter),
        transports,
        name,
        createdAt: now,
      },
    });
    await tx.activityEvent.create({ data: activityRow(target.id, { type: 'passkey_added', detail: { name } }, client, now) });
  }
  if (target.tier === 'guest') await tx.identity.deleteMany({ where: { userId: target.id, provider: 'guest' } });
  const tier: AccountTier = identityVouches(claim) ? 'full' : target.tier === 'guest' ? 'unverified' : target.tier;
  if (tier !== target.tier || (verifiedEmail && !target.email)) {
    await tx.user.update({ where: { id: target.id }, data: { tier, ...(verifiedEmail && !target.email ? { email: verifiedEmail } : {}) } });
  }
  // Each step up the tiers (guest → unverified → full) is an upgrade.
  if (tier !== target.tier) await emitEvent(tx, { type: 'user.upgraded', data: { user_id: target.id, method: claim.provider, tier } }, now);
  const label = identityLabel({ ...claim, email: claim.email ?? null, passkeyName: claim.passkey?.name });
  await tx.activityEvent.create({ data: activityRow(target.id, { type: 'identity_linked', detail: { method: claim.provider, label } }, client, now) });
  return { userId: target.id, guest: onGuestTerms(tier), created: false };
}

/** `create: false` signs in only to an account that exists (undefined when none would be found). */
async function attempt(
  db: AccountDb,
  claim: IdentityClaim,
  targetUserId: string | undefined,
  client: ClientInfo,
  create: boolean,
): Promise<SignedInUser | undefined> {
  return db.$transaction(async (tx) => {
    const now = new Date();
    const known = await tx.identity.findUnique({
      where: { provider_subject: { provider: claim.provider, subject: claim.subject } },
      select: { id: true, user: { select: { id: true, tier: true } } },
    });
    if (known) {
      if (targetUserId && known.user.id !== targetUserId) throw identityInUse();
      await tx.identity.update({ where: { id: known.id }, data: { lastUsedAt: now } });
      return { userId: known.user.id, guest: onGuestTerms(known.user.tier), created: false };
    }
    if (targetUserId) {
      const target = await tx.user.findUnique({ where: { id: targetUserId }, select: { id: true, tier: true, email: true } });
      // The token was valid a moment ago; an account deleted since has nothing to link to.
      if (!target) throw unauthorized('The session has ended', 'SESSION_REVOKED');
      return attachIdentity(tx, target, claim, client, now);
    }
    const verifiedEmail = claim.emailVerified ? claim.email?.toLowerCase() : undefined;
    const holder = verifiedEmail ? await tx.user.findUnique({ where: { email: verifiedEmail }, select: { id: true, tier: true, email: true } }) : null;
    if (holder) return attachIdentity(tx, holder, claim, client, now);
    if (!create) return undefined;
    const user = await tx.user.create({
      data: { tier: tierOf(claim), email: verifiedEmail ?? null, identities: { create: identityData(claim, now) } },
      select: { id: true, tier: true },
    });
    await emitEvent(tx, { type: 'user.created', data: { user_id: user.id, guest: onGuestTerms(user.tier), tier: user.tier, method: claim.provider } }, now);
    return { userId: user.id, guest: onGuestTerms(user.tier), created: true };
  });
}

async function retried(db: AccountDb, claim: IdentityClaim, targetUserId: string | undefined, client: ClientInfo, create: boolean) {
  try {
    return await attempt(db, claim, targetUserId, client, create);
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    return attempt(db, claim, targetUserId, client, create);
  }
}

/**
 * Finds or creates the account for an identity, or attaches the identity to `targetUserId` (a
 * guest to upgrade, or a full account linking another method). Two first sign-ins of one
 * identity can race; the loser hits the unique index and retries, finding the winner's account
 * (or, when linking, 409 if the winner is someone else).
 */
export async function signInWithIdentity(db: AccountDb, claim: IdentityClaim, targetUserId: string | undefined, client: ClientInfo): Promise<SignedInUser> {
  return (await retried(db, claim, targetUserId, client, true))!;
}

/** `signInWithIdentity` without a target, that never creates an account: undefined when it would have. */
export const signInExisting = (db: AccountDb, claim: IdentityClaim, client: ClientInfo): Promise<SignedInUser | undefined> =>
  retried(db, claim, undefined, client, false);
