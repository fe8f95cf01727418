/**
 * TOTP as RFC 6238 defines it over RFC 4226's HOTP, with the parameters every authenticator app
 * defaults to (and Google Authenticator accepts nothing else): HMAC-SHA-1, 6 digits, 30-second
 * steps from the Unix epoch. Each rule of the RFCs is one line below:
 * - RFC 4226 §5.3: HMAC over the 8-byte big-endian counter, dynamic truncation at the offset in
 *   the low nibble of the last byte, 31 bits, modulo 10^digits, zero-padded;
 * - RFC 6238 §4.2: the counter is floor((now − T0) / X) with T0 = 0 and X = 30 s;
 * - RFC 6238 §5.2: one step of drift either way is accepted ("at most one time step"), and the
 *   verifier must not accept a code a second time: `matchStep` says which step matched, and the
 *   factor's store (factors.ts) accepts only a step newer than the last one used;
 * - RFC 4226 §4 R6: a shared secret of 160 bits; RFC 4648 base32 is how it travels (otpauth URI).
 * Codes are compared in constant time. test/mfa/totp.test.ts holds the RFC's test vectors and a
 * cross-check against oathtool.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const TOTP_DIGITS = 6;
export const TOTP_PERIOD_SECONDS = 30;
/** Steps of clock drift accepted either way. */
export const TOTP_DRIFT_STEPS = 1;
export const TOTP_CODE = /^\d{6}$/;
const SECRET_BYTES = 20;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32, without padding (what otpauth URIs carry). */
export function base32Encode(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** RFC 4648 base32; case, spaces and padding are forgiven, anything else is an error. */
export function base32Decode(text: string): Buffer {
  const clean = text.replace(/[\s=]/g, '').toUpperCase();
  const bytes: number[] = [];
  let bits = 0;
  let value = 0;
  for (const char of clean) {
    const index = BASE32.indexOf(char);
    if (index < 0) throw new Error('not base32');
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      bytes.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(bytes);
}

/** A new shared secret: 160 random bits, base32. */
export const newTotpSecret = (): string => base32Encode(randomBytes(SECRET_BYTES));

/** RFC 4226 HOTP value of `counter` (RFC 6238 with SHA-1 is this at the time step). */
export function hotp(secret: Buffer, counter: number, digits = TOTP_DIGITS): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', secret).update(message).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

/** The time step of an instant (RFC 6238 §4.2, T0 = 0). */
export const timeStep = (nowMs: number): number => Math.floor(nowMs / 1000 / TOTP_PERIOD_SECONDS);

/**
 * The step whose code `code` is, among now's and one either side, or undefined. Every candidate
 * is computed and compared (in constant time), so the time taken says nothing about which matched.
 */
export function matchStep(secret: Buffer, code: string, nowMs: number): number | undefined {
  if (!TOTP_CODE.test(code)) return undefined;
  const presented = Buffer.from(code);
  const now = timeStep(nowMs);
  let matched: number | undefined;
  for (let step = now - TOTP_DRIFT_STEPS; step <= now + TOTP_DRIFT_STEPS; step++) {
    if (timingSafeEqual(Buffer.from(hotp(secret, step)), presented)) matched ??= step;
  }
  return matched;
}

/**
 * The `otpauth://totp/` URI authenticator apps scan (the Key Uri Format Google Authenticator
 * defined and every app reads): label `issuer:account`, the secret, and the parameters spelled
 * out, though they are the defaults, so that no app has to guess.
 */
export function otpauthUri(input: { secret: string; issuer: string; account: string }): string {
  const label = `${encodeURIComponent(input.issuer)}:${encodeURIComponent(input.account)}`;
  const query = new URLSearchParams({
    secret: input.secret,
    issuer: input.issuer,
    algorithm: 'SHA1',
    digits: String(TOTP_DIGITS),
    period: String(TOTP_PERIOD_SECONDS),
  });
  return `otpauth://totp/${label}?${query.toString().replace(/\+/g, '%20')}`;
}
