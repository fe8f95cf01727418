/**
 * Webhook endpoints and their delivery log, as admins manage them (docs/admin.md, "Webhooks").
 * An endpoint's URL passes the address guard when it is registered or changed (and again at every
 * delivery, worker.ts); its secret is sealed at rest like agent secrets and shown once, in the
 * answer that made it.
 */
import { badRequest, AppError, notFound } from '../../../common/errors.js';
import type { SecretBox } from '../../agents/secrets.js';
import type { Prisma } from '../../../generated/account/client.js';
import type { AccountDb } from '../../store.js';
import { utc } from '../../users/account.js';
import { checkEndpointAddress } from './address-guard.js';
import type { WebhookEventType } from '../../events/outbox.js';
import { newWebhookSecret } from './signature.js';
import { messageId } from './worker.js';

/** How long the secret before a rotation keeps signing, so receivers can switch without a gap. */
export const ROTATION_GRACE_MS = 24 * 3600_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const webhookNotFound = () => notFound('No such webhook endpoint', 'WEBHOOK_NOT_FOUND');
const deliveryNotFound = () => notFound('No such webhook delivery', 'WEBHOOK_DELIVERY_NOT_FOUND');

/** The client, or the transaction that also writes the change's audit row (events/audit.ts). */
type Db = Prisma.TransactionClient;

const endpointSelect = {
  id: true,
  url: true,
  description: true,
  eventTypes: true,
  enabled: true,
  disabledReason: true,
  previousSecretExpiresAt: true,
  createdAt: true,
  updatedAt: true,
} as const;

type EndpointRow = {
  id: string;
  url: string;
  description: string;
  eventTypes: string[];
  enabled: boolean;
  disabledReason: string | null;
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
};

export function endpointView(row: EndpointRow, now = new Date()) {
  const previous = row.previousSecretExpiresAt && row.previousSecretExpiresAt > now ? row.previousSecretExpiresAt : null;
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    event_types: row.eventTypes as WebhookEventType[],
    enabled: row.enabled,
    disabled_reason: row.disabledReason,
    previous_secret_expires_at: previous ? utc(previous) : null,
    created_at: utc(row.createdAt),
    updated_at: utc(row.updatedAt),
  };
}

export type EndpointView = ReturnType<typeof endpointView>;

/**
 * An http(s) URL without credentials whose host is a public address (unless allowed): the URL as
 * stored. Called before the transaction that stores it, which then holds no connection over DNS.
 */
export async function acceptedUrl(raw: string, allowPrivate: boolean): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badRequest('The URL is malformed', 'WEBHOOK_URL_FORBIDDEN');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badRequest('Webhook URLs are http or https', 'WEBHOOK_URL_FORBIDDEN');
  // Credentials in a URL end up in logs and in every admin's view of it: use the secret instead.
  if (url.username || url.password) throw badRequest('Webhook URLs carry no user name or password', 'WEBHOOK_URL_FORBIDDEN');
  try {
    await checkEndpointAddress(url, allowPrivate);
  } catch (error) {
    throw badRequest(`The URL is refused: ${(error as Error).message}`, 'WEBHOOK_URL_FORBIDDEN');
  }
  return url.href;
}

export async function createEndpoint(
  db: Db,
  box: SecretBox,
  input: { url: string; description: string; event_types: WebhookEventType[]; enabled: boolean },
): Promise<EndpointView & { secret: string }> {
  const secret = newWebhookSecret();
  const row = await db.webhookEndpoint.create({
    data: {
      url: input.url,
      description: input.description,
      eventTypes: [...new Set(input.event_types)],
      enabled: input.enabled,
      secretSealed: box.seal(secret),
    },
    select: endpointSelect,
  });
  return { ...endpointView(row), secret };
}

export async function listEndpoints(db: AccountDb): Promise<EndpointView[]> {
  const rows = await db.webhookEndpoint.findMany({ orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], select: endpointSelect });
  return rows.map((row) => endpointView(row));
}

export async function getEndpoint(db: AccountDb, id: string): Promise<EndpointView> {
  if (!UUID.test(id)) throw webhookNotFound();
  const row = await db.webhookEndpoint.findUnique({ where: { id }, select: endpointSelect });
  if (!row) throw webhookNotFound();
  return endpointView(row);
}

/**
 * Changes an endpoint. Enabling one clears the reason it was disabled for and its failure streak;
 * `rotate_secret` makes a new secret and keeps the current one signing for ROTATION_GRACE_MS.
 */
