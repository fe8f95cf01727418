/**
 * CAPTCHA settings (CAPTCHA_*), spread into the account service's config schema
 * (server/account/config.ts). Off unless CAPTCHA_PROVIDER is set; then the secret (for the
 * server-side check) and the site key (for the web client's widget) are required.
 */
import { z } from 'zod';
import { httpUrl, optionalString } from '../../common/config.js';

export type CaptchaProvider = 'turnstile' | 'hcaptcha';

/** Each provider's siteverify endpoint: a form-encoded POST of secret, response, remoteip → `{success}`. */
const SITEVERIFY: Record<CaptchaProvider, string> = {
  turnstile: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
  hcaptcha: 'https://api.hcaptcha.com/siteverify',
};

export const captchaEnv = {
  CAPTCHA_PROVIDER: optionalString
    .pipe(z.enum(['turnstile', 'hcaptcha']).optional())
    .meta({ description: 'guest sign-in and `POST /auth/login/email` then need a solved token in `x-captcha-response`', default: 'unset → no CAPTCHA' }),
  CAPTCHA_SECRET: optionalString.meta({ description: "the provider's secret key, for the server-side check", default: '— (required with `CAPTCHA_PROVIDER`)' }),
  CAPTCHA_SITE_KEY: optionalString
    .pipe(
      z
        .string()
        .regex(/^[\w-]{1,200}$/, 'must be the site key the provider gave')
        .optional(),
    )
    .meta({
      description: "the provider's site key; public, served to the web client by `GET /api/v1/auth/captcha`",
      default: '— (required with `CAPTCHA_PROVIDER`)',
      values: 'the site key the provider gave',
    }),
  CAPTCHA_VERIFY_URL: optionalString.pipe(httpUrl.optional()).meta({
    description: 'another endpoint with the same contract as the siteverify (tests run a local one)',
    default: "the provider's siteverify (`https://challenges.cloudflare.com/turnstile/v0/siteverify`, `https://api.hcaptcha.com/siteverify`)",
  }),
};

type CaptchaEnv = z.output<z.ZodObject<typeof captchaEnv>>;

export interface CaptchaConfig {
  provider: CaptchaProvider;
  secret: string;
  siteKey: string;
  verifyUrl: string;
}

/** Config errors of the CAPTCHA_* group, as [variable, message]. */
export function captchaProblems(env: CaptchaEnv): Array<[keyof CaptchaEnv, string]> {
  if (env.CAPTCHA_PROVIDER) {
    return (['CAPTCHA_SECRET', 'CAPTCHA_SITE_KEY'] as const).filter((name) => !env[name]).map((name) => [name, `is required when CAPTCHA_PROVIDER is set`]);
  }
  return (['CAPTCHA_SECRET', 'CAPTCHA_SITE_KEY', 'CAPTCHA_VERIFY_URL'] as const)
    .filter((name) => env[name])
    .map((name) => [name, 'has no effect without CAPTCHA_PROVIDER (turnstile or hcaptcha)']);
}

export function captchaConfig(env: CaptchaEnv): CaptchaConfig | undefined {
  if (!env.CAPTCHA_PROVIDER || !env.CAPTCHA_SECRET || !env.CAPTCHA_SITE_KEY) return undefined;
  return {
    provider: env.CAPTCHA_PROVIDER,
    secret: env.CAPTCHA_SECRET,
    siteKey: env.CAPTCHA_SITE_KEY,
    verifyUrl: env.CAPTCHA_VERIFY_URL ?? SITEVERIFY[env.CAPTCHA_PROVIDER],
  };
}
