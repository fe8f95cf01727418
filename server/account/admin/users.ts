/**
 * What an operator does to users (docs/admin.md, "Users"): list and search, one user in full,
 * invite, metadata and per-user overrides, ban and unban, delete, revoke every session. Every
 * change is written with its audit row (before/after) in one transaction; what lies outside the
 * store (session caches, the agent process, the bot's webhook) follows right after.
 */
import { randomUUID } from 'node:crypto';
import { conflict, notFound } from '../../common/errors.js';
import type { Prisma } from '../../generated/account/client.js';
import type { AccountServices } from '../services.js';
import { listSessions } from '../tokens/sessions.js';
import { listActivity } from '../events/activity.js';
import { removeUser } from '../users/delete.js';
import { onGuestTerms } from '../users/identities.js';
import type { AdminCaller } from './access.js';
import { recordAudit } from '../events/audit.js';
import { sessionRevoked } from '../tokens/sessions.js';
import { emitEvent } from '../events/outbox.js';
import { isBanned } from '../users/bans.js';
import { giveUpAdminRole, keepAnotherAdmin, refuseKeyOnAdmin } from '../users/roles.js';
import { utcOrNull } from './views.js';
import { utc } from '../users/account.js';
import { usageFigures, type UsageColumn } from './agents.js';

/** The user view's activity: the newest 50 account events and the newest 20 web calls of their agent. */
const ADMIN_ACTIVITY_WINDOWS = { account: 50, web: 20 };

type Services = Pick<AccountServices, 'store' | 'tokens' | 'agents' | 'bots' | 'email' | 'modelBudget' | 'config'>;

/** An admin never bans, deletes or demotes their own account: the last admin would lock everyone out. */
export function selfActionRefused(caller: AdminCaller, userId: string): void {
  if (caller.adminUserId === userId) throw conflict('An admin cannot ban, delete or demote their own account', 'SELF_ACTION');
}

const noSuchUser = () => notFound('No such account', 'ACCOUNT_NOT_FOUND');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const WALLET = /^0x[0-9a-f]{40}$/i;

const summarySelect = {
  id: true,
  email: true,
  tier: true,
  role: true,
  createdAt: true,
  lastActiveAt: true,
  bannedAt: true,
  bannedUntil: true,
  banReason: true,
} as const;

type SummaryRow = Prisma.UserGetPayload<{ select: typeof summarySelect }>;

export function userSummary(row: SummaryRow, now = new Date()) {
  return {
    id: row.id,
    email: row.email,
    guest: onGuestTerms(row.tier),
    tier: row.tier,
    admin: row.role === 'admin',
    created_at: utc(row.createdAt),
    last_active_at: utc(row.lastActiveAt),
    ban: row.bannedAt && isBanned(row, now) ? { reason: row.banReason ?? '', banned_at: utc(row.bannedAt), expires_at: utcOrNull(row.bannedUntil) } : null,
  };
}

export interface UserListQuery {
  query?: string | undefined;
  filter?: 'guest' | 'full' | 'banned' | 'admin' | undefined;
  sort: 'created' | 'last_active';
  cursor?: string | undefined;
  limit: number;
}

/** What a search term matches: a user id, a wallet address, an e-mail address (or its start), a Telegram bot username. */
function searchWhere(term: string): Prisma.UserWhereInput {
  if (UUID.test(term)) return { id: term.toLowerCase() };
  if (WALLET.test(term)) return { identities: { some: { provider: 'wallet', subject: term.toLowerCase() } } };
  if (term.includes('@') && !term.startsWith('@')) return { email: { startsWith: term.toLowerCase() } };
  return { messengerBot: { is: { botUsername: { equals: term.replace(/^@/, ''), mode: 'insensitive' } } } };
}

function filterWhere(filter: UserListQuery['filter'], now: Date): Prisma.UserWhereInput {
  switch (filter) {
    case 'guest':
      return { tier: { not: 'full' } };
    case 'full':
      return { tier: 'full' };
    case 'admin':
      return { role: 'admin' };
    case 'banned':
      return { bannedAt: { not: null }, OR: [{ bannedUntil: null }, { bannedUntil: { gt: now } }] };
    default:
      return {};
  }
}

