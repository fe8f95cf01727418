/**
 * The two providers as openid-client Configurations (openid-client is a certified relying
 * party: we do not hand-roll OAuth).
 * - Provider A: OpenID Connect by discovery from IDPA_ISSUER. The discovery answer is cached
 *   once it succeeded; a failed discovery is not cached (the next request tries again) and
 *   answers 502.
 * - Provider B: plain OAuth 2 from fixed endpoint URLs (GitHub by default); no ID token.
 * Plain-http providers are only accepted on loopback (config.ts), and only then is
 * openid-client told to allow insecure requests.
 */
import { createRemoteJWKSet, type JWTVerifyGetKey } from 'jose';
import * as client from 'openid-client';
import { AppError } from '../../../common/errors.js';
import type { Logger } from '../../../common/log.js';
import { isLoopbackHttp, missingSettings, type OAuthConfig } from './config.js';

export type OAuthProvider = 'idpa' | 'idpb';

export const providerUnavailable = (detail: string) => new AppError(502, 'PROVIDER_UNAVAILABLE', detail);

export function notConfigured(provider: OAuthProvider | 'mobile', missing: string[]): AppError {
  const name = provider === 'idpb' ? 'Provider B' : 'Provider A';
  return new AppError(503, 'PROVIDER_NOT_CONFIGURED', `${name} is not configured: set ${missing.join(', ')}`);
}

/** Asymmetric JWS algorithms only: never `none`, never HMAC keyed with something public. */
export const ASYMMETRIC_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

export class OAuthProviders {
  private discoveredA: Promise<client.Configuration> | undefined;
  private jwksA: { uri: string; keys: JWTVerifyGetKey } | undefined;
  private configB: client.Configuration | undefined;

  constructor(
    readonly config: OAuthConfig,
    private readonly baseUrl: string,
    private readonly log: Logger,
  ) {}

  redirectUri(provider: OAuthProvider): string {
    return `${this.baseUrl}/api/v1/auth/oauth/${provider}/callback`;
  }

  /** Throws 503 naming the missing variables when the provider is not configured. */
  requireConfigured(provider: OAuthProvider | 'mobile'): void {
    const missing = missingSettings(this.config, provider);
    if (missing.length) throw notConfigured(provider, missing);
  }

  async configuration(provider: OAuthProvider): Promise<client.Configuration> {
    this.requireConfigured(provider);
    return provider === 'idpa' ? this.providerA() : this.providerB();
  }

  private providerA(): Promise<client.Configuration> {
    const a = this.config.idpa;
    this.discoveredA ??= client
      .discovery(new URL(a.issuer as string), a.clientId as string, a.clientSecret, undefined, {
        // Non-repudiation checks: the ID token's signature is verified against the provider's
        // JWKS even though it came straight from the token endpoint.
        execute: [client.enableNonRepudiationChecks, ...(isLoopbackHttp(a.issuer as string) ? [client.allowInsecureRequests] : [])],
        timeout: this.config.providerTimeoutSeconds,
      })
      .then((configuration) => {
        configuration.timeout = this.config.providerTimeoutSeconds;
        return configuration;
      })
      .catch((error: unknown) => {
        this.discoveredA = undefined;
        this.log.warn({ err: error, issuer: a.issuer }, 'provider A discovery failed');
        throw providerUnavailable('Provider A did not answer its discovery request');
      });
    return this.discoveredA;
  }

  private providerB(): client.Configuration {
    if (this.configB) return this.configB;
    const b = this.config.idpb;
    const configuration = new client.Configuration(
      {
        issuer: new URL(b.authorizeUrl).origin,
        authorization_endpoint: b.authorizeUrl,
        token_endpoint: b.tokenUrl,
        userinfo_endpoint: b.userUrl,
      },
      b.clientId as string,
      b.clientSecret,
    );
    configuration.timeout = this.config.providerTimeoutSeconds;
    if ([b.authorizeUrl, b.tokenUrl, b.userUrl].some(isLoopbackHttp)) client.allowInsecureRequests(configuration);
    this.configB = configuration;
    return configuration;
  }

  /** Provider A's signing keys (its discovered `jwks_uri`) and the algorithms it may use, for native ID tokens. */
  async idTokenKeysA(): Promise<{ issuer: string; keys: JWTVerifyGetKey; algorithms: string[] }> {
    this.requireConfigured('mobile');
    const a = this.config.idpa;
    // Mobile sign-in needs no client secret, so discovery here does not depend on one.
    const configuration = a.clientId && a.clientSecret ? await this.providerA() : await this.discoverPublic();
    const metadata = configuration.serverMetadata();
    if (!metadata.jwks_uri) throw providerUnavailable('Provider A publishes no jwks_uri');
    if (this.jwksA?.uri !== metadata.jwks_uri) {
      this.jwksA = {
        uri: metadata.jwks_uri,
        keys: createRemoteJWKSet(new URL(metadata.jwks_uri), { timeoutDuration: this.config.providerTimeoutSeconds * 1000 }),
      };
    }
    const advertised = metadata.id_token_signing_alg_values_supported ?? ['RS256'];
    return { issuer: metadata.issuer, keys: this.jwksA.keys, algorithms: advertised.filter((alg) => ASYMMETRIC_ALGS.includes(alg)) };
  }

  private discoverPublic(): Promise<client.Configuration> {
    const a = this.config.idpa;
    this.discoveredA ??= client
      .discovery(new URL(a.issuer as string), a.mobileClientIds[0] as string, undefined, client.None(), {
        execute: isLoopbackHttp(a.issuer as string) ? [client.allowInsecureRequests] : [],
        timeout: this.config.providerTimeoutSeconds,
      })
      .catch((error: unknown) => {
        this.discoveredA = undefined;
        this.log.warn({ err: error, issuer: a.issuer }, 'provider A discovery failed');
        throw providerUnavailable('Provider A did not answer its discovery request');
      });
    return this.discoveredA;
  }
}
