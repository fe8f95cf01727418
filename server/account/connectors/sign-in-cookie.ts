/**
 * The cookie that ties a connector's sign-in to the browser of the account that asked for it
 * (docs/connectors.md, "Signing in"). The service sets it on the signed-in answer that hands out a
 * sign-in link (`connectors.create`, `connectors.signIn`), and the link's two browser steps,
 * `/connectors/{id}/authorize` and the callback, ask for it. Without it a link would work in any
 * browser: whoever opened a link someone sent them would grant their own account at the provider
 * to the sender's connector. Random, one per browser (each sign-in stores its hash, so a browser
 * may have several under way), HttpOnly, SameSite=Lax (sent on the provider's top-level redirect
 * back), Secure on https, scoped to BASE_URL's path, as long as a link lives.
 */
import { randomBytes } from 'node:crypto';
import { browserBindingAttributes } from '../auth/oauth/cookies.js';

export const SIGN_IN_COOKIE = 'connector_sign_in';

/** As long as a sign-in link is valid. */
export const SIGN_IN_TTL_MS = 10 * 60_000;

const VALUE = /^[\w-]{43}$/;

// BASE_URL's path itself: the web client asks for links over `/trpc` and the browser must send
// the cookie there too, or each link would get a new value and undo the one before.
const attributes = (baseUrl: string, maxAgeSeconds: number): string =>
  browserBindingAttributes(`${new URL(baseUrl).pathname.replace(/\/$/, '')}/`, baseUrl, maxAgeSeconds);

/** The browser's value from its cookie when it has a well-formed one, else a new one. */
export const browserBinding = (fromCookie: string | undefined): string =>
  fromCookie !== undefined && VALUE.test(fromCookie) ? fromCookie : randomBytes(32).toString('base64url');

export const signInCookie = (value: string, baseUrl: string) => `${SIGN_IN_COOKIE}=${value}; ${attributes(baseUrl, SIGN_IN_TTL_MS / 1000)}`;
