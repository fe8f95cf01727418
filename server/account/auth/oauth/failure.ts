/**
 * Why a browser OAuth flow failed, as the `error` the web client's /auth/callback page reads.
 * The callback never answers with an error page: every failure is one of these codes.
 */
export type OAuthErrorCode =
  | 'access_denied' // the user declined at the provider
  | 'invalid_state' // state missing, unknown, replayed, expired, of another provider or another browser
  | 'provider_error' // the provider answered an error, garbage, an invalid ID token, or nothing
  | 'identity_in_use' // the identity belongs to another account than the guest being upgraded
  | 'not_configured' // the provider's settings are missing
  | 'rate_limited'
  | 'server_error'; // our own failure (logged)

export class OAuthFailure extends Error {
  override name = 'OAuthFailure';
  constructor(
    readonly code: OAuthErrorCode,
    /** For the log only; never sent to the browser. */
    readonly reason: string,
  ) {
    super(`${code}: ${reason}`);
  }
}
