/**
 * The Telegram bot (grammY): identity from `getMe`, a long-polling loop of our own, and retries
 * with backoff on every Bot API call, so that a flaky network, a 5xx or a 429 never crashes the
 * agent nor drops an update.
 *
 * Why not `bot.start()`: its polling loop waits a fixed 3 s after an error (not abortable, not
 * configurable) and runs middleware inline. Here the loop backs off exponentially
 * (`TELEGRAM_RETRY_BASE` … `TELEGRAM_RETRY_MAX`, or Telegram's `retry_after`), stops at once
 * on `stop()`, and treats a refused token (401/404) as final: the status says not connected
 * and the reason is logged. Updates still go through `bot.handleUpdate`, so grammY's context
 * and filters are what the handlers use.
 */
import { type Api, Bot, GrammyError, HttpError, type Context, type Transformer } from 'grammy';
import type { Update, UserFromGetMe } from 'grammy/types';
import type { Logger } from '../../common/log.js';
import { sleep } from '../../common/timers.js';
import { gatewayFetch, type EgressGatewayAddress } from '../net/egress.js';

export interface TelegramBotOptions {
  token: string;
  /** `https://api.telegram.org`, a self-hosted Bot API server, or the tests' fake. */
  apiRoot: string;
  /** A sandboxed agent's egress gateway (net/egress.ts); unset: direct. */
  egress?: EgressGatewayAddress;
  pollTimeoutSeconds: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /**
   * Set: updates arrive through `receive` (webhook.ts), no polling; with a `url`, `setWebhook` at
   * start, without one the webhook is someone else's (the account service set it and relays).
   */
  webhook?: { url?: string | undefined; secret: string };
  log: Logger;
  /** Called for every `message` update; must not throw (errors are logged). */
  onMessage(ctx: Context): Promise<void>;
}

export type BotState = 'idle' | 'connecting' | 'connected' | 'failed' | 'stopped';

/**
 * grammY types its signals with the `abort-controller` polyfill's class; at run time it takes
 * Node's own AbortSignal (node-fetch checks the brand), so this is only a type bridge.
 */
export type GrammySignal = Parameters<Api['getMe']>[0];
export const grammySignal = (signal: AbortSignal | undefined): GrammySignal => signal as unknown as GrammySignal;

/** Attempts of one outgoing call (sendMessage, sendDocument…) before it is given up. */
export const SEND_ATTEMPTS = 6;
/** Longest `retry_after` we honour; Telegram's flood waits are seconds to minutes. */
const RETRY_AFTER_MAX_MS = 10 * 60_000;

/** Methods the polling loop retries itself (forever, until stopped). */
const LOOP_METHODS = new Set(['getMe', 'getUpdates']);

/** A token Telegram refuses: 401 Unauthorized, or 404 for a malformed one. Final. */
function isTokenRefused(error: unknown): boolean {
  return error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404);
}

/**
 * A failure in one line for the log. Never the error object itself: a GrammyError carries the
 * call's payload (people's messages), which does not belong in logs.
 */
