/**
 * Native sign-in with provider A (POST /auth/mobile/idpa): the app obtained an ID token from
 * provider A's own SDK; we verify it as an OpenID Connect relying party would (OIDC Core
 * §3.1.3.7), each rule one check:
 * - signature by a key from provider A's JWKS (discovered `jwks_uri`), asymmetric algorithms
 *   only (no `none`, no HMAC), and only those the provider advertises;
 * - `iss` is provider A's issuer;
 * - `aud` contains one of our client ids (native apps have their own), and with several
 *   audiences `azp` must be one of ours;
 * - `exp` in the future, `iat` present (small clock tolerance), and `iat` at most 10 minutes ago:
 *   an app trades its token as soon as the SDK hands it over, so an older one was kept or stolen;
 * - `nonce`: when the app sent one, the token must carry it; a token that carries one is
 *   accepted only with it (it was minted for a flow that binds the nonce to that app);
 * - used once: the token's hash is kept until the token expires (replay.ts).
 */
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { unauthorized } from '../../../common/errors.js';
import type { IdentityClaim } from '../../users/identities.js';
import { providerUnavailable, type OAuthProviders } from '../oauth/providers.js';

const CLOCK_TOLERANCE_SECONDS = 30;
/** The oldest `iat` accepted (docs/security.md, "Native ID tokens"). */
export const MAX_ID_TOKEN_AGE_SECONDS = 10 * 60;
const invalid = (why: string) => unauthorized(`The ID token is not valid: ${why}`, 'INVALID_ID_TOKEN');

/** Google issues both spellings of its issuer (its documentation says to accept either). */
function acceptedIssuers(issuer: string): string[] {
  return issuer === 'https://accounts.google.com' ? [issuer, 'accounts.google.com'] : [issuer];
}

/** The verified token's identity, and when the token expires (how long its use must be remembered). */
export async function verifyNativeIdToken(
  providers: OAuthProviders,
  input: { idToken: string; nonce: string | undefined; now: Date },
): Promise<{ claim: IdentityClaim; expiresAt: Date }> {
  const { issuer, keys, algorithms } = await providers.idTokenKeysA();
  const audiences = providers.config.idpa.mobileClientIds;
  // A key set that cannot be fetched (network, non-200, not a JWKS) is the provider failing: 502,
  // never a 401 that would blame the token. No matching key is the token's problem.
  let keysUnavailable = false;
  const getKey: typeof keys = async (header, token) => {
    try {
      return await keys(header, token);
    } catch (error) {
      if (!(error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWKSMultipleMatchingKeys)) keysUnavailable = true;
      throw error;
    }
  };
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(input.idToken, getKey, {
      issuer: acceptedIssuers(issuer),
      audience: audiences,
      algorithms,
      requiredClaims: ['sub', 'exp', 'iat'],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      currentDate: input.now,
    }));
  } catch (error) {
    if (keysUnavailable) throw providerUnavailable('Provider A did not serve its signing keys');
    if (error instanceof joseErrors.JOSEError) throw invalid(error.code.replace(/^ERR_/, '').toLowerCase());
    throw invalid('malformed');
  }
  if (Array.isArray(payload.aud) && payload.aud.length > 1 && !(typeof payload.azp === 'string' && audiences.includes(payload.azp))) {
    throw invalid('azp is not one of our clients');
  }
  if ((payload.iat as number) < input.now.getTime() / 1000 - MAX_ID_TOKEN_AGE_SECONDS - CLOCK_TOLERANCE_SECONDS)
    throw invalid('issued more than 10 minutes ago');
  if ((input.nonce !== undefined || payload.nonce !== undefined) && payload.nonce !== input.nonce) throw invalid('nonce mismatch');
  if (typeof payload.sub !== 'string' || payload.sub.length === 0 || payload.sub.length > 255) throw invalid('bad subject');
  const email = typeof payload.email === 'string' ? payload.email : undefined;
  return {
    claim: { provider: 'idpa', subject: payload.sub, email, emailVerified: email !== undefined && payload.email_verified === true },
    expiresAt: new Date((payload.exp as number) * 1000),
  };
}
