/**
 * Provider settings (IDPA_*, IDPB_*), spread into the account service's config schema
 * (server/account/config.ts) so that they are validated at start with everything else.
 *
 * Provider A is any OpenID Connect provider, configured by discovery from its issuer.
 * Provider B is an OAuth 2 provider with a user-info endpoint; every URL defaults to GitHub's.
 * A provider whose required settings are missing is "not configured": its endpoints answer 503
 * naming the missing variables, and the service still starts.
 */
import { z } from 'zod';
import { optionalString } from '../../../common/config.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** https anywhere; plain http only on loopback (local test providers), never across a network. */
const providerUrl = z.url({ protocol: /^https?$/ }).refine((value) => {
  const url = new URL(value);
  return url.protocol === 'https:' || LOOPBACK.has(url.hostname);
}, 'must be https (http only on loopback)');

const optionalUrl = optionalString.pipe(providerUrl.optional());
const list = (value: string | undefined) => (value ?? '').split(/[\s,]+/).filter(Boolean);

export const oauthEnv = {
  IDPA_ISSUER: optionalUrl.meta({
    description: "provider A's OpenID Connect issuer, found by discovery (`https://accounts.google.com`); http only on loopback",
    default: 'unset → provider A off (503)',
  }),
  IDPA_CLIENT_ID: optionalString.meta({ description: "provider A's web client id", default: 'unset → browser flow off' }),
  IDPA_CLIENT_SECRET: optionalString.meta({ description: "provider A's web client secret", default: 'unset → browser flow off' }),
  IDPA_SCOPES: optionalString.meta({ description: 'scopes asked of provider A', default: '`openid email profile`', values: 'space-separated scopes' }),
  IDPA_MOBILE_CLIENT_IDS: optionalString.meta({
    description: 'client ids of the native apps whose ID tokens `POST /auth/mobile/idpa` accepts (`IDPA_CLIENT_ID` is always accepted too)',
    values: 'comma-separated client ids',
  }),
  IDPB_AUTHORIZE_URL: optionalUrl.meta({ description: "provider B's authorization endpoint", default: '`https://github.com/login/oauth/authorize`' }),
  IDPB_TOKEN_URL: optionalUrl.meta({ description: "provider B's token endpoint", default: '`https://github.com/login/oauth/access_token`' }),
  IDPB_USER_URL: optionalUrl.meta({ description: 'user-info endpoint (a JSON object holding the subject)', default: '`https://api.github.com/user`' }),
  IDPB_EMAILS_URL: optionalString.pipe(z.union([z.literal('none'), providerUrl]).optional()).meta({
    description: 'GitHub-shaped `[{email, primary, verified}]` list; `none`: trust only a user-info `email` with `email_verified: true`',
    default: '`https://api.github.com/user/emails`',
    values: 'https URL (http on loopback) or `none`',
  }),
  IDPB_CLIENT_ID: optionalString.meta({ description: "provider B's OAuth app client id", default: 'unset → provider B off (503)' }),
  IDPB_CLIENT_SECRET: optionalString.meta({ description: "provider B's OAuth app client secret", default: 'unset → provider B off (503)' }),
  IDPB_SCOPES: optionalString.meta({ description: 'scopes asked of provider B', default: '`read:user user:email`', values: 'space-separated scopes' }),
  IDPB_SUBJECT_FIELD: optionalString
    .pipe(
      z
        .string()
        .regex(/^\w{1,64}$/, 'must be a field name')
        .optional(),
    )
    .meta({ description: "user-info field that identifies the person (GitHub's numeric id: logins can be renamed)", default: '`id`', values: 'a field name' }),
  IDPB_PKCE: optionalString
    .pipe(z.enum(['true', 'false']).optional())
    .meta({ description: 'send PKCE (S256); `false` for providers that refuse it', default: '`true`' }),
  /** The contract's 60 s is also the ceiling (tests shorten it). */
  AUTH_CODE_TTL_SECONDS: z
    .preprocess((v) => (v === '' || v === undefined ? 60 : v), z.coerce.number().int().min(1).max(60))
    .describe('lifetime in seconds of the one-time code an OAuth callback hands the web client for `POST /auth/exchange`'),
  OAUTH_PROVIDER_TIMEOUT_SECONDS: z
    .preprocess((v) => (v === '' || v === undefined ? 10 : v), z.coerce.number().int().min(1).max(60))
    .describe('timeout in seconds of each call to a provider'),
};

