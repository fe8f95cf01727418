/**
 * The browser OAuth transaction (RFC 6749 §10.12 CSRF, RFC 7636 PKCE, OIDC nonce).
 *
 * Start: random `state`, PKCE verifier and `nonce`; a random browser-binding secret goes into a
 * short-lived HttpOnly cookie. Only hashes of `state` and of the binding are stored (with the
 * verifier, nonce and the guest to upgrade, if any), so a read of the table cannot complete a
 * flow.
 * Callback: the state row is deleted before anything else happens (single use even under
 * concurrent replays: only the request whose delete removed the row goes on), then it must be unexpired, of this provider, and bound to this browser.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as client from 'openid-client';
import type { AccountDb } from '../../store.js';
import { OAuthFailure } from './failure.js';
import type { OAuthProvider } from './providers.js';

export const STATE_TTL_SECONDS = 600;

export const sha256 = (value: string) => createHash('sha256').update(value).digest('base64url');

export interface StartedState {
  state: string;
  /** The cookie value that binds the transaction to this browser. */
  browserSecret: string;
  codeVerifier: string;
  codeChallenge: string;
  nonce: string;
}

export async function createOAuthState(db: AccountDb, input: { provider: OAuthProvider; linkUserId: string | undefined; now: Date }): Promise<StartedState> {
  const state = client.randomState();
  const browserSecret = randomBytes(32).toString('base64url');
  const codeVerifier = client.randomPKCECodeVerifier();
  const nonce = client.randomNonce();
  // Abandoned transactions are swept here, so the table stays small without a timer.
  await db.oAuthState.deleteMany({ where: { expiresAt: { lt: input.now } } });
  await db.oAuthState.create({
    data: {
      stateHash: sha256(state),
      provider: input.provider,
      codeVerifier,
      nonce,
      browserHash: sha256(browserSecret),
      guestUserId: input.linkUserId ?? null,
      expiresAt: new Date(input.now.getTime() + STATE_TTL_SECONDS * 1000),
    },
  });
  return { state, browserSecret, codeVerifier, codeChallenge: await client.calculatePKCECodeChallenge(codeVerifier), nonce };
}

export interface ConsumedState {
  codeVerifier: string;
  nonce: string;
  linkUserId: string | undefined;
}

const sameHash = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** Reads and deletes the transaction; any mismatch → OAuthFailure('invalid_state'). */
export async function consumeOAuthState(
  db: AccountDb,
  input: { provider: OAuthProvider; state: string | undefined; browserSecret: string | undefined; now: Date },
): Promise<ConsumedState> {
  if (!input.state || input.state.length > 512) throw new OAuthFailure('invalid_state', 'missing or malformed state');
  const stateHash = sha256(input.state);
  const row = await db.oAuthState.findUnique({ where: { stateHash } });
  // Whoever deletes the row owns the transaction: of concurrent replays exactly one gets past here.
  const { count } = await db.oAuthState.deleteMany({ where: { stateHash } });
  if (!row || count !== 1) throw new OAuthFailure('invalid_state', 'unknown or already used state');
  if (row.provider !== input.provider) throw new OAuthFailure('invalid_state', 'state of another provider');
  if (row.expiresAt.getTime() <= input.now.getTime()) throw new OAuthFailure('invalid_state', 'expired state');
  if (!input.browserSecret || !sameHash(sha256(input.browserSecret), row.browserHash)) {
    throw new OAuthFailure('invalid_state', 'state not bound to this browser');
  }
  return { codeVerifier: row.codeVerifier, nonce: row.nonce, linkUserId: row.guestUserId ?? undefined };
}