/**
 * Newest first by keyset (the sort column, then id): the cursor is the last row's (time, id), so
 * users signing up meanwhile land before the first page and never shift or repeat a later one.
 */
export async function listUsers(services: Services, q: UserListQuery, now = new Date()) {
  const column = q.sort === 'last_active' ? 'lastActiveAt' : 'createdAt';
  const after = q.cursor ? decodeUserCursor(q.cursor) : undefined;
  const where: Prisma.UserWhereInput = {
    AND: [
      q.query ? searchWhere(q.query) : {},
      filterWhere(q.filter, now),
      after ? { OR: [{ [column]: { lt: after.at } }, { [column]: after.at, id: { lt: after.id } }] } : {},
    ],
  };
  const rows = await services.store.db.user.findMany({ where, orderBy: [{ [column]: 'desc' }, { id: 'desc' }], take: q.limit + 1, select: summarySelect });
  const shown = rows.slice(0, q.limit);
  const last = shown.at(-1);
  return {
    users: shown.map((row) => userSummary(row, now)),
    next_cursor: rows.length > q.limit && last ? Buffer.from(`${last[column].toISOString()}|${last.id}`).toString('base64url') : null,
  };
}

function decodeUserCursor(cursor: string): { at: Date; id: string } | undefined {
  const [iso, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const at = new Date(iso ?? '');
  return id && UUID.test(id) && !Number.isNaN(at.getTime()) ? { at, id } : undefined;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const dayOf = (date: Date) => date.toISOString().slice(0, 10);

/** One user in full: identities, live sessions, recent activity, model usage, agent. */
export async function userDetail(services: Services, userId: string, now = new Date()) {
  const { db } = services.store;
  const user = await db.user.findUnique({
    where: { id: userId },
    select: {
      ...summarySelect,
      metadata: true,
      modelDailyTokens: true,
      guestMessagesPerDay: true,
      identities: { orderBy: { createdAt: 'asc' }, select: { id: true, provider: true, subject: true, email: true, createdAt: true, lastUsedAt: true } },
      agent: { select: { id: true, name: true, kind: true } },
      messengerBot: { select: { botUsername: true } },
    },
  });
  if (!user) throw noSuchUser();
  const [sessions, activity, usage, budget] = await Promise.all([
    listSessions(db, userId, now),
    listActivity(db, userId, ADMIN_ACTIVITY_WINDOWS, now),
    db.modelUsage.findMany({ where: { scope: userId, day: { gte: dayOf(new Date(now.getTime() - 29 * DAY_MS)) } } }),
    services.modelBudget.status(userId),
  ]);
  const today = usage.find((row) => row.day === dayOf(now));
  const sum = (key: UsageColumn) => usage.reduce((total, row) => total + Number(row[key]), 0);
  const running = services.agents.provisioner.listRunning?.().some((a) => a.agentId === user.agent?.id) ?? false;
  return {
    ...userSummary(user, now),
    metadata: user.metadata as Record<string, unknown>,
    overrides: { model_daily_tokens: user.modelDailyTokens, guest_messages_per_day: user.guestMessagesPerDay },
    identities: user.identities.map((i) => ({
      id: i.id,
      provider: i.provider,
      subject: i.subject,
      email: i.email,
      created_at: utc(i.createdAt),
      last_used_at: utcOrNull(i.lastUsedAt),
    })),
    sessions: sessions.map((s) => ({ id: s.id, created_at: utc(s.createdAt), last_used_at: utc(s.lastUsedAt), ip: s.ip, user_agent: s.userAgent })),
    activity: activity.map((e) => ({ type: e.type, at: utc(e.at), ip: e.ip, detail: e.detail as Record<string, unknown> })),
    usage: {
      today: usageFigures((key) => Number(today?.[key] ?? 0)),
      last_30_days: usageFigures(sum),
      model_tokens_limit: budget.limit,
    },
    agent: user.agent ? { name: user.agent.name, kind: user.agent.kind, running, bot: user.messengerBot?.botUsername ?? null } : null,
  };
}

/** The account exists at once (a full account holding the address); the mail carries a sign-in link. */
export async function inviteUser(services: Services, caller: AdminCaller, email: string) {
  const { db } = services.store;
  const user = await db.$transaction(async (tx) => {
    const taken = await tx.identity.findUnique({ where: { provider_subject: { provider: 'email', subject: email } }, select: { id: true } });
    if (taken || (await tx.user.findUnique({ where: { email }, select: { id: true } }))) throw conflict('An account with this address exists', 'CONFLICT');
    const created = await tx.user.create({
      data: {
        id: randomUUID(),
        email,
        tier: 'full',
        identities: { create: { id: randomUUID(), provider: 'email', subject: email, email, emailVerified: true } },
      },
      select: summarySelect,
    });
    await emitEvent(tx, { type: 'user.created', data: { user_id: created.id, guest: false, method: 'invite' } });
    await recordAudit(tx, { actor: caller.actor, action: 'user.invite', target: { type: 'user', id: created.id }, ip: caller.ip, after: { email } });
    return created;
  });
  await services.email.request(email);
  return userSummary(user);
}

export interface UserPatch {
  metadata?: Record<string, unknown> | undefined;
  model_daily_tokens?: number | null | undefined;
  guest_messages_per_day?: number | null | undefined;
}

export async function patchUser(services: Services, caller: AdminCaller, userId: string, patch: UserPatch): Promise<void> {
  await refuseKeyOnAdmin(services.store.db, caller.actor, userId);
  await services.store.db.$transaction(async (tx) => {
    const before = await tx.user.findUnique({ where: { id: userId }, select: { metadata: true, modelDailyTokens: true, guestMessagesPerDay: true } });
    if (!before) throw noSuchUser();
    const data = {
      ...(patch.metadata === undefined ? {} : { metadata: patch.metadata as Prisma.InputJsonObject }),
      ...(patch.model_daily_tokens === undefined ? {} : { modelDailyTokens: patch.model_daily_tokens }),
      ...(patch.guest_messages_per_day === undefined ? {} : { guestMessagesPerDay: patch.guest_messages_per_day }),
    };
    const after = await tx.user.update({ where: { id: userId }, data, select: { metadata: true, modelDailyTokens: true, guestMessagesPerDay: true } });
    const view = (row: typeof before) => ({
      metadata: row.metadata as Prisma.InputJsonValue,
      model_daily_tokens: row.modelDailyTokens,
      guest_messages_per_day: row.guestMessagesPerDay,
    });
    await recordAudit(tx, {
      actor: caller.actor,
      action: 'user.update',
      target: { type: 'user', id: userId },
      ip: caller.ip,
      before: view(before),
      after: view(after),
    });
  });
}

/** Ends every live session of the user and drops them from this instance's cache; their access tokens stop at once. */
async function endSessions(services: Services, userId: string, now: Date, reason: 'banned' | 'admin'): Promise<number> {
  const live = await services.store.db.$transaction(async (tx) => {
    const found = await tx.session.findMany({ where: { userId, revokedAt: null }, select: { id: true } });
    await tx.session.updateMany({ where: { userId, revokedAt: null }, data: { revokedAt: now } });
    if (found.length)
      await emitEvent(
        tx,
        sessionRevoked(
          userId,
          found.map((s) => s.id),
          reason,
        ),
        now,
      );
    return found;
  });
  services.tokens.sessions.markRevoked(live.map((s) => s.id));
  return live.length;
}

/**
 * The ban is stored first (so no new sign-in gets through), then every session ends, the bot is
 * disconnected (its webhook removed) and the agent stopped; its scheduled wake is cleared so the
 * wake scheduler does not start it again. Nothing is deleted: unban gives it all back.
 */
export async function banUser(services: Services, caller: AdminCaller, userId: string, reason: string, until: Date | null, now = new Date()): Promise<void> {
  selfActionRefused(caller, userId);
  const { db } = services.store;
  await refuseKeyOnAdmin(db, caller.actor, userId);
  await db.$transaction(async (tx) => {
    const before = await tx.user.findUnique({ where: { id: userId }, select: { bannedAt: true, bannedUntil: true, banReason: true, role: true } });
    if (!before) throw noSuchUser();
    if (before.role === 'admin') await keepAnotherAdmin(tx, userId, now);
    await tx.user.update({ where: { id: userId }, data: { bannedAt: now, bannedUntil: until, banReason: reason } });
    await tx.agent.updateMany({ where: { userId }, data: { nextWakeAt: null, wakeLeaseUntil: null } });
    await emitEvent(tx, { type: 'user.banned', data: { user_id: userId, reason, expires_at: until?.toISOString() ?? null } }, now);
    await recordAudit(tx, {
      actor: caller.actor,
      action: 'user.ban',
      target: { type: 'user', id: userId },
      ip: caller.ip,
      before: { banned: isBanned(before, now), reason: before.banReason, expires_at: before.bannedUntil?.toISOString() ?? null },
      after: { banned: true, reason, expires_at: until?.toISOString() ?? null },
    });
  });
  await endSessions(services, userId, now, 'banned');
  await services.bots?.disconnect(userId);
  await services.agents.provisioner.stopAgentOf?.(userId);
}

/** Lifts a ban; also `npm run admin -- unban` (scripts/admin.ts), which acts as the command line from no address. */
export async function unbanUser(
  services: Pick<Services, 'store'>,
  caller: Pick<AdminCaller, 'actor'> & { ip: string | null },
  userId: string,
  now = new Date(),
): Promise<void> {
  await refuseKeyOnAdmin(services.store.db, caller.actor, userId);
  await services.store.db.$transaction(async (tx) => {
    const before = await tx.user.findUnique({ where: { id: userId }, select: { bannedAt: true, bannedUntil: true, banReason: true } });
    if (!before) throw noSuchUser();
    await tx.user.update({ where: { id: userId }, data: { bannedAt: null, bannedUntil: null, banReason: null } });
    await emitEvent(tx, { type: 'user.unbanned', data: { user_id: userId } }, now);
    await recordAudit(tx, {
      actor: caller.actor,
      action: 'user.unban',
      target: { type: 'user', id: userId },
      ip: caller.ip,
      before: { banned: isBanned(before, now), reason: before.banReason, expires_at: before.bannedUntil?.toISOString() ?? null },
      after: { banned: false },
    });
  });
}

/** The same removal as the user's own deletion (users/delete.ts), recorded first with who the user was. */
export async function deleteUser(services: Services, caller: AdminCaller, userId: string): Promise<void> {
  selfActionRefused(caller, userId);
  const { db } = services.store;
  await refuseKeyOnAdmin(db, caller.actor, userId);
  const user = await db.user.findUnique({ where: { id: userId }, select: { email: true, tier: true } });
  if (!user) throw noSuchUser();
  await giveUpAdminRole(db, userId);
  await recordAudit(db, {
    actor: caller.actor,
    action: 'user.delete',
    target: { type: 'user', id: userId },
    ip: caller.ip,
    before: { email: user.email, tier: user.tier },
  });
  await removeUser(services, userId);
}

export async function revokeUserSessions(services: Services, caller: AdminCaller, userId: string, now = new Date()): Promise<number> {
  await refuseKeyOnAdmin(services.store.db, caller.actor, userId);
  if (!(await services.store.db.user.findUnique({ where: { id: userId }, select: { id: true } }))) throw noSuchUser();
  const ended = await endSessions(services, userId, now, 'admin');
  await recordAudit(services.store.db, {
    actor: caller.actor,
    action: 'user.revoke_sessions',
    target: { type: 'user', id: userId },
    ip: caller.ip,
    after: { sessions_ended: ended },
  });
  return ended;
}
