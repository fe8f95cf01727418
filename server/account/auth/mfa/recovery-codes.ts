/**
 * Recovery codes: ten one-time codes handed out once, when a factor is confirmed, for the day the
 * authenticator is lost. Each is 80 random bits in Crockford's base32 (no i, l, o or u to misread),
 * shown as four groups of four (`7k2m-9xqd-…`). Only their SHA-256 is stored: with 80 bits of
 * entropy a plain digest cannot be reversed by guessing (as with API keys), and the live check is
 * a digest lookup. Typed input is forgiving: case, spaces and dashes do not matter, and the
 * letters people confuse with digits (o, i, l) are read as 0 and 1, as Crockford's alphabet says.
 */
import { createHash, randomBytes } from 'node:crypto';

export const RECOVERY_CODE_COUNT = 10;
const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
const CODE_LENGTH = 16;

function newRecoveryCode(): string {
  const bytes = randomBytes(CODE_LENGTH);
  // 16 characters of 5 bits: the low 5 bits of 16 random bytes (each value equally likely).
  const chars = [...bytes].map((byte) => CROCKFORD[byte & 31]).join('');
  return chars.match(/.{4}/g)!.join('-');
}

export const newRecoveryCodes = (): string[] => Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);

/**
 * What `mfa_recovery_codes.code_hash` holds for a code, issued or typed (in its canonical form);
 * undefined when the text cannot be a recovery code at all.
 */
export function recoveryCodeHash(typed: string): string | undefined {
  const code = typed.toLowerCase().replace(/[\s-]/g, '').replace(/o/g, '0').replace(/[il]/g, '1');
  if (code.length !== CODE_LENGTH || ![...code].every((char) => CROCKFORD.includes(char))) return undefined;
  return createHash('sha256').update(code).digest('base64url');
}
