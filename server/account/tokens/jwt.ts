/**
 * The token pair (spec: "Token pair"; docs/security.md: "Tokens and sessions"). Both are EdDSA JWTs with
 * iss, aud, sub (user id), sid (session), jti, typ, iat, exp; access tokens of guests carry
 * `guest`, and the refresh token carries `gen`, the session generation it may rotate (not
 * `guest`: only this service reads a refresh token, and a refresh takes the flag from the user
 * row, which an upgrade changes). `typ` keeps the two apart: a refresh token never passes as an
 * access token, nor the reverse. Access tokens of a session with an assurance level carry it as
 * `aal` (`aal1`: waiting for the second factor; `aal2`: passed it; auth/mfa/); refresh tokens
 * do not: a refresh takes the level from the session row, as it takes `guest` from the user's.
 */
import { randomUUID, sign as signBytes, verify as verifyBytes, type KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import type { TokenPair } from '@contracts/account/tokens.js';
import { unauthorized } from '../../common/errors.js';
import { TOKEN_ALG, type SigningKeys } from './keys.js';

export const ACCESS_TTL_SECONDS = 15 * 60;
export const REFRESH_TTL_SECONDS = 30 * 24 * 60 * 60;
/** When a session opened or rotated at `now` ends unless refreshed again. */
export const refreshExpiry = (now: Date): Date => new Date(now.getTime() + REFRESH_TTL_SECONDS * 1000);
const CLOCK_TOLERANCE_SECONDS = 5;

export interface TokenIssuer {
  keys: SigningKeys;
  issuer: string;
  audience: string;
}

/** A session's assurance level (auth/mfa/): `aal1` after one factor of an account that has a second, `aal2` after both. */
export type Aal = 'aal1' | 'aal2';

export const isAal = (value: unknown): value is Aal => value === 'aal1' || value === 'aal2';

export interface TokenSubject {
  userId: string;
  sessionId: string;
  guest: boolean;
  /** Absent when the account had no second factor as the session began. */
  aal?: Aal | null | undefined;
  /** TOKEN_METADATA_CLAIM: the claim name and the user's operator metadata it carries (admin/users.ts). */
  metadata?: { claim: string; value: unknown } | undefined;
}

export interface AccessClaims extends Omit<TokenSubject, 'aal'> {
  issuedAt: number;
  aal?: Aal | undefined;
}

export type SessionSubject = Omit<TokenSubject, 'guest' | 'aal'>;

export interface RefreshClaims extends SessionSubject {
  generation: number;
}

const base64url = (json: object) => Buffer.from(JSON.stringify(json)).toString('base64url');

/*
 * Where an Ed25519 signature is computed. node:crypto's callback form runs the math on libuv's
 * thread pool: the event loop only hands the job over, but the hand-off itself (the job, a pool
 * thread woken, its callback queued back) costs CPU and, when no core is idle, a thread switch.
 * With cores to spare the pool's thread runs beside the event loop, the one thread a Node service
 * cannot add, and the pool wins; on two cores shared with PostgreSQL and the clients, a CPU that
 * signs in ≈ 22 µs did better in place, and one that signed in ≈ 45 µs on the pool (figures:
 * docs/performance.md, "Where a token is signed"). So on at most SIGN_IN_PLACE_MAX_CORES cores the
 * first signature with a key times a few in place, and the key signs in place when one costs at
 * most SIGN_IN_PLACE_MAX_MICROS; everywhere else on the pool. Verification (≈ 60 µs even on the
 * faster CPU) stays on the pool. WebCrypto, which jose uses, also runs on the pool but costs far
 * more per call in JS.
 */
export const SIGN_IN_PLACE_MAX_MICROS = 35;
export const SIGN_IN_PLACE_MAX_CORES = 2;
/** Signatures timed per key (the first few warm the code and caches up and are not counted). */
const CALIBRATION_WARM_UP = 4;
const CALIBRATION_SAMPLES = 9;

type Signer = (data: Buffer) => Promise<Buffer>;
export type SigningPlace = 'in place' | 'pool';

export const signers: Record<SigningPlace, (key: KeyObject) => Signer> = {
  'in place': (key) => async (data) => signBytes(null, data, key),
  pool: (key) => (data) =>
    new Promise<Buffer>((resolve, reject) => signBytes(null, data, key, (error, signature) => (error ? reject(error) : resolve(signature)))),
};

/**
 * What one in-place signature with `key` costs this CPU, in µs: the fastest of a few. The first
 * signature comes with the first sign-in, often amid others, and a thread switch or another
 * request's work only ever adds time: the median of nine, timed so, came out 25–29 µs on a CPU
 * that signs in 21–22 µs (the fastest: 24 µs).
 */
export function signingMicros(key: KeyObject): number {
  const data = Buffer.alloc(320, 'x');
  let fastest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < CALIBRATION_WARM_UP + CALIBRATION_SAMPLES; i++) {
    const started = process.hrtime.bigint();
    signBytes(null, data, key);
    if (i >= CALIBRATION_WARM_UP) fastest = Math.min(fastest, Number(process.hrtime.bigint() - started) / 1000);
  }
  return fastest;
}

