/** Wire shapes of the second factor (docs/api.md, "Second factor"). */
import { z } from 'zod';

/** UTC, ISO 8601 without a zone suffix. */
const Timestamp = z.string().meta({ description: 'UTC, ISO 8601 without a zone suffix' });

export const FactorIdInput = z.object({ factor_id: z.string().max(64) });

export const TotpEnrolment = z
  .object({
    factor_id: z.string(),
    secret: z.string().meta({ description: 'The shared secret, base32 (RFC 4648), for authenticator apps that take it typed' }),
    otpauth_uri: z.string().meta({ description: '`otpauth://totp/…` with the secret, issuer, SHA1, 6 digits, 30 s: what the QR code holds' }),
  })
  .meta({ id: 'TotpEnrolment' });

export const ConfirmTotpInput = z.object({
  factor_id: z.string().max(64),
  code: z.string().max(32).meta({ description: 'The 6-digit code the authenticator app shows now' }),
});

export const RecoveryCodes = z
  .object({
    recovery_codes: z.array(z.string()).meta({ description: 'Ten one-time codes, shown this once: each completes one sign-in instead of a code from the app' }),
  })
  .meta({ id: 'RecoveryCodes' });

export const Factor = z
  .object({
    id: z.string(),
    kind: z.literal('totp'),
    confirmed: z.boolean().meta({ description: 'false until a right code confirmed it: an unconfirmed factor guards nothing' }),
    created_at: Timestamp,
    last_used_at: Timestamp.nullable(),
  })
  .meta({ id: 'Factor' });

export const Factors = z.object({
  factors: z.array(Factor),
  recovery_codes_left: z.number().int().meta({ description: 'Unused recovery codes' }),
});

const loose = (description: string) => z.unknown().optional().meta({ type: 'string', description });

/**
 * A 6-digit code or a recovery code. As for e-mail codes, a value that could never be right (not
 * a string, the wrong length) is only a wrong code — 401 and one wrong try — not a malformed
 * request; a body naming neither or both is 400.
 */
export const VerifyMfaInput = z
  .object({
    code: loose('the 6-digit code the authenticator app shows now'),
    recovery_code: loose('one of the recovery codes (case, spaces and dashes do not matter)'),
  })
  .superRefine((input, ctx) => {
    if ((input.code === undefined) === (input.recovery_code === undefined))
      ctx.addIssue({ code: 'custom', path: ['code'], message: 'send either code or recovery_code' });
  })
  .transform(
    (input): SecondFactorProof =>
      input.code !== undefined
        ? { code: typeof input.code === 'string' ? input.code : '' }
        : { recoveryCode: typeof input.recovery_code === 'string' ? input.recovery_code.slice(0, 64) : '' },
  );

export type SecondFactorProof = { code: string } | { recoveryCode: string };
