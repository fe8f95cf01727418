/**
 * What the sign-in endpoints admit on top of their per-minute limits (docs/api.md, "Abuse limits"):
 * - sign-in mail: 5 a minute and 10 an hour per address, whatever the client, so that nobody
 *   floods an inbox (or our sender reputation) from rotating addresses;
 * - e-mail codes: 10 tries an hour per address across all its codes, whatever the client; then
 *   code entry pauses for the address (links still work);
 * - new accounts that nothing vouches for (guests, and wallet-only accounts unless
 *   WALLET_ACCOUNTS=full): GUEST_SIGNUPS_PER_DAY per client, and GUEST_SIGNUPS_PER_HOUR for the
 *   whole service (they are free; each one can cost an agent and model calls).
 * Counted in `RateLimits`, so in Redis when REDIS_URL is set.
 */
import { AppError } from '../../common/errors.js';
import type { RateLimitName, RateLimits } from './limits.js';

export async function admitSignInMail(rateLimits: RateLimits, email: string): Promise<void> {
  // Before any lookup of the address: the answer is the same for known and unknown addresses.
  await rateLimits.consume('auth.login.email.address', email);
  await rateLimits.consume('auth.login.email.address.hourly', email);
}

/** A code being tried; a right one gives its count back (only wrong guesses are budgeted). */
export interface CodeGuess {
  right(): Promise<void>;
}

/**
 * Counts one code tried for `email` before it is checked, so that concurrent guesses cannot pass
 * the budget; over it → 429 CODE_ENTRY_PAUSED with Retry-After, the same for known and unknown
 * addresses. A new mail does not reset the count (docs/security.md, "E-mail codes: no lockout,
 * no guessing").
 */
export async function admitCodeGuess(rateLimits: RateLimits, email: string): Promise<CodeGuess> {
  const name = 'auth.verify.code.address.hourly';
  try {
    await rateLimits.consume(name, email);
  } catch (error) {
    if (!(error instanceof AppError) || error.status !== 429) throw error;
    const retryAfter = error.headers['Retry-After'] ?? '60';
    throw new AppError(
      429,
      'CODE_ENTRY_PAUSED',
      `Too many wrong codes for this address: code entry is paused for ${retryAfter} s. The link in the sign-in mail still works.`,
      { 'Retry-After': retryAfter },
    );
  }
  return { right: () => rateLimits.refund(name, email) };
}

/** What a refused new account is: a guest (POST /auth/guest) or an account created by a wallet. */
export type NewAccountKind = 'guest' | 'wallet';

const refusal = {
  guest: {
    what: 'New guest accounts',
    otherMethods: 'Signing in with e-mail, a provider or a wallet still works, and a device that already has a guest account can still sign in.',
  },
  wallet: {
    what: 'New wallet accounts',
    otherMethods: 'Signing in with e-mail or a provider still works, and a wallet that already has an account can still sign in.',
  },
} as const;

/** One new account taken from both caps; `release` gives it back when no account was created after all. */
export interface NewAccountClaim {
  release(): Promise<void>;
}

/**
 * Takes one new account from the caps of this client and of the service, or throws 429: the
 * service-wide cap as GUEST_SIGNUPS_PAUSED, the client's as RATE_LIMITED. Both counters are
 * taken at once (one round trip to Redis) and whatever was taken is given back on a refusal.
 */
export async function claimNewAccount(rateLimits: RateLimits, clientKey: string, kind: NewAccountKind): Promise<NewAccountClaim> {
  // The service-wide cap first: when both refuse, "paused" is the truer answer.
  const caps: Array<[RateLimitName, string]> = [
    ['guest.signups.hourly', 'service'],
    ['guest.signups.client.daily', clientKey],
  ];
  const results = await Promise.allSettled(caps.map(([name, key]) => rateLimits.consume(name, key)));
  const taken = caps.filter((_, i) => results[i]!.status === 'fulfilled');
  const release = async () => {
    await Promise.all(taken.map(([name, key]) => rateLimits.refund(name, key)));
  };
  const refused = results.findIndex((result) => result.status === 'rejected');
  if (refused < 0) return { release };
  await release();
  const reason = (results[refused] as PromiseRejectedResult).reason as unknown;
  if (!(reason instanceof AppError) || reason.status !== 429) throw reason;
  const retryAfter = { 'Retry-After': reason.headers['Retry-After'] ?? '60' };
  const { what, otherMethods } = refusal[kind];
  if (caps[refused]![0] === 'guest.signups.hourly') {
    throw new AppError(
      429,
      'GUEST_SIGNUPS_PAUSED',
      `${what} are paused for a while (too many sign-ups); try again in ${retryAfter['Retry-After']} s. ${otherMethods}`,
      retryAfter,
    );
  }
  throw new AppError(
    429,
    'RATE_LIMITED',
    `Too many ${what.toLowerCase()} from this network today; try again in ${retryAfter['Retry-After']} s. ${otherMethods}`,
    retryAfter,
  );
}

/**
 * A sign-in that may create an account, under the new-account caps: `signIn(true)` signs in or
 * creates; `signIn(false)` signs in only to an account that exists (undefined otherwise). The caps
 * are claimed first and given back when no account was created, so returning users never count;
 * when a cap refuses, a returning user still signs in.
 */
export async function signUpCapped<T extends { created: boolean }>(
  rateLimits: RateLimits,
  clientKey: string,
  kind: NewAccountKind,
  signIn: (create: boolean) => Promise<T | undefined>,
): Promise<T> {
  let claim: NewAccountClaim;
  try {
    claim = await claimNewAccount(rateLimits, clientKey, kind);
  } catch (refused) {
    const returning = await signIn(false);
    if (returning) return returning;
    throw refused;
  }
  let result: T | undefined;
  try {
    result = await signIn(true);
    if (!result) throw new Error('a sign-in that may create an account found none');
    return result;
  } finally {
    // A refund that fails leaves one account too many counted; the sign-in itself stands.
    if (!result?.created) await claim.release().catch(() => undefined);
  }
}
