/**
 * The delivery worker (docs/admin.md, "Webhooks"): runs on every instance, and each delivery (an
 * event for one endpoint) is sent by one worker at a time. A worker claims due deliveries with one
 * UPDATE … FOR UPDATE SKIP LOCKED that sets a lease; two instances polling together skip each
 * other's rows, and a delivery whose worker died (kill -9, a lost machine) is claimed again once
 * its lease has run out. Delivery is therefore at least once: a receiver de-duplicates on
 * `webhook-id`, which is the event's and never changes (not on retry, not on resend).
 *
 * A failed attempt is retried after `retryDelaysMs[n]` (exponential, more than 24 h in all, with
 * up to 10 % jitter added); when they are used up the delivery is `failed`, and an endpoint that
 * has had no success during the whole retry window is disabled, with its audit entry.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../../common/log.js';
import type { SecretBox } from '../../agents/secrets.js';
import type { HotSql } from '../../hot-sql.js';
import { deliver, type AttemptResult } from './delivery.js';
import { signedHeaders } from './signature.js';

/**
 * 5 s, then ×4 per retry up to 8 h: 5 s, 20 s, 80 s, 5 min, 21 min, 85 min, 5.7 h, 8 h, 8 h, 8 h —
 * 31.6 h from the first failure to the last attempt (11 attempts in all).
 */
export const DEFAULT_RETRY_DELAYS_MS = Array.from({ length: 10 }, (_, n) => Math.min(5_000 * 4 ** n, 8 * 3600_000));

export interface WebhookWorkerOptions {
  pollMs: number;
  /** One attempt's bound; a claim's lease is twice that plus 5 s. */
  timeoutMs: number;
  allowPrivate: boolean;
  /** Deliveries claimed per round. */
  batch?: number;
  retryDelaysMs?: number[];
  /** Each attempt's outcome, for metrics. */
  onAttempt?: (result: AttemptResult, eventCreatedAt: Date) => void;
}

interface Claimed {
  id: string;
  attempts: number;
  event_id: string;
  type: string;
  data: string;
  event_at: string;
  endpoint_id: string;
  url: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
}

/** The id a receiver de-duplicates on (`webhook-id`), from the event's id. */
export const messageId = (eventId: string): string => `msg_${eventId.replaceAll('-', '')}`;

/** The body, byte for byte the same on every attempt: `{type, timestamp, data}`. */
export const eventBody = (type: string, timestamp: string, dataJson: string): string =>
  `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(timestamp)},"data":${dataJson}}`;

const EVENT_RETENTION_MS = 30 * 24 * 3600_000;

export class WebhookWorker {
  private readonly batch: number;
  private readonly retryDelaysMs: number[];
  private readonly leaseMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  private lastPrune = 0;

  constructor(
    private readonly sql: HotSql,
    private readonly box: SecretBox,
    private readonly log: Logger,
    private readonly options: WebhookWorkerOptions,
  ) {
    this.batch = options.batch ?? 32;
    this.retryDelaysMs = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.leaseMs = options.timeoutMs * 2 + 5_000;
  }

  /** Starts delivering (again, after `close`: the benchmark pauses it to price the outbox alone). */
  start(): void {
    if (!this.closed && (this.timer || this.running)) return;
    this.closed = false;
    this.schedule(0);
  }

