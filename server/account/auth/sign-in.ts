/**
 * The one pipeline every verify endpoint ends in (e-mail, OAuth exchange, native ID token,
 * wallet, passkey): 1. settle whom the caller is (`signInTarget`: an access token names the
 * account a new identity attaches to — a guest to upgrade or a full account linking a method),
 * before any single-use credential is consumed, so a bad header (401) spends nothing; 2. the
 * method verifies its credential into an identity claim; 3. `completeSignIn` finds, creates or
 * links the account and opens a session. Guest upgrade and linking are therefore the same code.
 * A new account that nothing vouches for (a wallet's) is created under the new-guest caps.
 */
import type { RateLimits } from '../ratelimit/limits.js';
import { signUpCapped } from '../ratelimit/policy.js';
import type { AccountRequest } from '../request.js';
import type { AccountDb } from '../store.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import type { LinkTarget, TokenService } from '../tokens/service.js';
import { identityVouches, signInExisting, signInWithIdentity, type IdentityClaim, type SignedInUser } from '../users/identities.js';

export type SignInRequest = Pick<AccountRequest, 'authorization' | 'client' | 'ip' | 'afterAnswer'>;

export interface SignInCall {
  db: AccountDb;
  tokens: TokenService;
  request: SignInRequest;
  /** The new-account caps (GUEST_SIGNUPS_PER_*), counted per client. */
  rateLimits: RateLimits;
}

/** A procedure's context, as far as signing in reads it (the account's tRPC context has this shape). */
interface SignInContext {
  services: { store: { db: AccountDb }; tokens: TokenService; rateLimits: RateLimits };
  request: SignInRequest;
}

export const signInCall = (ctx: SignInContext): SignInCall => ({
  db: ctx.services.store.db,
  tokens: ctx.services.tokens,
  request: ctx.request,
  rateLimits: ctx.services.rateLimits,
});

export const signInTarget = (call: SignInCall): Promise<LinkTarget | undefined> => call.tokens.linkTarget(call.request.authorization);

export async function completeSignIn(call: SignInCall, claim: IdentityClaim, target: LinkTarget | undefined): Promise<TokenPair> {
  const { db, request, rateLimits } = call;
  // Without a target and a vouching identity, this sign-in may create an account on guest terms: it counts as a new guest.
  // (Only a wallet creates one: a passkey signs in only to the account that registered it.)
  const user =
    target || identityVouches(claim)
      ? await signInWithIdentity(db, claim, target?.userId, request.client)
      : await signUpCapped(rateLimits, rateLimits.clientKey(request.ip), 'wallet', (create) =>
          create ? signInWithIdentity(db, claim, undefined, request.client) : signInExisting(db, claim, request.client),
        );
  // A second factor already passed counts when the credential proved one, or when the account
  // linked the method from a session that had passed it — never across accounts (auth/mfa/).
  const secondFactor = claim.secondFactor === true || (target?.aal === 'aal2' && target.userId === user.userId);
  return openSession(call, user, claim.provider, secondFactor);
}

/**
 * For flows whose account is already settled (the OAuth exchange): just the session. What should
 * be ready for the user's first call (their agent: services.ts) starts once the answer is out, and
 * not at all for a session that waits for its second factor (TokenService.elevate starts it then).
 */
export async function openSession(
  call: SignInCall,
  user: Pick<SignedInUser, 'userId' | 'guest'> & { created?: boolean },
  method: string,
  secondFactor = false,
): Promise<TokenPair> {
  const { pair, aal } = await call.tokens.startSession(user, { client: call.request.client, method, secondFactor });
  if (aal !== 'aal1') call.request.afterAnswer(() => call.tokens.signedIn({ userId: user.userId, created: user.created ?? false }));
  return pair;
}