export function describe(error: unknown): string {
  if (error instanceof GrammyError) return `${error.error_code} ${error.description}`;
  if (error instanceof HttpError) return `network: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

export class TelegramBot {
  readonly bot: Bot;
  private state: BotState = 'idle';
  private me: UserFromGetMe | undefined;
  private readonly controller = new AbortController();
  private loop: Promise<void> | undefined;
  private offset = 0;
  private readonly inflight = new Set<Promise<void>>();

  constructor(private readonly opts: TelegramBotOptions) {
    // The client timeout bounds every call: a long poll plus margin, and room for a 50 MB upload.
    const client = { apiRoot: opts.apiRoot, timeoutSeconds: Math.max(120, opts.pollTimeoutSeconds + 30) };
    // grammY types `fetch` as node-fetch's; ours is WHATWG fetch, which it also drives.
    this.bot = new Bot(opts.token, { client: opts.egress ? { ...client, fetch: gatewayFetch(opts.egress) as never } : client });
    this.bot.api.config.use(this.retrying());
    // Handlers run beside the loop, not inside it: a long chat run must not hold up polling.
    this.bot.on('message', (ctx) => {
      this.track(opts.onMessage(ctx));
    });
  }

  /** Stops with `stop()`; never rejects. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get connected(): boolean {
    return this.state === 'connected';
  }

  get identity(): { username: string; name: string } | undefined {
    if (!this.connected || !this.me) return undefined;
    return { username: this.me.username, name: [this.me.first_name, this.me.last_name].filter(Boolean).join(' ') };
  }

  /**
   * Whether stopping the agent now would lose something: a message being handled, or (long
   * polling) the loop itself, since nobody else would fetch the bot's messages while it sleeps.
   */
  get busy(): boolean {
    return this.inflight.size > 0 || this.polling;
  }

  /** Long polling (or about to): only this process fetches the bot's messages. */
  get polling(): boolean {
    return !this.opts.webhook && (this.state === 'connecting' || this.state === 'connected');
  }

  get api() {
    return this.bot.api;
  }

  /** Keeps a background task (a message handler, a delivery) so that stop() can wait for it. */
  track(task: Promise<void>): void {
    const tracked = task.catch((error: unknown) => this.opts.log.error({ reason: describe(error) }, 'telegram: handler failed'));
    this.inflight.add(tracked);
    void tracked.finally(() => this.inflight.delete(tracked));
  }

  start(): void {
    if (this.loop) return;
    this.state = 'connecting';
    this.loop = this.run().catch((error: unknown) => {
      this.state = 'failed';
      this.opts.log.error({ reason: describe(error) }, 'telegram: polling stopped on an unexpected error');
    });
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    const wasConnected = this.connected;
    this.state = 'stopped';
    this.controller.abort();
    await this.loop;
    // Confirm the updates handled so far, as grammY's stop() does (best effort, bounded).
    if (wasConnected && this.offset > 0) {
      await this.bot.api.getUpdates({ offset: this.offset, limit: 1, timeout: 0 }, grammySignal(AbortSignal.timeout(2_000))).catch(() => undefined);
    }
    await Promise.all(this.inflight);
  }

  /** `base · 2^attempt`, capped, ±20 % jitter; Telegram's `retry_after` when it gives one. */
  private backoff(attempt: number, error?: unknown): number {
    const retryAfter = error instanceof GrammyError ? error.parameters.retry_after : undefined;
    if (typeof retryAfter === 'number') return Math.min(retryAfter * 1000, RETRY_AFTER_MAX_MS);
    const plain = Math.min(this.opts.retryMaxMs, this.opts.retryBaseMs * 2 ** Math.min(attempt, 30));
    return Math.round(plain * (0.8 + Math.random() * 0.4));
  }

  private async run(): Promise<void> {
    const { log } = this.opts;
    const signal = this.controller.signal;
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        await this.bot.init(grammySignal(signal));
        this.me = this.bot.botInfo;
        break;
      } catch (error) {
        if (signal.aborted) return;
        if (isTokenRefused(error)) {
          this.state = 'failed';
          log.error({ reason: describe(error) }, 'telegram: the bot token was refused (getMe); the bot is not connected');
          return;
        }
        const delay = this.backoff(attempt, error);
        log.warn({ reason: describe(error), retryInMs: delay }, 'telegram: getMe failed, retrying');
        await sleep(delay, signal);
      }
    }
    if (signal.aborted) return;
    if (this.opts.webhook?.url) return this.registerWebhook({ url: this.opts.webhook.url, secret: this.opts.webhook.secret }, signal);
    if (this.opts.webhook) {
      this.state = 'connected';
      log.info({ bot: this.me?.username }, 'telegram: bot connected (webhook relayed by the account service)');
      return;
    }
    this.state = 'connected';
    log.info({ bot: this.me?.username }, 'telegram: bot connected (long polling)');

    for (let attempt = 0; !signal.aborted; ) {
      let updates: Update[];
      try {
        updates = await this.bot.api.getUpdates(
          { offset: this.offset, timeout: this.opts.pollTimeoutSeconds, allowed_updates: ['message'] },
          grammySignal(signal),
        );
        attempt = 0;
      } catch (error) {
        if (signal.aborted) return;
        if (isTokenRefused(error)) {
          this.state = 'failed';
          log.error({ reason: describe(error) }, 'telegram: the bot token was refused (getUpdates); polling stopped');
          return;
        }
        const delay = this.backoff(attempt++, error);
        // 409: a webhook is set or another instance polls with this token.
        log.warn({ reason: describe(error), retryInMs: delay }, 'telegram: getUpdates failed, retrying');
        await sleep(delay, signal);
        continue;
      }
      for (const update of updates) {
        this.offset = Math.max(this.offset, update.update_id + 1);
        try {
          await this.bot.handleUpdate(update);
        } catch (error) {
          log.error({ reason: describe(error), updateId: update.update_id }, 'telegram: update handling failed');
        }
      }
    }
  }

  private async registerWebhook(webhook: { url: string; secret: string }, signal: AbortSignal): Promise<void> {
    const { log } = this.opts;
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        await this.bot.api.setWebhook(webhook.url, { secret_token: webhook.secret, allowed_updates: ['message'] }, grammySignal(signal));
        this.state = 'connected';
        log.info({ bot: this.me?.username, url: webhook.url }, 'telegram: bot connected (webhook)');
        return;
      } catch (error) {
        if (signal.aborted) return;
        if (isTokenRefused(error) || (error instanceof GrammyError && error.error_code === 400)) {
          this.state = 'failed';
          log.error({ reason: describe(error), url: webhook.url }, 'telegram: setWebhook refused; the bot is not connected');
          return;
        }
        const delay = this.backoff(attempt, error);
        log.warn({ reason: describe(error), retryInMs: delay }, 'telegram: setWebhook failed, retrying');
        await sleep(delay, signal);
      }
    }
  }

  /** Webhook mode: one update pushed by Telegram. Handled in the background. */
  receive(update: Update): boolean {
    if (!this.opts.webhook || !this.connected) return false;
    this.track(this.bot.handleUpdate(update));
    return true;
  }

  /**
   * Outgoing calls retry on 429 (after `retry_after`), 5xx and network errors, with backoff,
   * up to SEND_ATTEMPTS; other errors (400, 403: the user blocked the bot…) are final.
   * A retried send after a network error may reach Telegram twice: a duplicate beats a loss.
   */
  private retrying(): Transformer {
    return async (prev, method, payload, signal) => {
      if (LOOP_METHODS.has(method)) return prev(method, payload, signal);
      const stop = this.controller.signal;
      for (let attempt = 1; ; attempt++) {
        let failure: unknown;
        try {
          const result = await prev(method, payload, signal);
          if (result.ok) return result;
          const retryable = result.error_code === 429 || result.error_code >= 500;
          if (!retryable || attempt >= SEND_ATTEMPTS || stop.aborted) return result;
          failure = new GrammyError(`${method} failed`, result, method, payload);
        } catch (error) {
          if (!(error instanceof HttpError) || attempt >= SEND_ATTEMPTS || stop.aborted || signal?.aborted) throw error;
          failure = error;
        }
        const delay = this.backoff(attempt - 1, failure);
        this.opts.log.warn({ method, attempt, reason: describe(failure), retryInMs: delay }, 'telegram: call failed, retrying');
        await sleep(delay, stop);
      }
    };
  }
}
