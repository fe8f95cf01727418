/**
 * Owner pairing for a hosted user's bot: the account service hands the agent the SHA-256 of a
 * one-time code (POST /messenger/bot/owner-code on the account side); whoever sends the bot
 * `/start <code>` before it expires becomes an `allowed` contact. Only the hash is kept, one code
 * at a time, and claiming deletes it, so a code works once.
 */
import { createHash } from 'node:crypto';
import type { AgentDb } from '../store.js';

export const ownerCodeHash = (code: string): string => createHash('sha256').update(code).digest('hex');

/** `/start <code>` (Telegram's deep-link payload form); anything else is not a pairing attempt. */
export function pairingCode(text: string): string | undefined {
  return /^\/start(?:@\w+)?\s+([A-Za-z0-9_-]{8,64})\s*$/.exec(text)?.[1];
}

/** Replaces any earlier code. */
export async function setOwnerCode(db: AgentDb, codeSha256: string, expiresAt: Date): Promise<void> {
  await db.$transaction([db.ownerCode.deleteMany({}), db.ownerCode.create({ data: { codeSha256, expiresAt } })]);
}

/** True exactly once for a valid, unexpired code (a conditional delete: whoever wins pairs). */
export async function claimOwnerCode(db: AgentDb, code: string, now = new Date()): Promise<boolean> {
  const { count } = await db.ownerCode.deleteMany({ where: { codeSha256: ownerCodeHash(code), expiresAt: { gt: now } } });
  return count === 1;
}
