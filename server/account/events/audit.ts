/**
 * The audit log (docs/admin.md, "Audit log"): one row for every admin and API-key action — who
 * (an admin, a key, the command line, or the service acting on ADMIN_EMAILS), what, to whom,
 * when, from which address, and the record before and after a change.
 *
 * `recordAudit` takes the transaction of the change it records when there is one, so the log
 * never claims what did not happen. The table is append-only: no API edits or deletes a row, and
 * triggers (migrations `admin_access`, `audit_chain`) refuse UPDATE, DELETE and TRUNCATE from any
 * statement and chain every new row to the one before (audit-chain.ts checks the chain).
 */
import { randomUUID } from 'node:crypto';
import type { Prisma } from '../../generated/account/client.js';
import type { AccountDb } from '../store.js';

export type AuditActorType = 'user' | 'api_key' | 'cli' | 'system';

export interface AuditActor {
  type: AuditActorType;
  /** The admin's user id or the key's id; null for the command line and the service itself. */
  id: string | null;
  /** What a reader recognises the actor by at the time: the admin's e-mail, the key's name. */
  label: string | null;
}

export interface AuditEntry {
  actor: AuditActor;
  /** `user.ban`, `key.create`, … (docs/admin.md lists them). */
  action: string;
  target?: { type: string; id: string } | undefined;
  ip?: string | null | undefined;
  before?: Prisma.InputJsonValue | undefined;
  after?: Prisma.InputJsonValue | undefined;
}

/** Whatever can write a row: the client or the transaction of the change being recorded. */
export type AuditWriter = Pick<AccountDb, 'auditEvent'> | Pick<Prisma.TransactionClient, 'auditEvent'>;

export const CLI_ACTOR: AuditActor = { type: 'cli', id: null, label: 'npm run admin' };
export const SYSTEM_ACTOR: AuditActor = { type: 'system', id: null, label: 'ADMIN_EMAILS' };

export async function recordAudit(db: AuditWriter, entry: AuditEntry, at = new Date()): Promise<void> {
  await db.auditEvent.create({
    data: {
      id: randomUUID(),
      at,
      actorType: entry.actor.type,
      actorId: entry.actor.id,
      actorLabel: entry.actor.label,
      action: entry.action,
      targetType: entry.target?.type ?? null,
      targetId: entry.target?.id ?? null,
      ip: entry.ip ?? null,
      ...(entry.before === undefined ? {} : { before: entry.before }),
      ...(entry.after === undefined ? {} : { after: entry.after }),
    },
  });
}

export interface AuditFilter {
  action?: string | undefined;
  actorId?: string | undefined;
  targetId?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
}

/** Opaque page cursor: the (at, id) of the last row shown; newer rows never shift older pages. */
export const encodeCursor = (at: Date, id: string): string => Buffer.from(`${at.toISOString()}|${id}`).toString('base64url');

export function decodeCursor(cursor: string): { at: Date; id: string } | undefined {
  const [iso, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const at = new Date(iso ?? '');
  return id && !Number.isNaN(at.getTime()) ? { at, id } : undefined;
}

/** Newest first, `limit` rows after `cursor`. */
export async function listAudit(db: AccountDb, filter: AuditFilter, page: { cursor?: string | undefined; limit: number }) {
  const after = page.cursor ? decodeCursor(page.cursor) : undefined;
  const rows = await db.auditEvent.findMany({
    where: {
      ...(filter.action ? { action: filter.action } : {}),
      ...(filter.actorId ? { actorId: filter.actorId } : {}),
      ...(filter.targetId ? { targetId: filter.targetId } : {}),
      ...(filter.since || filter.until ? { at: { ...(filter.since ? { gte: filter.since } : {}), ...(filter.until ? { lt: filter.until } : {}) } } : {}),
      ...(after ? { OR: [{ at: { lt: after.at } }, { at: after.at, id: { lt: after.id } }] } : {}),
    },
    orderBy: [{ at: 'desc' }, { id: 'desc' }],
    take: page.limit + 1,
  });
  const shown = rows.slice(0, page.limit);
  const last = shown.at(-1);
  return { events: shown, nextCursor: rows.length > page.limit && last ? encodeCursor(last.at, last.id) : null };
}
