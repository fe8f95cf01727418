/**
 * Differential fuzzing of the hand-written JWT verifier (server/account/tokens/jwt.ts, written on
 * node:crypto for the event loop's sake; the comment there says why) against jose's jwtVerify
 * with the same policy: random claims, keys, headers, algorithms (alg confusion: none, HS256
 * keyed with the public key, ES256, the fully specified Ed25519) and tampered header, payload or
 * signature bytes. Each token must be accepted by both or refused by both. jose is the reference;
 * the few rules of ours that jose has no option for (a `kid` of ours, no `crit` or `b64` header,
 * the `typ` claim, the types of sub/sid/jti and refresh `gen`) are added to its side explicitly.
 *
 * Bounded (ITERATIONS cases per token type) and seeded: a failure names the seed and case.
 */
import { createHmac, generateKeyPairSync, sign as signBytes, type KeyObject } from 'node:crypto';
import { errors, jwtVerify, type JWTHeaderParameters } from 'jose';
import { describe, expect, it } from 'vitest';
import { verifyAccessToken, verifyRefreshToken, type TokenIssuer } from '../../server/account/tokens/jwt.js';

const ITERATIONS = 600;
const TOLERANCE = 5;
const SEED = Number(process.env.JWT_FUZZ_SEED ?? Date.now() % 2 ** 31);

/** mulberry32: small, seedable, good enough to pick cases. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const ed25519 = () => generateKeyPairSync('ed25519');
const current = ed25519();
const previous = ed25519();
const foreign = ed25519();
const ecdsa = generateKeyPairSync('ec', { namedCurve: 'P-256' });

const issuer: TokenIssuer = {
  keys: {
    kid: 'current',
    privateKey: current.privateKey,
    publicKeys: new Map([
      ['current', current.publicKey],
      ['previous', previous.publicKey],
    ]),
    jwks: { keys: [] },
  },
  issuer: 'https://accounts.test',
  audience: 'agent-accounts',
};

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

type Typ = 'access' | 'refresh';

/** jose with this service's options, plus the rules of ours jose has no option for. */
async function referenceAccepts(token: string, typ: Typ, now: number): Promise<boolean> {
  try {
    const { payload, protectedHeader } = await jwtVerify(
      token,
      (header: JWTHeaderParameters) => {
        const key = typeof header.kid === 'string' ? issuer.keys.publicKeys.get(header.kid) : undefined;
        if (!key) throw new errors.JWKSNoMatchingKey();
        return key;
      },
      {
        algorithms: ['EdDSA'],
        issuer: issuer.issuer,
        audience: issuer.audience,
        clockTolerance: TOLERANCE,
        currentDate: new Date(now * 1000),
        requiredClaims: ['iss', 'aud', 'sub', 'jti', 'iat', 'exp'],
      },
    );
    if ('crit' in protectedHeader || 'b64' in protectedHeader) return false;
    if (payload.typ !== typ || typeof payload.sub !== 'string' || typeof payload.sid !== 'string' || typeof payload.jti !== 'string') return false;
    if (typ === 'refresh' && !(typeof payload.gen === 'number' && Number.isInteger(payload.gen) && payload.gen >= 0)) return false;
    return true;
  } catch {
    return false;
  }
}

async function oursAccepts(token: string, typ: Typ, now: number): Promise<boolean> {
  try {
    await (typ === 'access' ? verifyAccessToken(issuer, token, now) : verifyRefreshToken(issuer, token, now));
    return true;
  } catch (error) {
    // A refusal is the documented 401; anything else is a bug, not a "reject".
    expect((error as { status?: number }).status).toBe(401);
    return false;
  }
}

