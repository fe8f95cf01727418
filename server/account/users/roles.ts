/**
 * The `admin` role (docs/admin.md, "Who may call it"): granted and revoked by an admin (the API),
 * by the command line (`npm run admin -- grant|revoke`, scripts/admin.ts) or, for any account
 * whose verified address is in ADMIN_EMAILS, by the service itself at start and at every sign-in.
 * Each change is written with its audit row in one transaction.
 *
 * Admins are guarded from the rest of the admin API (docs/admin.md, "Admins are guarded"): only an
 * admin, never an API key, acts on an account that holds the role (a leaked support key must not
 * lock every admin out), and the last admin who is not banned cannot be banned, deleted or
 * demoted, by anyone or the command line.
 */
import { conflict, forbidden, notFound } from '../../common/errors.js';
import type { Prisma } from '../../generated/account/client.js';
import type { AccountDb } from '../store.js';
import { recordAudit, SYSTEM_ACTOR, type AuditActor } from '../events/audit.js';

export type Role = 'user' | 'admin';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A user by id, or by verified e-mail address (case-insensitive). */
export async function findUserId(db: AccountDb, emailOrId: string): Promise<string | undefined> {
  const where = UUID.test(emailOrId) ? { id: emailOrId.toLowerCase() } : { email: emailOrId.trim().toLowerCase() };
  return (await db.user.findUnique({ where, select: { id: true } }))?.id;
}

/**
 * 403 FORBIDDEN when an API key (anything but an admin's own session) would act on an account
 * that holds the admin role. Unknown users pass: the action answers its own 404.
 */
export async function refuseKeyOnAdmin(db: Pick<AccountDb, 'user'>, actor: AuditActor, userId: string): Promise<void> {
  if (actor.type === 'user') return;
  const target = await db.user.findUnique({ where: { id: userId }, select: { role: true } });
  if (target?.role === 'admin') throw forbidden('Only an admin may act on an account with the admin role, not an API key');
}

/**
 * 409 LAST_ADMIN unless an admin other than `userId`, and not banned, remains. Locks every
 * admin's row (in one order, so two such transactions queue rather than deadlock) until the
 * transaction ends: two admins removing each other at once cannot both pass, the second reads
 * the first's change.
 */
export async function keepAnotherAdmin(tx: Prisma.TransactionClient, userId: string, now = new Date()): Promise<void> {
  const admins = await tx.$queryRaw<Array<{ id: string; active: boolean }>>`
    SELECT id, (banned_at IS NULL OR (banned_until IS NOT NULL AND banned_until <= ${now})) AS active
    FROM users WHERE role = 'admin' ORDER BY id FOR UPDATE`;
  if (!admins.some((admin) => admin.active && admin.id !== userId)) {
    throw conflict('The last admin cannot be banned, deleted or demoted: make another admin first', 'LAST_ADMIN');
  }
}

/**
 * Before an account is deleted: an admin loses the role first, in a transaction that checks
 * another admin remains (409 LAST_ADMIN otherwise), so two deletions at once cannot take both.
 */
export async function giveUpAdminRole(db: AccountDb, userId: string): Promise<void> {
  await db.$transaction(async (tx) => {
    const user = await tx.user.findUnique({ where: { id: userId }, select: { role: true } });
    if (user?.role !== 'admin') return;
    await keepAnotherAdmin(tx, userId);
    await tx.user.update({ where: { id: userId }, data: { role: 'user' } });
  });
}

/** Sets the user's role; answers whether it changed. 404 ACCOUNT_NOT_FOUND for an unknown user, 409 LAST_ADMIN for the last admin's demotion. */
export async function setRole(db: AccountDb, userId: string, role: Role, actor: AuditActor, ip: string | null = null): Promise<boolean> {
  return db.$transaction(async (tx) => {
    const user = await tx.user.findUnique({ where: { id: userId }, select: { role: true } });
    if (!user) throw notFound('No such account', 'ACCOUNT_NOT_FOUND');
    if (user.role === role) return false;
    if (user.role === 'admin') await keepAnotherAdmin(tx, userId);
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
