/**
 * The token pair (spec: "Token pair"; design.md: "Tokens"). Both are EdDSA JWTs with
 * iss, aud, sub (user id), sid (session), jti, typ, iat, exp, and `guest` for guests; the
 * refresh token also carries `gen`, the session generation it may rotate.
 * `typ` keeps the two apart: a refresh token never passes as an access token, nor the reverse.
 */
import { randomUUID, sign as signBytes } from 'node:crypto';
import { errors, jwtVerify, type JWTPayload } from 'jose';
import { unauthorized } from '../../common/errors.js';
import { TOKEN_ALG, type SigningKeys } from './keys.js';

export const ACCESS_TTL_SECONDS = 15 * 60;
export const REFRESH_TTL_SECONDS = 30 * 24 * 60 * 60;
const CLOCK_TOLERANCE_SECONDS = 5;

export interface TokenPair {
  access_token: string;
  refresh_token: string;
  token_type: 'bearer';
  expires_in: number;
}

export interface TokenIssuer {
  keys: SigningKeys;
  issuer: string;
  audience: string;
}

export interface TokenSubject {
  userId: string;
  sessionId: string;
  guest: boolean;
}

export interface AccessClaims extends TokenSubject {
  issuedAt: number;
}

export interface RefreshClaims extends TokenSubject {
  generation: number;
}

const base64url = (json: object) => Buffer.from(JSON.stringify(json)).toString('base64url');

/**
 * A compact JWS signed with node:crypto, synchronously: the same bytes jose's SignJWT makes,
 * at a fraction of the cost (WebCrypto's async round trip made signing the pair the biggest
 * share of a refresh). Verification stays with jose.
 */
function sign(issuer: TokenIssuer, subject: TokenSubject, typ: 'access' | 'refresh', ttl: number, now: number, extra: JWTPayload = {}): string {
  const header = base64url({ alg: TOKEN_ALG, kid: issuer.keys.kid, typ: 'JWT' });
  const payload = base64url({
    sid: subject.sessionId,
    typ,
    ...(subject.guest ? { guest: true } : {}),
    ...extra,
    iss: issuer.issuer,
    aud: issuer.audience,
    sub: subject.userId,
    jti: randomUUID(),
    iat: now,
    exp: now + ttl,
  });
  const signingInput = `${header}.${payload}`;
  return `${signingInput}.${signBytes(null, Buffer.from(signingInput), issuer.keys.privateKey).toString('base64url')}`;
}

export function signTokenPair(issuer: TokenIssuer, subject: TokenSubject, generation: number, now = Math.floor(Date.now() / 1000)): TokenPair {
  return {
    access_token: sign(issuer, subject, 'access', ACCESS_TTL_SECONDS, now),
    refresh_token: sign(issuer, subject, 'refresh', REFRESH_TTL_SECONDS, now, { gen: generation }),
    token_type: 'bearer',
    expires_in: ACCESS_TTL_SECONDS,
  };
}

async function verify(issuer: TokenIssuer, token: string, typ: 'access' | 'refresh', now?: number): Promise<JWTPayload> {
  try {
    const { payload } = await jwtVerify(
      token,
      (header) => {
        const key = header.kid ? issuer.keys.publicKeys.get(header.kid) : undefined;
        if (!key) throw new errors.JWKSNoMatchingKey();
        return key;
      },
      {
        algorithms: [TOKEN_ALG],
        issuer: issuer.issuer,
        audience: issuer.audience,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['sub', 'sid', 'jti', 'iat', 'exp'],
        ...(now === undefined ? {} : { currentDate: new Date(now * 1000) }),
      },
    );
    if (payload.typ !== typ) throw new Error('wrong token type');
    if (typeof payload.sid !== 'string' || typeof payload.sub !== 'string') throw new Error('malformed claims');
    return payload;
  } catch (error) {
    const expired = error instanceof errors.JWTExpired;
    throw unauthorized(
      expired ? `The ${typ} token has expired` : `Invalid ${typ} token`,
      expired ? 'TOKEN_EXPIRED' : 'INVALID_TOKEN',
    );
  }
}

export async function verifyAccessToken(issuer: TokenIssuer, token: string, now?: number): Promise<AccessClaims> {
  const payload = await verify(issuer, token, 'access', now);
  return { userId: payload.sub as string, sessionId: payload.sid as string, guest: payload.guest === true, issuedAt: payload.iat as number };
}

export async function verifyRefreshToken(issuer: TokenIssuer, token: string, now?: number): Promise<RefreshClaims> {
  const payload = await verify(issuer, token, 'refresh', now);
  if (typeof payload.gen !== 'number' || !Number.isInteger(payload.gen) || payload.gen < 0) throw unauthorized('Invalid refresh token', 'INVALID_TOKEN');
  return { userId: payload.sub as string, sessionId: payload.sid as string, guest: payload.guest === true, generation: payload.gen };
}
