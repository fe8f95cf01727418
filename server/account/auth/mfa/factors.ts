/**
 * The second factor (docs/security.md, "A second factor"): an authenticator app (TOTP, totp.ts)
 * that any full account may enrol, ten one-time recovery codes (recovery-codes.ts), and the
 * assurance level of sessions (tokens/sessions.ts): an account with a confirmed factor gets, from
 * any first factor, an `aal1` session that can do nothing but pass the second (`verify`), which
 * raises it to `aal2`, as Supabase's MFA does.
 *
 * The rules, each a step below:
 * - enrolment hands out the secret once; the factor guards nothing until a right code confirms
 *   it, and a confirmed factor cannot be confirmed again (no second set of recovery codes);
 * - at confirmation, the confirming session passed the factor (`aal2`), and every other live
 *   session of the account without a level is held at `aal1`: sessions opened before the factor
 *   existed do not keep a way around it;
 * - a code is accepted once: the factor remembers the newest time step it accepted and takes only
 *   newer ones (one conditional UPDATE, so two racing uses of one code cannot both pass);
 * - 5 wrong codes (TOTP or recovery) per account per 15 minutes, whatever the client; every try
 *   is counted before it is checked, a right one is given back: then 429 MFA_CODE_ENTRY_PAUSED;
 * - removing a confirmed factor needs an `aal2` session; removing the last one also drops the
 *   recovery codes and ends the sessions still waiting for it.
 */
import type { TokenPair } from '@contracts/account/tokens.js';
import { AppError, conflict, forbidden, notFound, unauthorized } from '../../../common/errors.js';
import type { SecretBox } from '../../agents/secrets.js';
import type { RateLimits } from '../../ratelimit/limits.js';
import type { AccountDb } from '../../store.js';
import type { AccessClaims } from '../../tokens/jwt.js';
import { mfaRequired, type TokenService } from '../../tokens/service.js';
import { activityRow, type ClientInfo } from '../../events/activity.js';
import { utc } from '../../users/account.js';
import { newRecoveryCodes, recoveryCodeHash } from './recovery-codes.js';
import type { SecondFactorProof } from './schemas.js';
import { base32Decode, matchStep, newTotpSecret, otpauthUri } from './totp.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const WRONG_TRIES = 'auth.mfa.account';

export interface SecondFactorDeps {
  db: AccountDb;
  /** Seals TOTP secrets at rest (the agent secrets key, agents/secrets.ts). */
  box: SecretBox;
  rateLimits: RateLimits;
  tokens: TokenService;
  /** The name authenticator apps show beside the code (WEBAUTHN_RP_NAME). */
  issuer: string;
}

const factorNotFound = () => notFound('No such second factor on this account', 'MFA_FACTOR_NOT_FOUND');
const wrongCode = (detail = 'The code is wrong, expired or already used') => unauthorized(detail, 'INVALID_CODE');

export class SecondFactors {
  constructor(private readonly deps: SecondFactorDeps) {}

  /** The account's factors (confirmed or not) and how many recovery codes are left: the Account page. */
  async list(userId: string) {
    const { db } = this.deps;
    const [factors, left] = await Promise.all([
      db.mfaFactor.findMany({ where: { userId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] }),
      db.mfaRecoveryCode.count({ where: { userId, usedAt: null } }),
    ]);
    return {
      factors: factors.map((f) => ({
        id: f.id,
        kind: 'totp' as const,
        confirmed: f.confirmedAt !== null,
        created_at: utc(f.createdAt),
        last_used_at: f.lastUsedAt ? utc(f.lastUsedAt) : null,
      })),
      recovery_codes_left: left,
    };
  }

