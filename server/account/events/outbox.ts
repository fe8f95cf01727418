/**
 * The webhook outbox (docs/admin.md, "Webhooks"): every event is written by the same transaction —
 * or the same statement — as the change it describes, so an event exists exactly when its change
 * committed, and a process that dies after the commit loses nothing: the delivery worker
 * (admin/webhooks/worker.ts) finds the rows on any instance.
 *
 * Writing an event also fans it out: one `webhook_deliveries` row per enabled endpoint that wants
 * its type. When no endpoint wants it, nothing is written at all (an endpoint receives the events
 * that happen while it is registered, as with every webhook service), so the outbox costs a
 * sign-up one indexed look-up on a deployment without webhooks.
 */
import type { Prisma } from '../../generated/account/client.js';

export const WEBHOOK_EVENT_TYPES = [
  'user.created',
  'user.upgraded',
  'user.deleted',
  'user.banned',
  'user.unbanned',
  'session.revoked',
  'identity.linked',
  'identity.unlinked',
  'budget.exceeded',
  'agent.crashed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The `data` of an event's body: always the user it is about, then what the type adds. */
export type WebhookEventData = { user_id: string } & Record<string, string | number | boolean | null | string[]>;

export interface WebhookEventInput {
  type: WebhookEventType;
  data: WebhookEventData;
}

/** Anything that can run a raw statement: the client, or a transaction's client. */
type Executor = Pick<Prisma.TransactionClient, '$executeRaw'>;

/**
 * Writes `event` (and its deliveries) through `tx`: call it inside the transaction that makes the
 * change, after the change. One statement.
 */
export async function emitEvent(tx: Executor, event: WebhookEventInput, now = new Date()): Promise<void> {
  await tx.$executeRaw`
    WITH wanted AS (
      SELECT id FROM webhook_endpoints
       WHERE enabled AND (cardinality(coalesce(event_types, '{}')) = 0 OR ${event.type} = ANY(event_types))
    ), ev AS (
      INSERT INTO webhook_events (id, type, data, created_at)
      SELECT gen_random_uuid(), ${event.type}, ${JSON.stringify(event.data)}::jsonb, ${now} WHERE EXISTS (SELECT 1 FROM wanted)
      RETURNING id
    )
    INSERT INTO webhook_deliveries (id, event_id, endpoint_id, state, attempts, next_attempt_at, created_at)
    SELECT gen_random_uuid(), ev.id, wanted.id, 'pending', 0, ${now}, ${now} FROM ev CROSS JOIN wanted`;
}
