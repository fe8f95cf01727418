/** Wire shapes of e-mail sign-in (spec: POST /auth/login/email, POST /auth/verify-magic-link). */
import { z } from 'zod';

/** Trimmed and lower-cased before the check: the normalised address is the identity's subject. */
export const EmailAddress = z.string().trim().toLowerCase().max(254).pipe(z.email());

export const LoginEmailInput = z.object({ email: EmailAddress });

export const LoginEmailOutput = z.object({ message: z.string() });

/** 32 random bytes, base64url (see codes.ts); a little slack for the future, nothing absurd. */
const LinkToken = z.string().regex(/^[A-Za-z0-9_-]{32,128}$/);
const Code = z.string().regex(/^\d{6}$/);

/**
 * A credential we could have issued, or `null`: a garbage token, code or address is only a
 * wrong credential (401 like any other, docs/api.md), not a malformed request. A request is
 * malformed (400) only when it names no credential at all, or both kinds at once.
 */
export type VerifyCredential = { token: string | null } | { email: string | null; code: string | null };

const parsed = <T>(schema: z.ZodType<T>, value: unknown): T | null => {
  const result = schema.safeParse(value);
  return result.success ? result.data : null;
};

const loose = (description: string) => z.unknown().optional().meta({ type: 'string', description });

export const VerifyInput = z
  .object({
    token: loose('the token of the sign-in link'),
    email: loose('the address the code was sent to (with code)'),
    code: loose('the 6-digit code from the mail (with email)'),
  })
  .superRefine((input, ctx) => {
    const byToken = input.token !== undefined;
    const byCode = input.code !== undefined;
    if (byToken && (byCode || input.email !== undefined))
      ctx.addIssue({ code: 'custom', path: ['token'], message: 'send either token, or email and code, not both' });
    else if (!byToken && !byCode) ctx.addIssue({ code: 'custom', path: ['token'], message: 'send either token, or email and code' });
  })
  .transform(
    (input): VerifyCredential =>
      input.token !== undefined ? { token: parsed(LinkToken, input.token) } : { email: parsed(EmailAddress, input.email), code: parsed(Code, input.code) },
  );