/** Where a key signs on `cores` cores: `micros` (signingMicros) is only measured where it can matter. */
export const signingPlace = (cores: number, micros: () => number): SigningPlace =>
  cores <= SIGN_IN_PLACE_MAX_CORES && micros() <= SIGN_IN_PLACE_MAX_MICROS ? 'in place' : 'pool';

const signerOfKey = new WeakMap<KeyObject, Signer>();

function signEd25519(data: Buffer, key: KeyObject): Promise<Buffer> {
  let signer = signerOfKey.get(key);
  if (!signer) {
    signer = signers[signingPlace(availableParallelism(), () => signingMicros(key))](key);
    signerOfKey.set(key, signer);
  }
  return signer(data);
}

const verifyEd25519 = (data: Buffer, key: KeyObject, signature: Buffer) =>
  new Promise<boolean>((resolve, reject) => verifyBytes(null, data, key, signature, (error, valid) => (error ? reject(error) : resolve(valid))));

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A compact JWS signed with node:crypto: the same bytes jose's SignJWT makes, at a fraction of the cost. */
async function sign(
  issuer: TokenIssuer,
  subject: SessionSubject,
  typ: 'access' | 'refresh',
  ttl: number,
  now: number,
  extra: Record<string, unknown>,
): Promise<string> {
  const header = base64url({ alg: TOKEN_ALG, kid: issuer.keys.kid, typ: 'JWT' });
  const payload = base64url({
    sid: subject.sessionId,
    typ,
    ...extra,
    iss: issuer.issuer,
    aud: issuer.audience,
    sub: subject.userId,
    jti: randomUUID(),
    iat: now,
    exp: now + ttl,
  });
  const signingInput = `${header}.${payload}`;
  return `${signingInput}.${(await signEd25519(Buffer.from(signingInput), issuer.keys.privateKey)).toString('base64url')}`;
}

export const signAccessToken = (issuer: TokenIssuer, subject: TokenSubject, now = nowSeconds()): Promise<string> =>
  sign(issuer, subject, 'access', ACCESS_TTL_SECONDS, now, {
    ...(subject.metadata ? { [subject.metadata.claim]: subject.metadata.value } : {}),
    ...(subject.guest ? { guest: true } : {}),
    ...(subject.aal ? { aal: subject.aal } : {}),
  });

export const signRefreshToken = (issuer: TokenIssuer, subject: SessionSubject, generation: number, now = nowSeconds()): Promise<string> =>
  sign(issuer, subject, 'refresh', REFRESH_TTL_SECONDS, now, { gen: generation });

export const tokenPair = (accessToken: string, refreshToken: string): TokenPair => ({
  access_token: accessToken,
  refresh_token: refreshToken,
  token_type: 'bearer',
  expires_in: ACCESS_TTL_SECONDS,
});

export async function signTokenPair(issuer: TokenIssuer, subject: TokenSubject, generation: number, now = nowSeconds()): Promise<TokenPair> {
  // Both at once when they go to the thread pool.
  const [accessToken, refreshToken] = await Promise.all([signAccessToken(issuer, subject, now), signRefreshToken(issuer, subject, generation, now)]);
  return tokenPair(accessToken, refreshToken);
}

type Claims = Record<string, unknown>;

const BASE64URL = /^[\w-]+$/;

/** A base64url JSON object, or undefined. */
function jsonObject(part: string): Claims | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Claims) : undefined;
  } catch {
    return undefined;
  }
}

class TokenRejected extends Error {
  constructor(readonly expired = false) {
    super(expired ? 'expired' : 'invalid');
  }
}

/** A token's parts once its form and header are acceptable: what the signature check needs. */
interface ParsedToken {
  signingInput: string;
  encodedPayload: string;
  signature: Buffer;
  key: KeyObject;
}

/**
 * Only what we issue passes: header {alg: EdDSA, kid of one of our keys} and nothing that would
 * change how it is read (crit, b64; jwk/jku/x5u are never looked at: keys come only from our key
 * file), and a 64-byte signature.
 */