  /** A new, unconfirmed authenticator app; an earlier unconfirmed one is replaced. Full accounts only. */
  async enrolTotp(user: Pick<AccessClaims, 'userId' | 'guest'>) {
    const { db, box, issuer } = this.deps;
    if (user.guest) throw forbidden('A second factor needs a full account: add an e-mail address or a provider first', 'GUEST_LIMITED');
    const secret = newTotpSecret();
    const factor = await db.$transaction(async (tx) => {
      await lockUser(tx, user.userId);
      if (await tx.mfaFactor.count({ where: { userId: user.userId, confirmedAt: { not: null } } }))
        throw conflict('This account already has an authenticator app; remove it before adding another', 'MFA_ALREADY_ENROLLED');
      await tx.mfaFactor.deleteMany({ where: { userId: user.userId, confirmedAt: null } });
      return tx.mfaFactor.create({ data: { userId: user.userId, secretSealed: box.seal(secret) } });
    });
    const account = (await db.user.findUnique({ where: { id: user.userId }, select: { email: true } }))?.email ?? `account-${user.userId.slice(0, 8)}`;
    return { factor_id: factor.id, secret, otpauth_uri: otpauthUri({ secret, issuer, account }) };
  }

  /**
   * A right code confirms the factor: recovery codes are made (returned this once), the calling
   * session passed the factor, the account's other sessions without a level wait for it.
   */
  async confirmTotp(user: AccessClaims, factorId: string, code: string, client: ClientInfo): Promise<{ recovery_codes: string[] }> {
    const { db, tokens } = this.deps;
    const factor = await this.factorOf(user.userId, factorId);
    if (factor.confirmedAt) throw conflict('This second factor is already confirmed', 'MFA_ALREADY_CONFIRMED');
    const step = matchStep(this.secretOf(factor.secretSealed), code, Date.now());
    if (step === undefined) throw wrongCode('The code is wrong: check the device clock and enter the code the app shows now');
    const recoveryCodes = newRecoveryCodes();
    const now = new Date();
    const held = await db.$transaction(async (tx) => {
      await lockUser(tx, user.userId);
      if (await tx.mfaFactor.count({ where: { userId: user.userId, confirmedAt: { not: null } } }))
        throw conflict('This account already has an authenticator app', 'MFA_ALREADY_ENROLLED');
      const { count } = await tx.mfaFactor.updateMany({
        where: { id: factor.id, confirmedAt: null },
        data: { confirmedAt: now, lastStep: BigInt(step), lastUsedAt: now },
      });
      if (count !== 1) throw conflict('This second factor is already confirmed', 'MFA_ALREADY_CONFIRMED');
      await tx.mfaRecoveryCode.deleteMany({ where: { userId: user.userId } });
      await tx.mfaRecoveryCode.createMany({
        data: recoveryCodes.map((c) => ({ userId: user.userId, codeHash: recoveryCodeHash(c)!, createdAt: now })),
      });
      await tx.session.updateMany({ where: { id: user.sessionId, userId: user.userId }, data: { aal: 'aal2' } });
      const others = await tx.$queryRaw<Array<{ id: string }>>`
        UPDATE sessions SET aal = 'aal1'
         WHERE user_id = ${user.userId}::uuid AND id <> ${user.sessionId}::uuid AND aal IS NULL AND revoked_at IS NULL AND expires_at > ${now}
        RETURNING id::text`;
      await tx.activityEvent.create({ data: activityRow(user.userId, { type: 'mfa_enabled', detail: { method: 'totp' } }, client, now) });
      return others.map((s) => s.id);
    });
    tokens.sessions.markLevel([user.sessionId], 'aal2');
    tokens.sessions.markLevel(held, 'aal1');
    return { recovery_codes: recoveryCodes };
  }

  /** Removes a factor: a confirmed one only from an `aal2` session; the last one takes the recovery codes and waiting sessions with it. */
  async remove(user: AccessClaims, factorId: string, client: ClientInfo): Promise<void> {
    const { db, tokens } = this.deps;
    const factor = await this.factorOf(user.userId, factorId);
    if (factor.confirmedAt && user.aal !== 'aal2') throw mfaRequired('Removing a second factor needs a session that passed it: POST /auth/mfa/verify first');
    const now = new Date();
    const ended = await db.$transaction(async (tx) => {
      await lockUser(tx, user.userId);
      const { count } = await tx.mfaFactor.deleteMany({ where: { id: factor.id, userId: user.userId } });
      if (count !== 1) throw factorNotFound();
      if (!factor.confirmedAt || (await tx.mfaFactor.count({ where: { userId: user.userId, confirmedAt: { not: null } } }))) return [];
      await tx.mfaRecoveryCode.deleteMany({ where: { userId: user.userId } });
      const waiting = await tx.$queryRaw<Array<{ id: string }>>`
        UPDATE sessions SET revoked_at = ${now} WHERE user_id = ${user.userId}::uuid AND aal = 'aal1' AND revoked_at IS NULL RETURNING id::text`;
      await tx.activityEvent.create({ data: activityRow(user.userId, { type: 'mfa_disabled', detail: { method: 'totp' } }, client, now) });
      return waiting.map((s) => s.id);
    });
    tokens.sessions.markRevoked(ended);
  }

