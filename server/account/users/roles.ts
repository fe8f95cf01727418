/**
 * The `admin` role (docs/admin.md, "Who may call it"): granted and revoked by an admin (the API),
 * by the command line (`npm run admin -- grant|revoke`, scripts/admin.ts) or, for any account
 * whose verified address is in ADMIN_EMAILS, by the service itself at start and at every sign-in.
 * Each change is written with its audit row in one transaction.
 */
import { notFound } from '../../common/errors.js';
import type { AccountDb } from '../store.js';
import { recordAudit, SYSTEM_ACTOR, type AuditActor } from '../events/audit.js';

export type Role = 'user' | 'admin';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A user by id, or by verified e-mail address (case-insensitive). */
export async function findUserId(db: AccountDb, emailOrId: string): Promise<string | undefined> {
  const where = UUID.test(emailOrId) ? { id: emailOrId.toLowerCase() } : { email: emailOrId.trim().toLowerCase() };
  return (await db.user.findUnique({ where, select: { id: true } }))?.id;
}

/** Sets the user's role; answers whether it changed. 404 ACCOUNT_NOT_FOUND for an unknown user. */
export async function setRole(db: AccountDb, userId: string, role: Role, actor: AuditActor, ip: string | null = null): Promise<boolean> {
  return db.$transaction(async (tx) => {
    const user = await tx.user.findUnique({ where: { id: userId }, select: { role: true } });
    if (!user) throw notFound('No such account', 'ACCOUNT_NOT_FOUND');
    if (user.role === role) return false;
    await tx.user.update({ where: { id: userId }, data: { role } });
    await recordAudit(tx, {
      actor,
      action: role === 'admin' ? 'user.grant_admin' : 'user.revoke_admin',
      target: { type: 'user', id: userId },
      ip,
      before: { role: user.role },
      after: { role },
    });
    return true;
  });
}

/** ADMIN_EMAILS: makes admins of the listed verified addresses (all of them, or only `userId`'s). */
export async function promoteAdminEmails(db: AccountDb, emails: readonly string[], userId?: string): Promise<void> {
  if (emails.length === 0) return;
  const candidates = await db.user.findMany({
    where: { email: { in: [...emails] }, role: { not: 'admin' }, ...(userId ? { id: userId } : {}) },
    select: { id: true },
  });
  for (const { id } of candidates) await setRole(db, id, 'admin', SYSTEM_ACTOR);
}
