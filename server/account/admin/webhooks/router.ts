/**
 * Webhook endpoints and their delivery log under /api/v1/admin/webhooks (docs/admin.md,
 * "Webhooks"): admins and API keys with `webhooks:write`. Every change writes its audit row in
 * its own transaction; secrets appear only in the answer that made them.
 */
import { z } from 'zod';
import { adminProcedure, router, type AccountContext } from '../../trpc.js';
import { REFUSALS, type AdminCaller } from '../access.js';
import { recordAudit, type AuditEntry } from '../../events/audit.js';
import { acceptedUrl, createEndpoint, deleteEndpoint, listDeliveries, listEndpoints, resendDelivery, updateEndpoint } from './endpoints.js';
import {
  CreateWebhookInput,
  DeliveriesInput,
  IdInput,
  UpdateWebhookInput,
  UpdateWebhookOutput,
  WebhookDeliveries,
  WebhookEndpoints,
  WebhookEndpointWithSecret,
} from './schemas.js';

const webhooks = adminProcedure('webhooks:write');

type Ctx = AccountContext & { caller: AdminCaller };
const audit = (ctx: Ctx, entry: Omit<AuditEntry, 'actor' | 'ip'>): AuditEntry => ({ ...entry, actor: ctx.caller.actor, ip: ctx.caller.ip });
/** What the audit log keeps of an endpoint: never its secret. */
const audited = ({ url, description, event_types, enabled }: { url: string; description: string; event_types: string[]; enabled: boolean }) => ({
  url,
  description,
  event_types,
  enabled,
});

export const webhooksRouter = router({
  list: webhooks
    .meta({ openapi: { method: 'GET', path: '/admin/webhooks', summary: 'Webhook endpoints, oldest first (never their secrets)' }, errors: [...REFUSALS] })
    .input(z.void())
    .output(WebhookEndpoints)
    .query(async ({ ctx }) => ({ endpoints: await listEndpoints(ctx.services.store.db) })),

  create: webhooks
    .meta({
      openapi: { method: 'POST', path: '/admin/webhooks', summary: 'Register a webhook endpoint; the answer carries its signing secret, once' },
      errors: [...REFUSALS, 'WEBHOOK_URL_FORBIDDEN'],
    })
    .input(CreateWebhookInput)
    .output(WebhookEndpointWithSecret)
    .mutation(async ({ ctx, input }) => {
      const url = await acceptedUrl(input.url, ctx.services.webhooks.allowPrivate);
      return ctx.services.store.db.$transaction(async (tx) => {
        const created = await createEndpoint(tx, ctx.services.webhooks.box, { ...input, url });
        await recordAudit(tx, audit(ctx, { action: 'webhook.create', target: { type: 'webhook', id: created.id }, after: audited(created) }));
        return created;
      });
    }),

  update: webhooks
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/admin/webhooks/{id}',
        summary: 'Change a webhook endpoint; `rotate_secret` answers a new secret, and the previous one keeps signing for 24 hours',
      },
      errors: [...REFUSALS, 'WEBHOOK_NOT_FOUND', 'WEBHOOK_URL_FORBIDDEN'],
    })
    .input(UpdateWebhookInput)
    .output(UpdateWebhookOutput)
    .mutation(async ({ ctx, input }) => {
      const url = input.url === undefined ? undefined : await acceptedUrl(input.url, ctx.services.webhooks.allowPrivate);
      return ctx.services.store.db.$transaction(async (tx) => {
        const { before, after } = await updateEndpoint(tx, ctx.services.webhooks.box, { ...input, url });
        await recordAudit(
          tx,
          audit(ctx, {
            action: 'webhook.update',
            target: { type: 'webhook', id: after.id },
            before: audited(before),
            after: { ...audited(after), ...(input.rotate_secret ? { secret_rotated: true } : {}) },
          }),
        );
        return after;
      });
    }),

  delete: webhooks
    .meta({
      openapi: { method: 'DELETE', path: '/admin/webhooks/{id}', summary: 'Remove a webhook endpoint with its deliveries and their log (204)' },
      rest: { kind: 'empty' },
      errors: [...REFUSALS, 'WEBHOOK_NOT_FOUND'],
    })
    .input(IdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      ctx.services.store.db.$transaction(async (tx) => {
        const removed = await deleteEndpoint(tx, input.id);
        await recordAudit(tx, audit(ctx, { action: 'webhook.delete', target: { type: 'webhook', id: removed.id }, before: audited(removed) }));
      }),
    ),

  deliveries: webhooks
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/webhooks/{id}/deliveries',
        summary: "An endpoint's deliveries, newest first, each with its attempts (status, latency, the answer's first KiB)",
      },
      errors: [...REFUSALS, 'WEBHOOK_NOT_FOUND'],
    })
    .input(DeliveriesInput)
    .output(WebhookDeliveries)
    .query(({ ctx, input }) => listDeliveries(ctx.services.store.db, input)),

  resend: webhooks
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/webhooks/deliveries/{id}/resend',
        summary: 'Send a delivery again now, with the same webhook-id and a fresh retry schedule (204)',
      },
      rest: { kind: 'empty' },
      errors: [...REFUSALS, 'WEBHOOK_DELIVERY_NOT_FOUND', 'WEBHOOK_DISABLED'],
    })
    .input(IdInput)
    .output(z.void())
    .mutation(async ({ ctx, input }) => {
      await ctx.services.store.db.$transaction(async (tx) => {
        const { endpointId, eventId } = await resendDelivery(tx, input.id);
        await recordAudit(
          tx,
          audit(ctx, { action: 'webhook.resend', target: { type: 'webhook_delivery', id: input.id }, after: { endpoint_id: endpointId, event_id: eventId } }),
        );
      });
      ctx.services.webhooks.worker.poke();
    }),
});
