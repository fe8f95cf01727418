/**
 * E-mail sign-in (spec: POST /auth/login/email, POST /auth/verify-magic-link; docs/api.md:
 * "E-mail sign-in", and "Decisions" on guest upgrade).
 *
 * Request: the same work for every well-formed address — store a fresh code, queue one mail —
 * and the same answer. Nothing looks the address up (the account is created at the first
 * successful verification), so known and unknown addresses take the same path, and the mail
 * is sent after the answer (MailQueue), so its timing leaks nothing either.
 *
 * Verify: consume the link or the code, then sign in with the identity (provider `email`,
 * subject = the normalised address, verified), which creates the account, links it to an
 * account that already holds the verified address, or attaches it to the calling account when
 * that account asked for the mail.
 */
import { unauthorized } from '../../../common/errors.js';
import type { Logger } from '../../../common/log.js';
import { admitCodeGuess } from '../../ratelimit/policy.js';
import type { RateLimits } from '../../ratelimit/limits.js';
import type { AccountDb } from '../../store.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import type { TokenService } from '../../tokens/service.js';
import { completeSignIn, signInTarget, type SignInRequest } from '../sign-in.js';
import {
  consumeEmailCode,
  consumeEmailToken,
  EMAIL_CODE_TTL_MS,
  issueEmailCode,
  sweepEmailCodes,
  type ConsumedEmailCode,
  type EmailCodeConfig,
} from './codes.js';
import type { MailQueue, OutgoingMail } from './mail.js';
import type { VerifyCredential } from './schemas.js';

/** The one answer of POST /auth/login/email, for every address. */
export const LOGIN_EMAIL_MESSAGE = 'If this address can receive mail, a sign-in link and a 6-digit code are on their way. They expire in 10 minutes.';

const SWEEP_EVERY_MS = 10 * 60 * 1000;

export interface EmailSignInDeps {
  db: AccountDb;
  tokens: TokenService;
  mail: MailQueue;
  codes: EmailCodeConfig;
  /** Counts codes tried per address (admitCodeGuess). */
  rateLimits: RateLimits;
  frontendUrl: string;
  log: Logger;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function signInMail(to: string, link: string, code: string, ttlMs = EMAIL_CODE_TTL_MS): OutgoingMail {
  const minutes = Math.round(ttlMs / 60_000);
  const text = [
    'Sign in by opening this link:',
    '',
    link,
    '',
    `Or enter this code: ${code}`,
    '',
    `The link and the code work once, for ${minutes} minutes. If you did not ask to sign in, ignore this mail.`,
  ].join('\n');
  const html = `<!doctype html><html><body style="font-family:sans-serif">
<p>Sign in by opening this link:</p>
<p><a href="${escapeHtml(link)}">Sign in</a></p>
<p>Or enter this code: <strong style="font-size:1.4em;letter-spacing:0.15em">${code}</strong></p>
<p style="color:#555">The link and the code work once, for ${minutes} minutes. If you did not ask to sign in, ignore this mail.</p>
</body></html>`;
  return { to, subject: 'Your sign-in link and code', text, html };
}

export class EmailSignIn {
  private lastSweep = 0;

  constructor(private readonly deps: EmailSignInDeps) {}

  /**
   * `email` is already normalised (schemas.ts); `requestedBy` is the signed-in account that asked,
   * the only one whose verify may join the address to it. Returns the issued secrets for tests only.
   */
  async request(email: string, now = new Date(), requestedBy?: string) {
    const issued = await issueEmailCode(this.deps.db, this.deps.codes, email, now, requestedBy ?? null);
    const link = `${this.deps.frontendUrl}/auth/verify?token=${issued.token}`;
    this.deps.mail.enqueue(signInMail(email, link, issued.code, this.deps.codes.ttlMs));
    this.sweepNowAndThen(now);
    return issued;
  }

  /**
   * The account to attach to (guest upgrade, linking) is settled before the code is touched, so a bad Authorization header
   * (401) leaves the code usable. It is joined only when it asked for this very code (docs/security.md, "Whose account a
   * sign-in joins"): a link or code someone else asked for signs in to the address's own account, whoever presents it.
   * A 409 IDENTITY_IN_USE comes after the consume: the code is spent.
   */
  async verify(input: VerifyCredential, request: SignInRequest, now = new Date()): Promise<TokenPair> {
    const call = { db: this.deps.db, tokens: this.deps.tokens, request, rateLimits: this.deps.rateLimits };
    const presenter = await signInTarget(call);
    let consumed: ConsumedEmailCode | undefined;
    if ('token' in input) {
      consumed = input.token === null ? undefined : await consumeEmailToken(this.deps.db, this.deps.codes, input.token, now);
      if (!consumed) throw unauthorized('The sign-in link is invalid, expired or already used', 'INVALID_LINK');
    } else {
      const { email: address, code } = input;
      const wrongCode = () => unauthorized('The code is wrong, expired or already used', 'INVALID_CODE');
      // A code we could never have issued tests nothing, so it costs no guess.
      if (address === null || code === null) throw wrongCode();
      const guess = await admitCodeGuess(this.deps.rateLimits, address);
      consumed = await consumeEmailCode(this.deps.db, this.deps.codes, address, code, now);
      if (!consumed) throw wrongCode();
      // Only wrong guesses are budgeted; a failed refund leaves one guess too many counted.
      await guess.right().catch(() => undefined);
    }
    const { email, requestedBy } = consumed;
    const target = presenter && presenter.userId === requestedBy ? presenter : undefined;
    return completeSignIn(call, { provider: 'email', subject: email, email, emailVerified: true }, target);
  }

  /** Expired rows go at most every 10 minutes per instance, after the answer. */
  private sweepNowAndThen(now: Date): void {
    if (now.getTime() - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now.getTime();
    sweepEmailCodes(this.deps.db, now).catch((error: unknown) => this.deps.log.warn({ err: error }, 'sweeping expired e-mail codes failed'));
  }
}
