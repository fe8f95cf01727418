/**
 * One native ID token signs in once (docs/security.md, "Native ID tokens"). An ID token is a
 * bearer credential until it expires: one that leaked (a log, a proxy, a compromised app) would
 * otherwise sign in again and again. Its SHA-256 is kept until its `exp`; the insert is the
 * check, so of two concurrent uses exactly one wins (primary key).
 */
import { createHash } from 'node:crypto';
import { unauthorized } from '../../../common/errors.js';
import type { AccountDb } from '../../store.js';

/** Records the use of `idToken`, or refuses it (401 INVALID_ID_TOKEN) when it was used before. */
export async function useIdTokenOnce(db: AccountDb, input: { idToken: string; expiresAt: Date; now: Date }): Promise<void> {
  const tokenHash = createHash('sha256').update(input.idToken).digest('base64url');
  // Rows of expired tokens go here: the table holds at most the last token lifetime's sign-ins.
  await db.usedIdToken.deleteMany({ where: { expiresAt: { lte: input.now } } });
  const inserted = await db.$executeRaw`
    INSERT INTO used_id_tokens (token_hash, expires_at) VALUES (${tokenHash}, ${input.expiresAt})
    ON CONFLICT (token_hash) DO NOTHING`;
  if (inserted !== 1) throw unauthorized('The ID token is not valid: already used', 'INVALID_ID_TOKEN');
}
