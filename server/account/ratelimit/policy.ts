/**
 * What the sign-in endpoints admit on top of their per-minute limits (docs/api.md, "Abuse limits"):
 * - sign-in mail: 5 a minute and 10 an hour per address, whatever the client, so that nobody
 *   floods an inbox (or our sender reputation) from rotating addresses;
 * - e-mail codes: 10 tries an hour per address across all its codes, whatever the client; then
 *   code entry pauses for the address (links still work);
 * - new guest accounts: GUEST_SIGNUPS_PER_DAY per client, and GUEST_SIGNUPS_PER_HOUR for the whole
 *   service (guests are free; each one can cost an agent and model calls).
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

const otherMethods = 'Signing in with e-mail, a provider or a wallet still works, and a device that already has a guest account can still sign in.';

/** One new guest taken from both caps; `release` gives it back when no guest was created after all. */
export interface NewGuestClaim {
  release(): Promise<void>;
}

/**
 * Takes one new guest from the caps of this client and of the service, or throws 429: the
 * service-wide cap as GUEST_SIGNUPS_PAUSED, the client's as RATE_LIMITED. Both counters are
 * taken at once (one round trip to Redis) and whatever was taken is given back on a refusal.
 */
export async function claimNewGuest(rateLimits: RateLimits, clientKey: string): Promise<NewGuestClaim> {
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
  if (caps[refused]![0] === 'guest.signups.hourly') {
    throw new AppError(
      429,
      'GUEST_SIGNUPS_PAUSED',
      `New guest accounts are paused for a while (too many sign-ups); try again in ${retryAfter['Retry-After']} s. ${otherMethods}`,
      retryAfter,
    );
  }
  throw new AppError(
    429,
    'RATE_LIMITED',
    `Too many new guest accounts from this network today; try again in ${retryAfter['Retry-After']} s. ${otherMethods}`,
    retryAfter,
  );
}
