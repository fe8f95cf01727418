import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Checks `Authorization: Bearer <agent_secret>` against the configured SHA-256 hash.
 * Hashing first makes both sides 32 bytes, so the comparison is constant-time whatever the input.
 */
export function isAgentSecret(authorization: string | undefined, secretSha256: Buffer): boolean {
  const match = /^Bearer (.+)$/.exec(authorization ?? '');
  const given = createHash('sha256')
    .update(match?.[1] ?? '')
    .digest();
  return timingSafeEqual(given, secretSha256) && match !== null;
}