  /** Runs a round now (after the one in progress): an event was just written on this instance. */
  poke(): void {
    if (this.closed) return;
    if (this.running) return;
    clearTimeout(this.timer);
    this.schedule(0);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.running = this.rounds()
        .catch((error: unknown) => this.log.warn({ err: error }, 'webhook delivery round failed'))
        .finally(() => {
          this.running = undefined;
          this.schedule(this.options.pollMs);
        });
    }, delayMs);
    this.timer.unref();
  }

  /** Rounds until a round finds less than a full batch. */
  private async rounds(): Promise<void> {
    while (!this.closed && (await this.round()) === this.batch);
    if (Date.now() - this.lastPrune > 3600_000) {
      this.lastPrune = Date.now();
      await this.prune();
    }
  }

  /** Claims due deliveries and sends them; returns how many it claimed. */
  async round(now = new Date()): Promise<number> {
    const token = randomUUID();
    const claimed = await this.sql<Claimed>`
      UPDATE webhook_deliveries AS d
         SET lease_token = ${token}::uuid, lease_until = ${new Date(now.getTime() + this.leaseMs)}, attempts = d.attempts + 1
        FROM webhook_events AS e, webhook_endpoints AS p
       WHERE d.id IN (
               SELECT c.id FROM webhook_deliveries AS c JOIN webhook_endpoints AS ce ON ce.id = c.endpoint_id
                WHERE c.state = 'pending' AND c.next_attempt_at <= ${now} AND (c.lease_until IS NULL OR c.lease_until < ${now}) AND ce.enabled
                ORDER BY c.next_attempt_at LIMIT ${this.batch}
                FOR UPDATE OF c SKIP LOCKED)
         AND d.state = 'pending' AND (d.lease_until IS NULL OR d.lease_until < ${now})
         AND e.id = d.event_id AND p.id = d.endpoint_id
      RETURNING d.id::text, d.attempts, e.id::text AS event_id, e.type, e.data::text AS data,
                to_char(e.created_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS event_at, p.id::text AS endpoint_id, p.url, p.secret_sealed,
                CASE WHEN p.previous_secret_expires_at > ${now} THEN p.previous_secret_sealed END AS previous_secret_sealed`;
    // One delivery's failure to record (the store went away) must not hide the others'.
    const outcomes = await Promise.allSettled(claimed.map((delivery) => this.send(delivery, token)));
    for (const outcome of outcomes) if (outcome.status === 'rejected') this.log.warn({ err: outcome.reason }, 'recording a webhook attempt failed');
    return claimed.length;
  }

  private async send(delivery: Claimed, token: string): Promise<void> {
    const body = eventBody(delivery.type, delivery.event_at, delivery.data);
    const secrets = [delivery.secret_sealed, delivery.previous_secret_sealed].filter((s): s is string => s !== null).map((s) => this.box.open(s));
    const headers = signedHeaders(secrets, messageId(delivery.event_id), body);
    const result = await deliver(delivery.url, headers, body, { timeoutMs: this.options.timeoutMs, allowPrivate: this.options.allowPrivate });
    this.options.onAttempt?.(result, new Date(delivery.event_at));
    await this.record(delivery, token, result);
  }

  /** The next attempt's time after `attempts` attempts, or null when they are used up. */
  nextAttemptAt(attempts: number, now: Date): Date | null {
    const delay = this.retryDelaysMs[attempts - 1];
    if (delay === undefined) return null;
    return new Date(now.getTime() + delay * (1 + Math.random() * 0.1));
  }

  private async record(delivery: Claimed, token: string, result: AttemptResult, now = new Date()): Promise<void> {
    const next = result.ok ? null : this.nextAttemptAt(delivery.attempts, now);
    const state = result.ok ? 'delivered' : next ? 'pending' : 'failed';
    // The attempt is logged whatever happened meanwhile (unless its endpoint was removed, taking
    // the delivery with it); the delivery changes only while this claim holds (a resend in
    // between took it back).
    await this.sql`
      WITH logged AS (
        INSERT INTO webhook_attempts (id, delivery_id, at, status, latency_ms, response, error)
        SELECT gen_random_uuid(), id, ${now}, ${result.status}::int, ${result.latencyMs}, ${result.response.replaceAll('\u0000', '')}, ${result.error}
          FROM webhook_deliveries WHERE id = ${delivery.id}::uuid
      ), settled AS (
        UPDATE webhook_deliveries
           SET state = ${state}, next_attempt_at = coalesce(${next}::timestamp, next_attempt_at),
               delivered_at = CASE WHEN ${result.ok}::boolean THEN ${now}::timestamp END, lease_token = NULL, lease_until = NULL
         WHERE id = ${delivery.id}::uuid AND lease_token = ${token}::uuid
      )
      UPDATE webhook_endpoints SET failing_since = CASE WHEN ${result.ok}::boolean THEN NULL ELSE coalesce(failing_since, ${now}::timestamp) END
       WHERE id = ${delivery.endpoint_id}::uuid`;
    if (state === 'failed') await this.disableIfFailing(delivery.endpoint_id, now);
  }

  /** Disables the endpoint when nothing has reached it for the whole retry window. */
  private async disableIfFailing(endpointId: string, now: Date): Promise<void> {
    const window = this.retryDelaysMs.reduce((sum, delay) => sum + delay, 0);
    const reason = `every delivery failed for ${Math.round(window / 3600_000)} h or more, the last one after ${this.retryDelaysMs.length + 1} attempts`;
    // The audit entry (events/audit.ts) is written by the same statement as the change.
    const disabled = await this.sql<{ id: string }>`
      WITH disabled AS (
        UPDATE webhook_endpoints SET enabled = false, disabled_reason = ${reason}, updated_at = ${now}
         WHERE id = ${endpointId}::uuid AND enabled AND failing_since <= ${new Date(now.getTime() - window)}
        RETURNING id
      )
      INSERT INTO audit_events (id, at, actor_type, actor_id, actor_label, action, target_type, target_id, after)
      SELECT gen_random_uuid(), ${now}, 'system', NULL, 'webhook delivery worker', 'webhook.disable', 'webhook', id::text,
             jsonb_build_object('enabled', false, 'reason', ${reason}::text)
        FROM disabled
      RETURNING target_id AS id`;
    if (disabled.length) this.log.warn({ endpointId, reason }, 'webhook endpoint disabled after repeated failure');
  }

  /** Events older than 30 days with nothing left to deliver go (their deliveries and log with them). */
  private async prune(now = new Date()): Promise<void> {
    await this.sql`
      DELETE FROM webhook_events AS e WHERE e.created_at < ${new Date(now.getTime() - EVENT_RETENTION_MS)}
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries AS d WHERE d.event_id = e.id AND d.state = 'pending')`;
  }
}
