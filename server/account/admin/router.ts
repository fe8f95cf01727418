/**
 * The admin API under /api/v1/admin (docs/admin.md). Every procedure is an `adminProcedure` with
 * the permission it needs (trpc.ts, access.ts); every change writes its audit row (audit.ts).
 */
import type { ErrorCode } from '@contracts/errors.js';
import { z } from 'zod';
import { notFound } from '../../common/errors.js';
import { adminProcedure, router } from '../trpc.js';
import { listAudit, recordAudit } from './audit.js';
import { createApiKey, listApiKeys, revokeApiKey } from './keys.js';
import { setRole } from './roles.js';
import { ApiKeys, AuditPage, AuditQuery, CreateApiKeyInput, CreatedApiKey, KeyIdInput, RoleInput } from './schemas.js';
import { apiKeyView, auditView } from './views.js';
import { selfActionRefused } from './users.js';
import { webhooksRouter } from './webhooks/router.js';

/** What every admin route can answer besides the token's own 401s (access.ts). */
export const REFUSALS = ['FORBIDDEN', 'INVALID_API_KEY'] as const satisfies ErrorCode[];

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
      errors: [...REFUSALS, 'ACCOUNT_NOT_FOUND', 'SELF_ACTION'],
    })
    .input(RoleInput)
    .output(z.void())
    .mutation(async ({ ctx, input }) => {
      if (!input.admin) selfActionRefused(ctx.caller, input.id);
      await setRole(ctx.services.store.db, input.id, input.admin ? 'admin' : 'user', ctx.caller.actor, ctx.caller.ip);
    }),
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
  keys: keysRouter,
  roles: rolesRouter,
  audit: auditRouter,
  webhooks: webhooksRouter,
});