export async function updateEndpoint(
  db: Db,
  box: SecretBox,
  input: {
    id: string;
    url?: string | undefined;
    description?: string | undefined;
    event_types?: WebhookEventType[] | undefined;
    enabled?: boolean | undefined;
    rotate_secret?: boolean | undefined;
  },
  now = new Date(),
): Promise<{ before: EndpointView; after: EndpointView & { secret?: string } }> {
  if (!UUID.test(input.id)) throw webhookNotFound();
  const current = await db.webhookEndpoint.findUnique({ where: { id: input.id }, select: { ...endpointSelect, secretSealed: true } });
  if (!current) throw webhookNotFound();
  const secret = input.rotate_secret ? newWebhookSecret() : undefined;
  const row = await db.webhookEndpoint.update({
    where: { id: input.id },
    data: {
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.event_types !== undefined ? { eventTypes: [...new Set(input.event_types)] } : {}),
      ...(input.enabled !== undefined ? { enabled: input.enabled, disabledReason: null, ...(input.enabled ? { failingSince: null } : {}) } : {}),
      ...(secret
        ? { secretSealed: box.seal(secret), previousSecretSealed: current.secretSealed, previousSecretExpiresAt: new Date(now.getTime() + ROTATION_GRACE_MS) }
        : {}),
    },
    select: endpointSelect,
  });
  return { before: endpointView(current, now), after: { ...endpointView(row, now), ...(secret ? { secret } : {}) } };
}

/** Removes the endpoint with its deliveries and their log; answers what it was, for the audit log. */
export async function deleteEndpoint(db: Db, id: string): Promise<EndpointView> {
  if (!UUID.test(id)) throw webhookNotFound();
  const row = await db.webhookEndpoint.findUnique({ where: { id }, select: endpointSelect });
  if (!row) throw webhookNotFound();
  await db.webhookEndpoint.delete({ where: { id } });
  return endpointView(row);
}

/** Cursor: the last delivery's `created_at|id`, newest first. */
const encodeCursor = (createdAt: Date, id: string) => Buffer.from(`${createdAt.toISOString()}|${id}`).toString('base64url');

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  const [at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const createdAt = new Date(at ?? '');
  if (!id || !UUID.test(id) || Number.isNaN(createdAt.getTime())) throw badRequest('The cursor is malformed');
  return { createdAt, id };
}

/** An endpoint's deliveries, newest first, each with its attempts. */
export async function listDeliveries(db: AccountDb, input: { id: string; cursor?: string | undefined; limit: number }) {
  if (!UUID.test(input.id)) throw webhookNotFound();
  const after = input.cursor ? decodeCursor(input.cursor) : undefined;
  const endpoint = await db.webhookEndpoint.findUnique({ where: { id: input.id }, select: { id: true } });
  if (!endpoint) throw webhookNotFound();
  const rows = await db.webhookDelivery.findMany({
    where: {
      endpointId: input.id,
      ...(after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {}),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: input.limit + 1,
    select: {
      id: true,
      endpointId: true,
      eventId: true,
      state: true,
      attempts: true,
      nextAttemptAt: true,
      createdAt: true,
      deliveredAt: true,
      event: { select: { type: true } },
      log: { orderBy: [{ at: 'desc' }, { id: 'desc' }], take: 50, select: { at: true, status: true, latencyMs: true, response: true, error: true } },
    },
  });
  const page = rows.slice(0, input.limit);
  const last = page.at(-1);
  return {
    deliveries: page.map((row) => ({
      id: row.id,
      endpoint_id: row.endpointId,
      event_id: row.eventId,
      message_id: messageId(row.eventId),
      event_type: row.event.type as WebhookEventType,
      state: row.state as 'pending' | 'delivered' | 'failed',
      attempts: row.attempts,
      next_attempt_at: row.state === 'pending' ? utc(row.nextAttemptAt) : null,
      created_at: utc(row.createdAt),
      delivered_at: row.deliveredAt ? utc(row.deliveredAt) : null,
      log: row.log.map((attempt) => ({
        at: utc(attempt.at),
        status: attempt.status,
        latency_ms: attempt.latencyMs,
        response: attempt.response,
        error: attempt.error,
      })),
    })),
    next_cursor: rows.length > input.limit && last ? encodeCursor(last.createdAt, last.id) : null,
  };
}

/**
 * Sends a delivery again, whatever its state: it becomes due now with a fresh retry schedule, and
 * a worker's claim on it lapses (that worker's outcome is still logged, but no longer settles it).
 * The receiver sees the same `webhook-id`. 409 WEBHOOK_DISABLED while its endpoint is disabled.
 */
export async function resendDelivery(db: Db, id: string, now = new Date()): Promise<{ endpointId: string; eventId: string }> {
  if (!UUID.test(id)) throw deliveryNotFound();
  const delivery = await db.webhookDelivery.findUnique({ where: { id }, select: { endpointId: true, eventId: true, endpoint: { select: { enabled: true } } } });
  if (!delivery) throw deliveryNotFound();
  if (!delivery.endpoint.enabled) throw new AppError(409, 'WEBHOOK_DISABLED', 'The endpoint is disabled: enable it (PATCH enabled: true), then resend');
  await db.webhookDelivery.update({
    where: { id },
    data: { state: 'pending', attempts: 0, nextAttemptAt: now, leaseToken: null, leaseUntil: null, deliveredAt: null },
  });
  return { endpointId: delivery.endpointId, eventId: delivery.eventId };
}