type OAuthEnv = z.output<z.ZodObject<typeof oauthEnv>>;

export interface ProviderAConfig {
  issuer: string | undefined;
  clientId: string | undefined;
  clientSecret: string | undefined;
  scopes: string;
  /** Audiences accepted on POST /auth/mobile/idpa: the native apps' client ids (+ the web client id). */
  mobileClientIds: string[];
}

export interface ProviderBConfig {
  authorizeUrl: string;
  tokenUrl: string;
  userUrl: string;
  emailsUrl: string | undefined;
  clientId: string | undefined;
  clientSecret: string | undefined;
  scopes: string;
  subjectField: string;
  pkce: boolean;
}

export interface OAuthConfig {
  idpa: ProviderAConfig;
  idpb: ProviderBConfig;
  authCodeTtlSeconds: number;
  providerTimeoutSeconds: number;
}

export function oauthConfig(env: OAuthEnv): OAuthConfig {
  return {
    idpa: {
      issuer: env.IDPA_ISSUER?.replace(/\/$/, ''),
      clientId: env.IDPA_CLIENT_ID,
      clientSecret: env.IDPA_CLIENT_SECRET,
      scopes: env.IDPA_SCOPES ?? 'openid email profile',
      mobileClientIds: [...new Set([...list(env.IDPA_MOBILE_CLIENT_IDS), ...(env.IDPA_CLIENT_ID ? [env.IDPA_CLIENT_ID] : [])])],
    },
    idpb: {
      authorizeUrl: env.IDPB_AUTHORIZE_URL ?? 'https://github.com/login/oauth/authorize',
      tokenUrl: env.IDPB_TOKEN_URL ?? 'https://github.com/login/oauth/access_token',
      userUrl: env.IDPB_USER_URL ?? 'https://api.github.com/user',
      emailsUrl: env.IDPB_EMAILS_URL === 'none' ? undefined : (env.IDPB_EMAILS_URL ?? 'https://api.github.com/user/emails'),
      clientId: env.IDPB_CLIENT_ID,
      clientSecret: env.IDPB_CLIENT_SECRET,
      scopes: env.IDPB_SCOPES ?? 'read:user user:email',
      subjectField: env.IDPB_SUBJECT_FIELD ?? 'id',
      pkce: env.IDPB_PKCE !== 'false',
    },
    authCodeTtlSeconds: env.AUTH_CODE_TTL_SECONDS,
    providerTimeoutSeconds: env.OAUTH_PROVIDER_TIMEOUT_SECONDS,
  };
}

/** The variables a provider still needs, for the 503 body; empty when it is configured. */
export function missingSettings(config: OAuthConfig, provider: 'idpa' | 'idpb' | 'mobile'): string[] {
  if (provider === 'idpb') {
    return [...(config.idpb.clientId ? [] : ['IDPB_CLIENT_ID']), ...(config.idpb.clientSecret ? [] : ['IDPB_CLIENT_SECRET'])];
  }
  const a = config.idpa;
  if (provider === 'mobile') {
    return [...(a.issuer ? [] : ['IDPA_ISSUER']), ...(a.mobileClientIds.length ? [] : ['IDPA_MOBILE_CLIENT_IDS'])];
  }
  return [...(a.issuer ? [] : ['IDPA_ISSUER']), ...(a.clientId ? [] : ['IDPA_CLIENT_ID']), ...(a.clientSecret ? [] : ['IDPA_CLIENT_SECRET'])];
}

export function isLoopbackHttp(url: string): boolean {
  const parsed = new URL(url);
  return parsed.protocol === 'http:' && LOOPBACK.has(parsed.hostname);
}
