/** Wire shapes of the webhook admin API (docs/admin.md, "Webhooks"). */
import { z } from 'zod';
import { WEBHOOK_EVENT_TYPES } from '../../events/outbox.js';

const Timestamp = z.string().meta({ description: 'UTC, ISO 8601 without a zone suffix' });

export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES);

const Url = z.string().max(2048).meta({ description: 'http(s) URL on a public address (WEBHOOK_ALLOW_PRIVATE=1 lifts that)' });

export const WebhookEndpoint = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string(),
    event_types: z.array(WebhookEventType).meta({ description: 'The events it receives; empty: all of them' }),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable().meta({ description: 'Why the delivery worker disabled it; null otherwise' }),
    previous_secret_expires_at: Timestamp.nullable().meta({ description: 'Until when the secret before the last rotation still signs too' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'WebhookEndpoint' });

export const WebhookEndpoints = z.object({ endpoints: z.array(WebhookEndpoint) });

/** POST's answer, and PATCH's after a rotation: the secret, shown this once. */
export const WebhookEndpointWithSecret = WebhookEndpoint.extend({
  secret: z.string().meta({ description: 'The signing secret (`whsec_…`); shown only in this answer' }),
}).meta({ id: 'WebhookEndpointWithSecret' });

export const CreateWebhookInput = z.object({
  url: Url,
  description: z.string().max(500).default(''),
  event_types: z.array(WebhookEventType).max(WEBHOOK_EVENT_TYPES.length).default([]),
  enabled: z.boolean().default(true),
});

export const UpdateWebhookInput = z.object({
  id: z.string().min(1).max(64),
  url: Url.optional(),
  description: z.string().max(500).optional(),
  event_types: z.array(WebhookEventType).max(WEBHOOK_EVENT_TYPES.length).optional(),
  enabled: z.boolean().optional(),
  rotate_secret: z.boolean().optional().meta({ description: 'true: a new secret (in the answer); the previous one keeps signing too for 24 hours' }),
});

export const UpdateWebhookOutput = WebhookEndpoint.extend({
  secret: z.string().optional().meta({ description: 'The new secret, when `rotate_secret` was true' }),
}).meta({ id: 'UpdatedWebhookEndpoint' });

export const WebhookAttempt = z
  .object({
    at: Timestamp,
    status: z.number().int().nullable().meta({ description: "The endpoint's HTTP status; null when no answer came" }),
    latency_ms: z.number().int(),
    response: z.string().meta({ description: "The answer's first KiB" }),
    error: z.string().nullable(),
  })
  .meta({ id: 'WebhookAttempt' });

export const WebhookDelivery = z
  .object({
    id: z.string(),
    endpoint_id: z.string(),
    event_id: z.string(),
    message_id: z.string().meta({ description: 'The `webhook-id` header: the same on every attempt and resend' }),
    event_type: WebhookEventType,
    state: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int().meta({ description: 'Attempts since it was created or last resent' }),
    next_attempt_at: Timestamp.nullable(),
    created_at: Timestamp,
    delivered_at: Timestamp.nullable(),
    log: z.array(WebhookAttempt).meta({ description: 'Every attempt, newest first' }),
  })
  .meta({ id: 'WebhookDelivery' });

export const DeliveriesInput = z.object({
  id: z.string().min(1).max(64),
  cursor: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

export const WebhookDeliveries = z.object({ deliveries: z.array(WebhookDelivery), next_cursor: z.string().nullable() });

export const IdInput = z.object({ id: z.string().min(1).max(64) });
