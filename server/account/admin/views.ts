/** Rows of the admin store as the wire shapes of schemas.ts show them. */
import { utc } from '../users/account.js';

const utcOrNull = (date: Date | null): string | null => (date ? utc(date) : null);

export const apiKeyView = (row: {
  id: string;
  name: string;
  scopes: string[];
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}) => ({
  id: row.id,
  name: row.name,
  scopes: row.scopes,
  created_at: utc(row.createdAt),
  expires_at: utcOrNull(row.expiresAt),
  last_used_at: utcOrNull(row.lastUsedAt),
  revoked_at: utcOrNull(row.revokedAt),
});

export const auditView = (row: {
  id: string;
  at: Date;
  actorType: string;
  actorId: string | null;
  actorLabel: string | null;
  action: string;
  targetType: string | null;
  targetId: string | null;
  ip: string | null;
  before: unknown;
  after: unknown;
}) => ({
  id: row.id,
  at: utc(row.at),
  actor: { type: row.actorType, id: row.actorId, label: row.actorLabel },
  action: row.action,
  target: row.targetType && row.targetId ? { type: row.targetType, id: row.targetId } : null,
  ip: row.ip,
  before: row.before ?? null,
  after: row.after ?? null,
});

export { utcOrNull };
