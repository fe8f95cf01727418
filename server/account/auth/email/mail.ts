/**
 * Outgoing mail, off the request path (issue: "indistinguishable in timing"): the sign-in
 * endpoint only puts a message on an in-process queue; a background loop hands it to the
 * transport. With SMTP_URL the transport is SMTP (nodemailer, pooled connections); without it,
 * every message is written to the local outbox `DATA_DIR/outbox/<id>.eml` (plus `<id>.json`
 * for the development page) and the log says where.
 *
 * A failing transport (mail server down, refused, slow) never reaches the request: the failure
 * is logged, the message is retried a few times, then dropped with an error in the log.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { Logger } from '../../../common/log.js';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface MailTransport {
  /** Human-readable destination for the logs (`smtp://host:port`, or the outbox folder). */
  readonly describe: string;
  send(mail: OutgoingMail): Promise<void>;
  close(): void;
}

const SMTP_TIMEOUT_MS = 15_000;

export function smtpTransport(smtpUrl: string, from: string): MailTransport {
  const url = new URL(smtpUrl);
  const transport = nodemailer.createTransport({
    url: smtpUrl,
    pool: true,
    maxConnections: 2,
    connectionTimeout: SMTP_TIMEOUT_MS,
    greetingTimeout: SMTP_TIMEOUT_MS,
    socketTimeout: SMTP_TIMEOUT_MS,
  } as Parameters<typeof nodemailer.createTransport>[0]);
  return {
    describe: `${url.protocol}//${url.host}`,
    async send(mail) {
      await transport.sendMail({ from, ...mail });
    },
    close: () => transport.close(),
  };
}

export interface OutboxEntry {
  id: string;
  date: string;
  from: string;
  to: string;
  subject: string;
  text: string;
}

/** Writes each message as a real RFC 5322 file (`.eml`, openable by any mail program). */
export function outboxTransport(dir: string, from: string, log: Logger): MailTransport {
  const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    describe: dir,
    async send(mail) {
      const date = new Date();
      const id = `${date.toISOString().replace(/[-:.]/g, '')}-${randomBytes(4).toString('hex')}`;
      const info = await composer.sendMail({ from, date, ...mail });
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const file = path.join(dir, `${id}.eml`);
      await writeFile(file, info.message as Buffer, { mode: 0o600 });
      const entry: OutboxEntry = { id, date: date.toISOString(), from, to: mail.to, subject: mail.subject, text: mail.text };
      // Written under another name, then renamed: whoever lists the outbox never reads half an entry.
      const temp = path.join(dir, `.${id}.json.tmp`);
      await writeFile(temp, JSON.stringify(entry), { mode: 0o600 });
      await rename(temp, path.join(dir, `${id}.json`));
      log.info({ file }, 'mail written to the local outbox (no SMTP_URL)');
    },
    close: () => undefined,
  };
}

/** `someone@example.com` → `so…@example.com`: enough to follow a delivery in the logs. */
export const maskAddress = (address: string) => address.replace(/^([^@]{0,2})[^@]*@/, '$1…@');

export interface MailQueueOptions {
  /** Messages sent at once. */
  concurrency?: number;
  /** Messages waiting beyond this are dropped (logged): a mail outage must not grow memory without bound. */
  maxQueued?: number;
  /** Delay before each retry; its length is the number of retries. */
  retryDelaysMs?: number[];
}

export class MailQueue {
  readonly stats = { sent: 0, failed: 0, dropped: 0 };
  private readonly waiting: Array<{ mail: OutgoingMail; attempt: number }> = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly idleWaiters: Array<() => void> = [];
  private closed = false;
  private readonly concurrency: number;
  private readonly maxQueued: number;
  private readonly retryDelaysMs: number[];

  constructor(
    readonly transport: MailTransport,
    private readonly log: Logger,
    options: MailQueueOptions = {},
  ) {
    this.concurrency = options.concurrency ?? 4;
    this.maxQueued = options.maxQueued ?? 10_000;
    this.retryDelaysMs = options.retryDelaysMs ?? [2_000, 15_000];
  }

  /** Never throws and never waits: the caller answers its request at once. */
  enqueue(mail: OutgoingMail): void {
    if (this.closed) return;
    if (this.waiting.length >= this.maxQueued) {
      this.stats.dropped += 1;
      this.log.error({ to: maskAddress(mail.to) }, 'mail queue full: message dropped');
      return;
    }
    this.waiting.push({ mail, attempt: 1 });
    this.pump();
  }

  private pump(): void {
    while (this.inFlight.size < this.concurrency && this.waiting.length > 0) {
      const job = this.waiting.shift()!;
      const run: Promise<void> = this.deliver(job).finally(() => {
        this.inFlight.delete(run);
        this.pump();
        this.settleIdle();
      });
      this.inFlight.add(run);
    }
  }

  private async deliver(job: { mail: OutgoingMail; attempt: number }): Promise<void> {
    const to = maskAddress(job.mail.to);
    try {
      await this.transport.send(job.mail);
      this.stats.sent += 1;
      this.log.debug({ to, via: this.transport.describe }, 'mail sent');
    } catch (error) {
      const delay = this.retryDelaysMs[job.attempt - 1];
      const err = error instanceof Error ? { message: error.message, code: (error as { code?: unknown }).code } : { message: String(error) };
      if (delay === undefined || this.closed) {
        this.stats.failed += 1;
        this.log.error({ to, via: this.transport.describe, attempt: job.attempt, err }, 'mail delivery failed: message dropped');
        return;
      }
      this.log.warn({ to, via: this.transport.describe, attempt: job.attempt, retryInMs: delay, err }, 'mail delivery failed: will retry');
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        if (this.closed) return;
        this.waiting.push({ mail: job.mail, attempt: job.attempt + 1 });
        this.pump();
      }, delay);
      timer.unref();
      this.timers.add(timer);
    }
  }

  private get isIdle(): boolean {
    return this.waiting.length === 0 && this.inFlight.size === 0 && this.timers.size === 0;
  }

  private settleIdle(): void {
    if (!this.isIdle) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Resolves when nothing is waiting, sending or scheduled for retry (tests, shutdown). */
  idle(): Promise<void> {
    if (this.isIdle) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Lets messages in flight finish (up to `graceMs`); what is still waiting is dropped, and logged. */
  async close(graceMs = 5_000): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    const pending = this.waiting.length + this.timers.size;
    this.timers.clear();
    this.waiting.length = 0;
    if (pending > 0) {
      this.stats.dropped += pending;
      this.log.warn({ pending }, 'shutting down: unsent mail dropped');
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    this.transport.close();
    this.settleIdle();
  }
}
