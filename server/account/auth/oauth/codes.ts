/**
 * The one-time auth code that carries a finished browser sign-in from the callback redirect to
 * POST /auth/exchange (spec: random, single use, 60 s). Only its SHA-256 is stored; consuming
 * it is one conditional UPDATE, so of concurrent exchanges exactly one succeeds.
 *
 * The code is bound to the browser the callback answered (docs/security.md, "Whose account a
 * sign-in joins"): the callback sets a random exchange cookie, whose hash is stored with the
 * code, and the exchange needs both. A code carried to another browser (login CSRF: a victim's
 * page fed the attacker's `?code=`) is worthless there.
 */
import { randomBytes } from 'node:crypto';
import { unauthorized } from '../../../common/errors.js';
import type { AccountDb } from '../../store.js';
import { onGuestTerms, type SignedInUser } from '../../users/identities.js';
import { sha256 } from './state.js';

export interface IssuedAuthCode {
  code: string;
  /** The value of the exchange cookie (cookies.ts) the callback gives the browser. */
  browserSecret: string;
}

export async function issueAuthCode(db: AccountDb, input: { userId: string; provider: string; now: Date; ttlSeconds: number }): Promise<IssuedAuthCode> {
  const code = randomBytes(32).toString('base64url');
  const browserSecret = randomBytes(32).toString('base64url');
  await db.authCode.deleteMany({ where: { expiresAt: { lt: new Date(input.now.getTime() - 3600_000) } } });
  await db.authCode.create({
    data: {
      codeHash: sha256(code),
      userId: input.userId,
      provider: input.provider,
      browserHash: sha256(browserSecret),
      expiresAt: new Date(input.now.getTime() + input.ttlSeconds * 1000),
    },
  });
  return { code, browserSecret };
}

const invalidCode = () => unauthorized('The auth code is invalid, expired, already used, or was issued to another browser', 'INVALID_AUTH_CODE');

/**
 * Consumes the code, in the browser it was issued to, and answers whose session to start and by
 * which method: the account the callback settled. An access token sent along changes nothing —
 * an account that started the flow was already joined at the callback (its token bound the OAuth
 * state), and an account that did not start it is never joined.
 */
export async function exchangeAuthCode(
  db: AccountDb,
  input: { code: string; browserSecret: string | undefined; now: Date },
): Promise<Pick<SignedInUser, 'userId' | 'guest'> & { method: string }> {
  if (input.code.length > 256 || !input.browserSecret || input.browserSecret.length > 256) throw invalidCode();
  const codeHash = sha256(input.code);
  const { count } = await db.authCode.updateMany({
    where: { codeHash, browserHash: sha256(input.browserSecret), usedAt: null, expiresAt: { gt: input.now } },
    data: { usedAt: input.now },
  });
  if (count !== 1) throw invalidCode();
  const row = await db.authCode.findUniqueOrThrow({ where: { codeHash }, select: { userId: true, provider: true } });
  const user = await db.user.findUnique({ where: { id: row.userId }, select: { tier: true } });
  if (!user) throw invalidCode();
  return { userId: row.userId, guest: onGuestTerms(user.tier), method: row.provider || 'oauth' };
}
