/**
 * Operators' API keys (docs/admin.md, "API keys"). A key reads `ak_<id>_<secret>`: the id (24 hex
 * characters) finds the row and is shown in lists; the secret (32 random bytes, base64url) is
 * shown once, at creation, and only its SHA-256 is stored, so a copy of the table yields no key.
 * The presented secret's digest is compared with the stored one in constant time.
 *
 * Revocation and expiry are read from the row on every call: a revoked key stops at once, on
 * every instance. Last use is written at most once a minute per key.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { unauthorized } from '../../common/errors.js';
import type { AccountDb } from '../store.js';

export const SCOPES = ['users:read', 'users:write', 'agents:read', 'agents:write', 'webhooks:write', 'audit:read'] as const;
export type Scope = (typeof SCOPES)[number];

const KEY = /^ak_([0-9a-f]{24})_([\w-]{43})$/;
const LAST_USED_EVERY_MS = 60_000;

const digest = (secret: string): Buffer => createHash('sha256').update(secret).digest();

export interface ApiKeyCaller {
  id: string;
  name: string;
  scopes: Scope[];
}

export interface NewApiKey {
  name: string;
  scopes: Scope[];
  expiresAt?: Date | null | undefined;
  createdBy?: string | null | undefined;
}

/** Creates a key; the answer's `key` is the only time the secret exists outside the caller. */
export async function createApiKey(db: Pick<AccountDb, 'apiKey'>, input: NewApiKey, now = new Date()) {
  const id = randomBytes(12).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  const row = await db.apiKey.create({
    data: {
      id,
      name: input.name,
      secretHash: digest(secret).toString('hex'),
      scopes: [...new Set(input.scopes)],
      createdBy: input.createdBy ?? null,
      createdAt: now,
      expiresAt: input.expiresAt ?? null,
    },
  });
  return { row, key: `ak_${id}_${secret}` };
}

export const isApiKey = (authorization: string | undefined): boolean => authorization?.startsWith('Bearer ak_') === true;

/** The key in `Authorization: Bearer ak_…` if it is genuine, live and unexpired; 401 INVALID_API_KEY otherwise. */
export async function verifyApiKey(db: Pick<AccountDb, 'apiKey'>, authorization: string, now = new Date()): Promise<ApiKeyCaller> {
  const match = KEY.exec(authorization.slice('Bearer '.length));
  const refused = () => unauthorized('The API key is unknown, revoked or expired', 'INVALID_API_KEY');
  if (!match) throw refused();
  const [, id, secret] = match as unknown as [string, string, string];
  const row = await db.apiKey.findUnique({ where: { id } });
  // The digest is computed and compared even for an unknown id, so timing tells nothing about ids.
  const stored = Buffer.from(row?.secretHash ?? '0'.repeat(64), 'hex');
  const genuine = timingSafeEqual(stored, digest(secret));
  if (!row || !genuine || row.revokedAt || (row.expiresAt && row.expiresAt <= now)) throw refused();
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() > LAST_USED_EVERY_MS) {
    await db.apiKey.updateMany({
      where: { id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: new Date(now.getTime() - LAST_USED_EVERY_MS) } }] },
      data: { lastUsedAt: now },
    });
  }
  return { id: row.id, name: row.name, scopes: row.scopes.filter((s): s is Scope => (SCOPES as readonly string[]).includes(s)) };
}

export const listApiKeys = (db: Pick<AccountDb, 'apiKey'>) => db.apiKey.findMany({ orderBy: [{ createdAt: 'desc' }, { id: 'asc' }] });

/** Marks the key revoked; the row stays for the list and the audit log. Null when there is no such live key. */
export async function revokeApiKey(db: Pick<AccountDb, 'apiKey'>, id: string, now = new Date()) {
  const { count } = await db.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: now } });
  return count === 1 ? db.apiKey.findUnique({ where: { id } }) : null;
}
