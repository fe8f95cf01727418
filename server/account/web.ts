/**
 * Serves the built web client (client/web/dist) at the service root, with a strict CSP, and
 * falls back to index.html for client-side routes such as /auth/callback. API paths never fall
 * through to the page.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import type { CaptchaProvider } from './captcha/config.js';

export const WEB_DIST = fileURLToPath(new URL('../../client/web/dist/', import.meta.url));

/** Where each CAPTCHA widget loads its script and frame from (the providers' documented CSP). */
const CAPTCHA_ORIGINS: Record<CaptchaProvider, string> = {
  turnstile: 'https://challenges.cloudflare.com',
  hcaptcha: 'https://hcaptcha.com https://*.hcaptcha.com',
};

/** Same-origin only; with a CAPTCHA on, its provider's origins too (its widget is a script and a frame). */
export function webCsp(captcha?: CaptchaProvider): string {
  const extra = captcha ? ` ${CAPTCHA_ORIGINS[captcha]}` : '';
  return [
    "default-src 'self'",
    `script-src 'self'${extra}`,
    `style-src 'self'${captcha === 'hcaptcha' ? extra : ''}`,
    "img-src 'self' data: blob:",
    `connect-src 'self'${captcha === 'hcaptcha' ? extra : ''}`,
    ...(captcha ? [`frame-src${extra}`] : []),
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join('; ');
}

const NOT_PAGES = /^\/(api|trpc|\.well-known|dev)(\/|$)/;

/** Returns false when the client has not been built (`npm run build:web`). */
export function serveWebClient(app: Express, dist = WEB_DIST, captcha?: CaptchaProvider): boolean {
  const index = path.join(dist, 'index.html');
  if (!existsSync(index)) return false;
  const csp = webCsp(captcha);
  app.use((req, res, next) => {
    if (!NOT_PAGES.test(req.path)) res.setHeader('Content-Security-Policy', csp);
    next();
  });
  app.use(express.static(dist, { index: false, maxAge: '1h', immutable: false }));
  app.get(/.*/, (req, res, next) => {
    if (NOT_PAGES.test(req.path) || !req.accepts('html')) return next();
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(index);
  });
  return true;
}