function parse(issuer: TokenIssuer, token: string): ParsedToken {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((part) => BASE64URL.test(part))) throw new TokenRejected();
  const [encodedHeader, encodedPayload, encodedSignature] = parts as [string, string, string];
  const header = jsonObject(encodedHeader);
  if (!header || header.alg !== TOKEN_ALG || typeof header.kid !== 'string' || 'crit' in header || 'b64' in header) throw new TokenRejected();
  const key = issuer.keys.publicKeys.get(header.kid);
  const signature = Buffer.from(encodedSignature, 'base64url');
  if (!key || signature.length !== 64) throw new TokenRejected();
  return { signingInput: `${encodedHeader}.${encodedPayload}`, encodedPayload, signature, key };
}

/** Claims iss, aud, sub, sid, jti, iat, exp of the right types and values, nbf/exp within the clock tolerance, and the expected `typ`. */
function checkClaims(issuer: TokenIssuer, encodedPayload: string, typ: 'access' | 'refresh', now: number): Claims {
  const claims = jsonObject(encodedPayload);
  if (!claims) throw new TokenRejected();
  const { iss, aud, sub, sid, jti, iat, exp, nbf } = claims;
  const audiences = Array.isArray(aud) ? aud : [aud];
  if (iss !== issuer.issuer || !audiences.includes(issuer.audience)) throw new TokenRejected();
  if (typeof sub !== 'string' || typeof sid !== 'string' || typeof jti !== 'string') throw new TokenRejected();
  if (typeof iat !== 'number' || typeof exp !== 'number' || (nbf !== undefined && typeof nbf !== 'number')) throw new TokenRejected();
  if (typeof nbf === 'number' && nbf > now + CLOCK_TOLERANCE_SECONDS) throw new TokenRejected();
  if (exp <= now - CLOCK_TOLERANCE_SECONDS) throw new TokenRejected(true);
  if (claims.typ !== typ) throw new TokenRejected();
  if (typ === 'refresh' && (typeof claims.gen !== 'number' || !Number.isInteger(claims.gen) || claims.gen < 0)) throw new TokenRejected();
  return claims;
}

/** Every failure is a 401 in the documented shape; only an expired token says so. */
function rejected(error: unknown, typ: 'access' | 'refresh'): never {
  const expired = error instanceof TokenRejected && error.expired;
  throw unauthorized(expired ? `The ${typ} token has expired` : `Invalid ${typ} token`, expired ? 'TOKEN_EXPIRED' : 'INVALID_TOKEN');
}

/**
 * Checks a token as strictly as jose's jwtVerify with this service's options would, with
 * node:crypto's Ed25519 verify: form and header (parse), the signature over the exact first two
 * segments, then the claims (checkClaims). test/security/jwt.test.ts holds the attacks.
 */
async function verify(issuer: TokenIssuer, token: string, typ: 'access' | 'refresh', now = nowSeconds()): Promise<Claims> {
  try {
    const parsed = parse(issuer, token);
    if (!(await verifyEd25519(Buffer.from(parsed.signingInput), parsed.key, parsed.signature))) throw new TokenRejected();
    return checkClaims(issuer, parsed.encodedPayload, typ, now);
  } catch (error) {
    rejected(error, typ);
  }
}

const refreshClaims = (claims: Claims): RefreshClaims => ({ userId: claims.sub as string, sessionId: claims.sid as string, generation: claims.gen as number });

export async function verifyAccessToken(issuer: TokenIssuer, token: string, now?: number): Promise<AccessClaims> {
  const claims = await verify(issuer, token, 'access', now);
  return {
    userId: claims.sub as string,
    sessionId: claims.sid as string,
    guest: claims.guest === true,
    issuedAt: claims.iat as number,
    ...(isAal(claims.aal) ? { aal: claims.aal } : {}),
  };
}

export async function verifyRefreshToken(issuer: TokenIssuer, token: string, now?: number): Promise<RefreshClaims> {
  return refreshClaims(await verify(issuer, token, 'refresh', now));
}

/**
 * Every check of verifyRefreshToken but the signature's, for a token that a session row vouches
 * for: sessions.ts rotates only if the token's SHA-256 is the one stored when it was issued (so
 * its bytes, signature included, are the ones we signed), and verifies the signature of any
 * token no row vouches for before it counts for anything.
 */
export function readRefreshToken(issuer: TokenIssuer, token: string, now = nowSeconds()): RefreshClaims {
  try {
    return refreshClaims(checkClaims(issuer, parse(issuer, token).encodedPayload, 'refresh', now));
  } catch (error) {
    rejected(error, 'refresh');
  }
}
