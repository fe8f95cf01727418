/**
 * TOTP against its specification and an independent implementation: RFC 4226's HOTP test values
 * (Appendix D), RFC 6238's SHA-1 test values (Appendix B, whose 8-digit codes end in our 6),
 * oathtool's codes for random secrets at random times, the drift window, and the otpauth URI as
 * an app reads it.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { base32Decode, base32Encode, hotp, matchStep, newTotpSecret, otpauthUri, timeStep } from '../../server/account/auth/mfa/totp.js';
import { readOtpauthUri, totpCode } from '../support/authenticator.js';

const RFC_SECRET = Buffer.from('12345678901234567890');

describe('TOTP (RFC 6238 over RFC 4226)', () => {
  it("RFC 4226 Appendix D: HOTP's values for counters 0–9", () => {
    const expected = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];
    expect(expected.map((_, counter) => hotp(RFC_SECRET, counter))).toEqual(expected);
  });

  it('RFC 6238 Appendix B (SHA-1): the 8-digit values, and our 6-digit codes are their last six digits', () => {
    const vectors: Array<[number, string]> = [
      [59, '94287082'],
      [1111111109, '07081804'],
      [1111111111, '14050471'],
      [1234567890, '89005924'],
      [2000000000, '69279037'],
      [20000000000, '65353130'],
    ];
    for (const [seconds, code] of vectors) {
      expect(hotp(RFC_SECRET, timeStep(seconds * 1000), 8)).toBe(code);
      expect(hotp(RFC_SECRET, timeStep(seconds * 1000))).toBe(code.slice(2));
    }
  });

  it("agrees with oathtool's codes for random secrets at random times", async () => {
    for (let i = 0; i < 8; i++) {
      const secret = newTotpSecret();
      const at = randomInt(0, 2 ** 32) * 1000;
      expect(hotp(base32Decode(secret), timeStep(at))).toBe(await totpCode(secret, { at }));
    }
  });

  it('a code matches its own step and one either side, nothing further, and never a malformed one', () => {
    const secret = randomBytes(20);
    const now = Date.now();
    const step = timeStep(now);
    for (const drift of [-1, 0, 1]) expect(matchStep(secret, hotp(secret, step + drift), now)).toBe(step + drift);
    for (const drift of [-3, -2, 2, 3]) expect(matchStep(secret, hotp(secret, step + drift), now)).toBeUndefined();
    for (const bad of ['', '12345', '1234567', 'abcdef', ' 12345', hotp(secret, step).slice(0, 5)]) expect(matchStep(secret, bad, now)).toBeUndefined();
  });

  it('base32 round-trips (RFC 4648 §10 values) and the secret carries 160 bits', () => {
    expect(base32Encode(Buffer.from('foobar'))).toBe('MZXW6YTBOI');
    expect(base32Decode('mzxw6ytboi======').toString()).toBe('foobar');
    expect(() => base32Decode('MZXW1')).toThrow();
    const secret = newTotpSecret();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(base32Decode(secret)).toHaveLength(20);
  });

  it('the otpauth URI names the issuer and account and spells out SHA1, 6 digits, 30 s', () => {
    const uri = otpauthUri({ secret: 'JBSWY3DPEHPK3PXP', issuer: 'Agent Accounts', account: 'ada+mfa@example.com' });
    expect(uri.startsWith('otpauth://totp/Agent%20Accounts:ada%2Bmfa%40example.com?')).toBe(true);
    expect(readOtpauthUri(uri)).toEqual({
      issuer: 'Agent Accounts',
      account: 'ada+mfa@example.com',
      secret: 'JBSWY3DPEHPK3PXP',
      algorithm: 'SHA1',
      digits: '6',
      period: '30',
    });
  });
});