  /**
   * The second step: a code of the confirmed factor, or a recovery code, raises the calling session
   * to `aal2` and answers its new pair. Wrong tries are budgeted per account before the check.
   */
  async verify(user: AccessClaims, proof: SecondFactorProof, client: ClientInfo): Promise<TokenPair> {
    const { db, rateLimits, tokens } = this.deps;
    const factor = await db.mfaFactor.findFirst({ where: { userId: user.userId, confirmedAt: { not: null } } });
    if (!factor) throw conflict('This account has no confirmed second factor', 'MFA_NOT_ENROLLED');
    await admitTry(rateLimits, user.userId);
    const now = new Date();
    const method = 'code' in proof ? 'totp' : 'recovery_code';
    const passed = await db.$transaction(async (tx) => {
      let accepted: boolean;
      if ('code' in proof) {
        const step = matchStep(this.secretOf(factor.secretSealed), proof.code, now.getTime());
        // Only a step newer than the last accepted one: a code works once, and never after a newer one.
        accepted =
          step !== undefined &&
          (await tx.$executeRaw`
            UPDATE mfa_factors SET last_step = ${step}, last_used_at = ${now}
             WHERE id = ${factor.id}::uuid AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < ${step})`) === 1;
      } else {
        const hash = recoveryCodeHash(proof.recoveryCode);
        accepted =
          hash !== undefined &&
          (await tx.mfaRecoveryCode.updateMany({ where: { userId: user.userId, codeHash: hash, usedAt: null }, data: { usedAt: now } })).count === 1;
      }
      if (accepted) await tx.activityEvent.create({ data: activityRow(user.userId, { type: 'mfa_verified', detail: { method } }, client, now) });
      return accepted;
    });
    if (!passed) throw wrongCode(method === 'totp' ? undefined : 'The recovery code is wrong or already used');
    await rateLimits.refund(WRONG_TRIES, user.userId).catch(() => undefined);
    return tokens.elevate(user);
  }

  private async factorOf(userId: string, factorId: string) {
    const factor = UUID.test(factorId) ? await this.deps.db.mfaFactor.findFirst({ where: { id: factorId, userId } }) : null;
    if (!factor) throw factorNotFound();
    return factor;
  }

  private secretOf(sealed: string): Buffer {
    return base32Decode(this.deps.box.open(sealed));
  }
}

type Tx = Parameters<Parameters<AccountDb['$transaction']>[0]>[0];

/** Enrolment, confirmation and removal of one account's factors run one at a time. */
async function lockUser(tx: Tx, userId: string): Promise<void> {
  await tx.$queryRaw`SELECT id FROM users WHERE id = ${userId}::uuid FOR UPDATE`;
}

/** Counts one try against the account's budget of wrong codes, or 429 MFA_CODE_ENTRY_PAUSED with Retry-After. */
async function admitTry(rateLimits: RateLimits, userId: string): Promise<void> {
  try {
    await rateLimits.consume(WRONG_TRIES, userId);
  } catch (error) {
    if (!(error instanceof AppError) || error.status !== 429) throw error;
    const retryAfter = error.headers['Retry-After'] ?? '900';
    throw new AppError(429, 'MFA_CODE_ENTRY_PAUSED', `Too many wrong codes for this account: try again in ${retryAfter} s`, { 'Retry-After': retryAfter });
  }
}
