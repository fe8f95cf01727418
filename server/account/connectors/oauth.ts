/**
 * The MCP authorization of one connector, as the SDK's `auth()` drives it (protected resource
 * metadata from the 401's `WWW-Authenticate` (RFC 9728), authorization server metadata with the
 * OpenID fallback (RFC 8414), dynamic client registration (RFC 7591) or a client ID metadata
 * document, PKCE S256, the `resource` parameter (RFC 8707), scopes from the challenge, step-up on
 * `insufficient_scope`, refresh). This provider is where `auth()` keeps what it learns: the
 * client registration, the tokens and the discovery, as one JSON that the store keeps sealed
 * (connectors.ts). A browser step is never taken here: `redirectToAuthorization` only records the
 * provider's URL, which the account service later sends the user's browser to.
 */
import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/** What is sealed in `connectors.auth_encrypted`. */
export interface StoredAuth {
  client?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  discovery?: OAuthDiscoveryState;
}

export interface ConnectorOAuthOptions {
  /** `{BASE_URL}/api/v1/connectors/callback`. */
  redirectUrl: string;
  clientName: string;
  /** An https URL serving this client's metadata document, offered where the server supports them. */
  clientMetadataUrl?: string;
  /** Called whenever what is stored changed (tokens refreshed, a client registered). */
  onChange?: (auth: StoredAuth) => void | Promise<void>;
}

export class ConnectorOAuth implements OAuthClientProvider {
  /** The provider's authorization URL, once `auth()` decided the user must sign in. */
  authorizationUrl: URL | undefined;
  private verifier: string | undefined;
  private stateValue: string | undefined;

  constructor(
    readonly stored: StoredAuth,
    private readonly options: ConnectorOAuthOptions,
    /** A verifier saved from the authorization request, when finishing it. */
    verifier?: string,
  ) {
    this.verifier = verifier;
  }

  get redirectUrl(): string {
    return this.options.redirectUrl;
  }

  get clientMetadataUrl(): string | undefined {
    return this.options.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.options.clientName,
      redirect_uris: [this.options.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  }

  /** The `state` sent to the provider: random, and what the callback finds the sign-in by. */
  state(): string {
    this.stateValue ??= randomBytes(32).toString('base64url');
    return this.stateValue;
  }

  get currentState(): string | undefined {
    return this.stateValue;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.stored.client;
  }

  async saveClientInformation(client: OAuthClientInformationMixed): Promise<void> {
    this.stored.client = client;
    await this.options.onChange?.(this.stored);
  }

  tokens(): OAuthTokens | undefined {
    return this.stored.tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    // A refresh answer may leave the refresh token out: the one we have stays good (RFC 6749 §6).
    this.stored.tokens = { ...tokens, refresh_token: tokens.refresh_token ?? this.stored.tokens?.refresh_token };
    await this.options.onChange?.(this.stored);
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new Error('no PKCE verifier for this sign-in');
    return this.verifier;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'all' || scope === 'client') delete this.stored.client;
    if (scope === 'all' || scope === 'tokens') delete this.stored.tokens;
    if (scope === 'all' || scope === 'discovery') delete this.stored.discovery;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    await this.options.onChange?.(this.stored);
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.stored.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.stored.discovery;
  }
}
