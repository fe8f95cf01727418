/**
 * The admin API under /api/v1/admin (docs/admin.md). Every procedure is an `adminProcedure` with
 * the permission it needs (trpc.ts, access.ts); every change writes its audit row (events/audit.ts).
 */
import { z } from 'zod';
import { notFound } from '../../common/errors.js';
import { adminProcedure, router } from '../trpc.js';
import { REFUSALS } from './access.js';
import { listAudit, recordAudit } from '../events/audit.js';
import { createApiKey, listApiKeys, revokeApiKey } from './keys.js';
import { setRole } from '../users/roles.js';
import {
  AgentUserInput,
  ApiKeys,
  AuditPage,
  AuditQuery,
  BanInput,
  CreateApiKeyInput,
  CreatedApiKey,
  InviteInput,
  KeyIdInput,
  PatchUserInput,
  RoleInput,
  RunningAgents,
  UsageQuery,
  UsageRows,
  UserDetail,
  UserIdInput,
  UserSummary,
  UsersPage,
  UsersQuery,
} from './schemas.js';
import { apiKeyView, auditView } from './views.js';
import { banUser, deleteUser, inviteUser, listUsers, patchUser, revokeUserSessions, selfActionRefused, unbanUser, userDetail } from './users.js';
import { listRunningAgents, stopAgent, usagePerDay } from './agents.js';
import { webhooksRouter } from './webhooks/router.js';

const keysRouter = router({
  list: adminProcedure('admin')
    .meta({ openapi: { method: 'GET', path: '/admin/keys', summary: 'API keys, newest first (never their secrets)' }, errors: [...REFUSALS] })
    .input(z.void())
    .output(ApiKeys)
    .query(async ({ ctx }) => ({ keys: (await listApiKeys(ctx.services.store.db)).map(apiKeyView) })),

  create: adminProcedure('admin')
    .meta({ openapi: { method: 'POST', path: '/admin/keys', summary: 'Create an API key; the answer carries the key itself, once' }, errors: [...REFUSALS] })
    .input(CreateApiKeyInput)
    .output(CreatedApiKey)
    .mutation(({ ctx, input }) =>
      ctx.services.store.db.$transaction(async (tx) => {
        const { row, key } = await createApiKey(tx, {
          name: input.name,
          scopes: input.scopes,
          expiresAt: input.expires_at ? new Date(input.expires_at) : null,
          createdBy: ctx.caller.adminUserId,
        });
        await recordAudit(tx, {
          actor: ctx.caller.actor,
          action: 'key.create',
          target: { type: 'api_key', id: row.id },
          ip: ctx.caller.ip,
          after: { name: row.name, scopes: row.scopes, expires_at: input.expires_at ?? null },
        });
        return { ...apiKeyView(row), key };
      }),
    ),

  revoke: adminProcedure('admin')
    .meta({
      openapi: { method: 'DELETE', path: '/admin/keys/{id}', summary: 'Revoke an API key (204); it stops at once' },
      rest: { kind: 'empty' },
      errors: [...REFUSALS, 'API_KEY_NOT_FOUND'],
    })
    .input(KeyIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      ctx.services.store.db.$transaction(async (tx) => {
        const row = await revokeApiKey(tx, input.id);
        if (!row) throw notFound('No such live API key', 'API_KEY_NOT_FOUND');
        await recordAudit(tx, {
          actor: ctx.caller.actor,
          action: 'key.revoke',
          target: { type: 'api_key', id: row.id },
          ip: ctx.caller.ip,
          before: { name: row.name, scopes: row.scopes },
        });
      }),
    ),
});

const rolesRouter = router({
  set: adminProcedure('admin')
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/users/{id}/role',
        summary: 'Grant (`admin: true`) or revoke the admin role (204); takes effect on the next call',
      },
      rest: { kind: 'empty' },
      errors: [...REFUSALS, 'ACCOUNT_NOT_FOUND', 'SELF_ACTION', 'LAST_ADMIN'],
    })
    .input(RoleInput)
    .output(z.void())
    .mutation(async ({ ctx, input }) => {
      if (!input.admin) selfActionRefused(ctx.caller, input.id);
      await setRole(ctx.services.store.db, input.id, input.admin ? 'admin' : 'user', ctx.caller.actor, ctx.caller.ip);
    }),
});

