/**
 * The cookie that binds an OAuth transaction to the browser that started it (docs/api.md, "Provider A and B"):
 * random value (its hash is stored with the state), HttpOnly, SameSite=Lax (sent on the
 * provider's top-level redirect back to us, not on cross-site subrequests), Secure on https,
 * scoped to the provider's OAuth path, and only as long-lived as the state itself.
 */
import { STATE_TTL_SECONDS } from './state.js';
import type { OAuthProvider } from './providers.js';

export const bindingCookieName = (provider: OAuthProvider) => `oauth_${provider}`;

/**
 * The attributes of every cookie that binds a flow to a browser (this OAuth one, the exchange code's,
 * a connector's sign-in: connectors/sign-in-cookie.ts): HttpOnly, SameSite=Lax, Secure on https.
 */
export const browserBindingAttributes = (path: string, baseUrl: string, maxAgeSeconds: number): string =>
  [`Path=${path}`, 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAgeSeconds}`, ...(baseUrl.startsWith('https:') ? ['Secure'] : [])].join('; ');

const attributes = (provider: OAuthProvider, baseUrl: string, maxAge: number): string =>
  browserBindingAttributes(`${new URL(baseUrl).pathname.replace(/\/$/, '')}/api/v1/auth/oauth/${provider}`, baseUrl, maxAge);

export const bindingCookie = (provider: OAuthProvider, value: string, baseUrl: string) =>
  `${bindingCookieName(provider)}=${value}; ${attributes(provider, baseUrl, STATE_TTL_SECONDS)}`;

export const clearedBindingCookie = (provider: OAuthProvider, baseUrl: string) => `${bindingCookieName(provider)}=; ${attributes(provider, baseUrl, 0)}`;

/** `Cookie: a=1; b=2` → {a: '1', b: '2'}; the first of duplicate names wins (the most specific path). */
export function parseCookies(header: string | undefined): Record<string, string> {
  const cookies: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (name && !(name in cookies)) cookies[name] = part.slice(eq + 1).trim();
  }
  return cookies;
}

/**
 * The cookie that binds a one-time auth code to the browser the callback answered (codes.ts). Path=/ because the web
 * client exchanges over tRPC (`/trpc/…`) and API clients at `/api/v1/auth/exchange`; HttpOnly, SameSite=Lax, as long as the code.
 */
export const EXCHANGE_COOKIE = 'oauth_exchange';

const exchangeAttributes = (baseUrl: string, maxAge: number) => browserBindingAttributes('/', baseUrl, maxAge);

export const exchangeCookie = (value: string, baseUrl: string, ttlSeconds: number) => `${EXCHANGE_COOKIE}=${value}; ${exchangeAttributes(baseUrl, ttlSeconds)}`;

export const clearedExchangeCookie = (baseUrl: string) => `${EXCHANGE_COOKIE}=; ${exchangeAttributes(baseUrl, 0)}`;