/** One random token: mostly near-valid, so that each single deviation is what decides. */
function makeCase(pick: () => number, typ: Typ, now: number): { token: string; what: string[] } {
  const what: string[] = [];
  const chance = (p: number, label: string) => {
    const hit = pick() < p;
    if (hit) what.push(label);
    return hit;
  };
  const oneOf = <T>(label: string, values: readonly T[]): T => {
    const value = values[Math.floor(pick() * values.length)] as T;
    what.push(`${label}=${JSON.stringify(value)}`);
    return value;
  };
  const offset = () => oneOf('offset', [-3600, -TOLERANCE - 1, -TOLERANCE, -1, 0, 1, TOLERANCE, TOLERANCE + 1, 3600]);

  const claims: Record<string, unknown> = {
    iss: issuer.issuer,
    aud: issuer.audience,
    sub: 'user-1',
    sid: 'session-1',
    jti: 'jti-1',
    typ,
    iat: now,
    exp: now + 900,
    ...(typ === 'refresh' ? { gen: 0 } : {}),
  };
  if (chance(0.1, 'iss')) claims.iss = oneOf('iss', ['https://evil.test', '', null, 1, [issuer.issuer]]);
  if (chance(0.1, 'aud')) claims.aud = oneOf('aud', ['other', [issuer.audience], ['other', issuer.audience], ['other'], [], 7, null]);
  for (const name of ['sub', 'sid', 'jti'] as const) if (chance(0.05, name)) claims[name] = oneOf(name, [undefined, 1, null, ['x'], { x: 1 }, '']);
  if (chance(0.1, 'typ')) claims.typ = oneOf('typ', [undefined, 'access', 'refresh', 'id', 1]);
  if (chance(0.08, 'iat')) claims.iat = oneOf('iat', [undefined, '1', null, now + 3600, 1.5]);
  if (chance(0.2, 'exp')) {
    const base = oneOf('exp', ['offset', 'missing', 'string', 'float']);
    claims.exp = base === 'offset' ? now + offset() : base === 'missing' ? undefined : base === 'string' ? String(now + 900) : now + 0.5;
  }
  if (chance(0.15, 'nbf')) claims.nbf = pick() < 0.8 ? now + offset() : oneOf('nbf', ['soon', null]);
  if (typ === 'refresh' && chance(0.1, 'gen')) claims.gen = oneOf('gen', [undefined, -1, 1.5, '0', 3]);
  if (chance(0.05, 'payload-not-object')) return { token: finish(pick, what, { alg: 'EdDSA', kid: 'current', typ: 'JWT' }, ['x', 1]), what };

  const header: Record<string, unknown> = { alg: 'EdDSA', kid: 'current', typ: 'JWT' };
  if (chance(0.1, 'kid')) header.kid = oneOf('kid', ['previous', 'unknown', undefined, 1, '']);
  if (chance(0.1, 'alg')) header.alg = oneOf('alg', ['none', 'HS256', 'ES256', 'Ed25519', 'eddsa', undefined]);
  if (chance(0.04, 'crit')) Object.assign(header, oneOf('crit', [{ crit: ['b64'], b64: false }, { crit: ['exp'] }, { b64: true }, { crit: [] }]));
  if (chance(0.03, 'jwk-header')) header.jwk = { kty: 'OKP', crv: 'Ed25519', x: foreign.publicKey.export({ format: 'jwk' }).x };
  return { token: finish(pick, what, header, claims), what };
}

/** Signs as the header's alg says (with a key chosen at random), then maybe tampers with one part. */
function finish(pick: () => number, what: string[], header: Record<string, unknown>, claims: unknown): string {
  const signingInput = `${b64(header)}.${b64(claims)}`;
  const keyChoice = pick();
  const edKey: KeyObject = keyChoice < 0.85 ? current.privateKey : keyChoice < 0.93 ? previous.privateKey : foreign.privateKey;
  if (keyChoice >= 0.85) what.push(keyChoice < 0.93 ? 'signed-with-previous' : 'signed-with-foreign');
  let signature: Buffer;
  if (header.alg === 'none') signature = Buffer.alloc(0);
  else if (header.alg === 'HS256')
    signature = createHmac('sha256', current.publicKey.export({ format: 'der', type: 'spki' }))
      .update(signingInput)
      .digest();
  else if (header.alg === 'ES256') signature = signBytes('sha256', Buffer.from(signingInput), { key: ecdsa.privateKey, dsaEncoding: 'ieee-p1363' });
  else signature = signBytes(null, Buffer.from(signingInput), edKey);
  const parts = [...signingInput.split('.'), signature.toString('base64url')];
  if (pick() < 0.25) {
    const index = Math.floor(pick() * 3);
    const bytes = Buffer.from(parts[index] as string, 'base64url');
    const how = pick();
    if (how < 0.6 && bytes.length > 0) {
      const at = Math.floor(pick() * bytes.length);
      bytes[at] = (bytes[at] as number) ^ (1 << Math.floor(pick() * 8));
      what.push(`flip-part-${index}`);
    } else if (how < 0.8) {
      what.push(`truncate-part-${index}`);
      parts[index] = bytes.subarray(0, Math.floor(bytes.length / 2)).toString('base64url');
      return parts.join('.');
    } else {
      what.push(`drop-part-${index}`);
      parts.splice(index, 1);
      return parts.join('.');
    }
    parts[index] = bytes.toString('base64url');
  }
  return parts.join('.');
}

describe('hand-written JWT verifier against jose (differential)', () => {
  for (const typ of ['access', 'refresh'] as const) {
    it(`${typ} tokens: both accept or both reject (seed ${SEED})`, async () => {
      const pick = random(SEED + (typ === 'access' ? 0 : 1));
      const now = Math.floor(Date.now() / 1000);
      const outcomes = { accepted: 0, rejected: 0 };
      for (let i = 0; i < ITERATIONS; i++) {
        const { token, what } = makeCase(pick, typ, now);
        const [ours, reference] = await Promise.all([oursAccepts(token, typ, now), referenceAccepts(token, typ, now)]);
        expect(ours, `case ${i} (seed ${SEED}): ${what.join(', ') || 'valid'}\n${token}`).toBe(reference);
        outcomes[ours ? 'accepted' : 'rejected']++;
      }
      // The generator must exercise both sides, or the comparison proves nothing.
      expect(outcomes.accepted).toBeGreaterThan(ITERATIONS / 10);
      expect(outcomes.rejected).toBeGreaterThan(ITERATIONS / 10);
    });
  }
});
