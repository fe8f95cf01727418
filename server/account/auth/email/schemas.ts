/** Wire shapes of e-mail sign-in (spec: POST /auth/login/email, POST /auth/verify-magic-link). */
import { z } from 'zod';

/** Trimmed and lower-cased before the check: the normalised address is the identity's subject. */
export const EmailAddress = z.string().trim().toLowerCase().max(254).pipe(z.email());

export const LoginEmailInput = z.object({ email: EmailAddress });

export const LoginEmailOutput = z.object({ message: z.string() });

/** 32 random bytes, base64url (see codes.ts); a little slack for the future, nothing absurd. */
const LinkToken = z.string().regex(/^[A-Za-z0-9_-]{32,128}$/, 'token must be the token from the sign-in link');
const Code = z.string().regex(/^\d{6}$/, 'code must be 6 digits');

/** Either `{token}` or `{email, code}` — one object (the REST bridge needs one), refined to exactly one form. */
export const VerifyInput = z
  .object({ token: LinkToken.optional(), email: EmailAddress.optional(), code: Code.optional() })
  .superRefine((input, ctx) => {
    const byToken = input.token !== undefined;
    const byCode = input.email !== undefined || input.code !== undefined;
    if (byToken && byCode) ctx.addIssue({ code: 'custom', path: ['token'], message: 'send either token, or email and code, not both' });
    else if (!byToken && (input.email === undefined || input.code === undefined)) {
      ctx.addIssue({ code: 'custom', path: [input.email === undefined ? 'email' : 'code'], message: 'send either token, or email and code' });
    }
  });
