/**
 * The server-side CAPTCHA check (Turnstile or hCaptcha; both speak the same siteverify contract):
 * the client solves the widget and sends its token in `x-captcha-response`; we POST it,
 * form-encoded with our secret and the client's address, to the provider, which answers
 * `{"success": true|false, "error-codes": [...]}`. A token is good for one check.
 *
 * Failures a client can fix are 400 (`CAPTCHA_REQUIRED`: no token; `CAPTCHA_INVALID`: refused);
 * the provider out of reach, or refusing our own secret, is 503 `CAPTCHA_UNAVAILABLE` — closed,
 * because an open door on outage is what an attacker would wait for.
 */
import { z } from 'zod';
import { AppError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { CaptchaConfig } from './config.js';

/** Tokens are up to 2048 characters (Turnstile's documented maximum); longer is not a token. */
const MAX_TOKEN_LENGTH = 2048;
/** A sign-in should not hang on the provider; both answer in well under a second. */
const TIMEOUT_MS = 5_000;
/** Error codes about our request, not the client's token: a misconfiguration, logged as one. */
const OUR_FAULT = new Set(['missing-input-secret', 'invalid-input-secret', 'sitekey-secret-mismatch', 'internal-error']);

const SiteverifyAnswer = z.object({ success: z.boolean(), 'error-codes': z.array(z.string()).optional() });

/** What the web client needs to render the widget (GET /auth/captcha). */
export const CaptchaPublicConfig = z.object({
  provider: z.enum(['turnstile', 'hcaptcha']).nullable(),
  site_key: z.string().nullable(),
});

export class Captcha {
  constructor(
    private readonly config: CaptchaConfig,
    private readonly log: Logger,
  ) {}

  get publicConfig(): z.output<typeof CaptchaPublicConfig> {
    return { provider: this.config.provider, site_key: this.config.siteKey };
  }

  /** Resolves when the provider vouches for `token`; throws the AppError to answer otherwise. */
  async check(token: string | undefined, remoteIp: string): Promise<void> {
    if (!token) throw new AppError(400, 'CAPTCHA_REQUIRED', 'Complete the CAPTCHA check and send its token in the x-captcha-response header');
    if (token.length > MAX_TOKEN_LENGTH) throw invalid();
    const form = new URLSearchParams({ secret: this.config.secret, response: token, remoteip: remoteIp });
    // hCaptcha checks that the token was solved for our site key when told which one it is.
    if (this.config.provider === 'hcaptcha') form.set('sitekey', this.config.siteKey);
    let answer: z.output<typeof SiteverifyAnswer>;
    try {
      const res = await fetch(this.config.verifyUrl, { method: 'POST', body: form, signal: AbortSignal.timeout(TIMEOUT_MS) });
      if (!res.ok) throw new Error(`siteverify answered ${res.status}`);
      answer = SiteverifyAnswer.parse(await res.json());
    } catch (error) {
      this.log.warn({ err: error, provider: this.config.provider }, 'CAPTCHA check failed: provider unreachable');
      throw unavailable();
    }
    if (answer.success) return;
    const codes = answer['error-codes'] ?? [];
    if (codes.some((code) => OUR_FAULT.has(code))) {
      this.log.error({ provider: this.config.provider, codes }, 'CAPTCHA provider refused our request: check CAPTCHA_SECRET and CAPTCHA_SITE_KEY');
      throw unavailable();
    }
    throw invalid();
  }
}

const invalid = () => new AppError(400, 'CAPTCHA_INVALID', 'The CAPTCHA check was not passed or has expired; solve it again');
const unavailable = () => new AppError(503, 'CAPTCHA_UNAVAILABLE', 'The CAPTCHA check cannot be made right now; try again shortly', { 'Retry-After': '5' });
