/**
 * The browser OAuth flow, start and callback, as plain functions with explicit inputs.
 *
 * start:    state + PKCE (S256) + nonce (provider A) → the provider's authorization URL.
 * callback: consume the state (single use, unexpired, this provider, this browser) → the
 *           provider's own error, if any → code exchange by openid-client (provider A: ID token
 *           checked for issuer, audience, nonce, expiry and its signature against the provider's
 *           JWKS) → the identity (provider + subject, e-mail and whether it is verified) →
 *           create or link the account (linked only to the account that started the flow:
 *           its token bound the state) → a one-time auth code, bound to this browser by a cookie.
 * The callback answers a redirect to the web client in every case, `?code=` or `?error=`.
 * Nothing is written for the account before the provider has fully answered.
 */
import * as client from 'openid-client';
import { AppError } from '../../../common/errors.js';
import type { Logger } from '../../../common/log.js';
import type { AccountDb } from '../../store.js';
import type { ClientInfo } from '../../events/activity.js';
import { signInWithIdentity, type IdentityClaim } from '../../users/identities.js';
import { issueAuthCode } from './codes.js';
import { OAuthFailure, type OAuthErrorCode } from './failure.js';
import type { OAuthProvider, OAuthProviders } from './providers.js';
import { consumeOAuthState, createOAuthState } from './state.js';

export interface FlowDeps {
  db: AccountDb;
  /** The browser that returns from the provider, for the activity log of a link. */
  client: ClientInfo;
  providers: OAuthProviders;
  frontendUrl: string;
  log: Logger;
}

export async function startAuthorization(
  deps: FlowDeps,
  input: { provider: OAuthProvider; linkUserId: string | undefined; now: Date },
): Promise<{ location: string; browserSecret: string }> {
  const configuration = await deps.providers.configuration(input.provider);
  const started = await createOAuthState(deps.db, input);
  const settings = input.provider === 'idpa' ? deps.providers.config.idpa : deps.providers.config.idpb;
  const pkce = input.provider === 'idpa' || deps.providers.config.idpb.pkce;
  const parameters: Record<string, string> = {
    redirect_uri: deps.providers.redirectUri(input.provider),
    scope: settings.scopes,
    state: started.state,
    ...(pkce ? { code_challenge: started.codeChallenge, code_challenge_method: 'S256' } : {}),
    ...(input.provider === 'idpa' ? { nonce: started.nonce } : {}),
  };
  return { location: client.buildAuthorizationUrl(configuration, parameters).href, browserSecret: started.browserSecret };
}

/** Provider's query parameters as received; only single string values are kept. */
export type CallbackParams = Record<string, string>;

export async function finishAuthorization(
  deps: FlowDeps,
  input: { provider: OAuthProvider; params: CallbackParams; browserSecret: string | undefined; now: Date; authCodeTtlSeconds: number },
): Promise<{ location: string; exchangeSecret?: string }> {
  // FRONTEND_URL may carry a path (https://example.com/app): append, never resolve.
  const landing = new URL(`${deps.frontendUrl}/auth/callback`);
  try {
    deps.providers.requireConfigured(input.provider);
    const state = await consumeOAuthState(deps.db, { provider: input.provider, state: input.params.state, browserSecret: input.browserSecret, now: input.now });
    if (input.params.error) {
      throw new OAuthFailure(
        input.params.error === 'access_denied' ? 'access_denied' : 'provider_error',
        `provider answered error=${input.params.error.slice(0, 100)}`,
      );
    }
    const claim = await identityFromProvider(deps.providers, input.provider, input.params, state);
    const user = await signInWithIdentity(deps.db, claim, state.linkUserId, deps.client);
    const { code, browserSecret } = await issueAuthCode(deps.db, {
      userId: user.userId,
      provider: input.provider,
      now: input.now,
      ttlSeconds: input.authCodeTtlSeconds,
    });
    landing.searchParams.set('code', code);
    return { location: landing.href, exchangeSecret: browserSecret };
  } catch (error) {
    const code = failureCode(error);
    if (code === 'server_error') deps.log.error({ err: error, provider: input.provider }, 'oauth callback failed');
    else
      deps.log.warn(
        { provider: input.provider, code, reason: error instanceof OAuthFailure ? error.reason : (error as Error).message },
        'oauth callback refused',
      );
    landing.searchParams.set('error', code);
  }
  return { location: landing.href };
}

/** The web client's /auth/callback page telling why a flow failed (`?error=`). */
export function failureLanding(frontendUrl: string, error: unknown): string {
  const landing = new URL(`${frontendUrl}/auth/callback`);
  landing.searchParams.set('error', failureCode(error));
  return landing.href;
}