const usersRouter = router({
  list: adminProcedure('users:read')
    .meta({ openapi: { method: 'GET', path: '/admin/users', summary: 'Users by search, filter and sort, newest first, by cursor' }, errors: [...REFUSALS] })
    .input(UsersQuery)
    .output(UsersPage)
    .query(({ ctx, input }) => listUsers(ctx.services, input)),

  get: adminProcedure('users:read')
    .meta({
      openapi: { method: 'GET', path: '/admin/users/{id}', summary: 'One user in full: identities, sessions, activity, usage, agent' },
      errors: [...REFUSALS, 'ACCOUNT_NOT_FOUND'],
    })
    .input(UserIdInput)
    .output(UserDetail)
    .query(({ ctx, input }) => userDetail(ctx.services, input.id)),

  invite: adminProcedure('users:write')
    .meta({
      openapi: { method: 'POST', path: '/admin/users', summary: 'Invite by e-mail: the account exists at once, the mail carries a sign-in link' },
      errors: [...REFUSALS, 'CONFLICT'],
    })
    .input(InviteInput)
    .output(UserSummary)
    .mutation(({ ctx, input }) => inviteUser(ctx.services, ctx.caller, input.email)),

  update: adminProcedure('users:write')
    .meta({
      openapi: { method: 'PATCH', path: '/admin/users/{id}', summary: 'Set operator metadata and per-user overrides (model budget, guest messages)' },
      errors: [...REFUSALS, 'ACCOUNT_NOT_FOUND'],
    })
    .input(PatchUserInput)
    .output(UserDetail)
    .mutation(async ({ ctx, input }) => {
      const { id, ...patch } = input;
      await patchUser(ctx.services, ctx.caller, id, patch);
      return userDetail(ctx.services, id);
    }),

  ban: adminProcedure('users:write')
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/users/{id}/ban',
        summary: 'Ban (204): sign-in refused with 403 USER_BANNED, sessions ended, agent stopped, bot disconnected',
      },
      rest: { kind: 'empty' },
      errors: [...REFUSALS, 'ACCOUNT_NOT_FOUND', 'SELF_ACTION', 'LAST_ADMIN'],
    })
    .input(BanInput)
    .output(z.void())
    .mutation(({ ctx, input }) => banUser(ctx.services, ctx.caller, input.id, input.reason, input.expires_at ? new Date(input.expires_at) : null)),

  unban: adminProcedure('users:write')
    .meta({
      openapi: { method: 'POST', path: '/admin/users/{id}/unban', summary: 'Lift a ban (204): sign-in works again, nothing else was lost' },
      rest: { kind: 'empty' },
      errors: [...REFUSALS, 'ACCOUNT_NOT_FOUND'],
    })
    .input(UserIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) => unbanUser(ctx.services, ctx.caller, input.id)),

  delete: adminProcedure('users:write')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/admin/users/{id}',
        summary: 'Delete the user as their own deletion does (204): methods, sessions, activity, agent, workspace',
      },
      rest: { kind: 'empty' },
      errors: [...REFUSALS, 'ACCOUNT_NOT_FOUND', 'SELF_ACTION', 'LAST_ADMIN'],
    })
    .input(UserIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) => deleteUser(ctx.services, ctx.caller, input.id)),

  revokeSessions: adminProcedure('users:write')
    .meta({
      openapi: { method: 'POST', path: '/admin/users/{id}/sessions/revoke', summary: 'End every session of the user (204); their tokens stop at once' },
      rest: { kind: 'empty' },
      errors: [...REFUSALS, 'ACCOUNT_NOT_FOUND'],
    })
    .input(UserIdInput)
    .output(z.void())
    .mutation(async ({ ctx, input }) => {
      await revokeUserSessions(ctx.services, ctx.caller, input.id);
    }),
});

const agentsRouter = router({
  list: adminProcedure('agents:read')
    .meta({
      openapi: { method: 'GET', path: '/admin/agents', summary: 'Agents running on this instance: user, since, memory, last activity, runs in flight' },
      errors: [...REFUSALS],
    })
    .input(z.void())
    .output(RunningAgents)
    .query(async ({ ctx }) => ({ agents: await listRunningAgents(ctx.services) })),

  stop: adminProcedure('agents:write')
    .meta({
      openapi: { method: 'POST', path: '/admin/agents/{user_id}/stop', summary: "Stop the user's agent (204); its next use starts it again" },
      rest: { kind: 'empty' },
      errors: [...REFUSALS, 'AGENT_NOT_FOUND'],
    })
    .input(AgentUserInput)
    .output(z.void())
    .mutation(({ ctx, input }) => stopAgent(ctx.services, ctx.caller, input.user_id, false)),

  restart: adminProcedure('agents:write')
    .meta({
      openapi: { method: 'POST', path: '/admin/agents/{user_id}/restart', summary: "Restart the user's agent (204)" },
      rest: { kind: 'empty' },
      errors: [...REFUSALS, 'AGENT_NOT_FOUND', 'AGENT_UNAVAILABLE', 'AGENT_CAPACITY', 'USER_BANNED'],
    })
    .input(AgentUserInput)
    .output(z.void())
    .mutation(({ ctx, input }) => stopAgent(ctx.services, ctx.caller, input.user_id, true)),

  usage: adminProcedure('agents:read')
    .meta({
      openapi: { method: 'GET', path: '/admin/agents/usage', summary: 'Model tokens per user per day (one user with user_id), newest first' },
      errors: [...REFUSALS],
    })
    .input(UsageQuery)
    .output(UsageRows)
    .query(async ({ ctx, input }) => ({ usage: await usagePerDay(ctx.services, input.user_id, input.days) })),
});

const auditRouter = router({
  list: adminProcedure('audit:read')
    .meta({
      openapi: { method: 'GET', path: '/admin/audit', summary: 'The audit log, newest first, by filter and cursor (read-only: no API edits or deletes it)' },
      errors: [...REFUSALS],
    })
    .input(AuditQuery)
    .output(AuditPage)
    .query(async ({ ctx, input }) => {
      const { events, nextCursor } = await listAudit(
        ctx.services.store.db,
        {
          action: input.action,
          actorId: input.actor_id,
          targetId: input.target_id,
          since: input.since ? new Date(input.since) : undefined,
          until: input.until ? new Date(input.until) : undefined,
        },
        { cursor: input.cursor, limit: input.limit },
      );
      return { events: events.map(auditView), next_cursor: nextCursor };
    }),
});

export const adminRouter = router({
  users: usersRouter,
  agents: agentsRouter,
  keys: keysRouter,
  roles: rolesRouter,
  audit: auditRouter,
  webhooks: webhooksRouter,
});