function failureCode(error: unknown): OAuthErrorCode {
  if (error instanceof OAuthFailure) return error.code;
  if (error instanceof AppError) {
    if (error.appCode === 'IDENTITY_IN_USE') return 'identity_in_use';
    if (error.status === 503) return 'not_configured';
    if (error.status === 502) return 'provider_error';
    if (error.status === 429) return 'rate_limited';
  }
  return 'server_error';
}

/** Every failure while talking to the provider is the provider's: a bad answer is never half-used. */
async function identityFromProvider(
  providers: OAuthProviders,
  provider: OAuthProvider,
  params: CallbackParams,
  state: { codeVerifier: string; nonce: string },
): Promise<IdentityClaim> {
  const configuration = await providers.configuration(provider);
  const currentUrl = new URL(providers.redirectUri(provider));
  for (const [name, value] of Object.entries(params)) currentUrl.searchParams.set(name, value);
  try {
    return provider === 'idpa'
      ? await identityFromA(configuration, currentUrl, params.state as string, state)
      : await identityFromB(configuration, providers, currentUrl, params.state as string, state);
  } catch (error) {
    if (error instanceof OAuthFailure) throw error;
    throw new OAuthFailure('provider_error', error instanceof Error ? `${error.name}: ${error.message}` : 'unknown provider failure');
  }
}

async function identityFromA(
  configuration: client.Configuration,
  currentUrl: URL,
  expectedState: string,
  state: { codeVerifier: string; nonce: string },
): Promise<IdentityClaim> {
  const tokens = await client.authorizationCodeGrant(configuration, currentUrl, {
    pkceCodeVerifier: state.codeVerifier,
    expectedState,
    expectedNonce: state.nonce,
    idTokenExpected: true,
  });
  // openid-client has checked iss, aud (and azp), exp, iat, nonce and — with non-repudiation
  // checks on (providers.ts) — the signature against the provider's JWKS.
  const claims = tokens.claims();
  if (!claims?.sub) throw new OAuthFailure('provider_error', 'no ID token subject');
  let email = claims.email;
  let verified = claims.email_verified;
  if (typeof email !== 'string' && configuration.serverMetadata().userinfo_endpoint) {
    const info = await client.fetchUserInfo(configuration, tokens.access_token, claims.sub);
    email = info.email;
    verified = info.email_verified;
  }
  return { provider: 'idpa', subject: claims.sub, ...emailClaim(email, verified) };
}

async function identityFromB(
  configuration: client.Configuration,
  providers: OAuthProviders,
  currentUrl: URL,
  expectedState: string,
  state: { codeVerifier: string },
): Promise<IdentityClaim> {
  const b = providers.config.idpb;
  const tokens = await client.authorizationCodeGrant(configuration, currentUrl, { expectedState, ...(b.pkce ? { pkceCodeVerifier: state.codeVerifier } : {}) });
  const get = async (url: string): Promise<unknown> => {
    const headers = new Headers({ accept: 'application/json', 'user-agent': 'agent-accounts' });
    const res = await client.fetchProtectedResource(configuration, tokens.access_token, new URL(url), 'GET', undefined, headers);
    if (!res.ok) throw new OAuthFailure('provider_error', `${url} answered ${res.status}`);
    return res.json();
  };
  const user = await get(b.userUrl);
  if (typeof user !== 'object' || user === null) throw new OAuthFailure('provider_error', 'user-info is not an object');
  const fields = user as Record<string, unknown>;
  const subject = fields[b.subjectField];
  if (!((typeof subject === 'string' && subject.length > 0 && subject.length <= 255) || (typeof subject === 'number' && Number.isSafeInteger(subject)))) {
    throw new OAuthFailure('provider_error', `user-info has no usable "${b.subjectField}"`);
  }
  if (b.emailsUrl) {
    // GitHub-shaped: the e-mail list says which addresses are verified; take the primary one.
    const emails = await get(b.emailsUrl);
    const list = Array.isArray(emails) ? (emails as Array<Record<string, unknown>>) : [];
    const pick = list.find((e) => e.primary === true && e.verified === true) ?? list.find((e) => e.verified === true) ?? list.find((e) => e.primary === true);
    return { provider: 'idpb', subject: String(subject), ...emailClaim(pick?.email, pick?.verified) };
  }
  return { provider: 'idpb', subject: String(subject), ...emailClaim(fields.email, fields.email_verified) };
}

/** Only a well-formed address with an explicit `true` counts as verified. */
function emailClaim(email: unknown, verified: unknown): Pick<IdentityClaim, 'email' | 'emailVerified'> {
  if (typeof email !== 'string' || email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email)) return {};
  return { email, emailVerified: verified === true };
}
