/**
 * Every full account's own Telegram bot. The token is the user's secret: sealed at rest like the
 * agent secret (agents/secrets.ts), handed to their agent only (its environment at start:
 * TELEGRAM_BOT_TOKEN), never logged and never returned.
 *
 * Two ways for messages to reach the agent:
 * - webhook mode (TELEGRAM_WEBHOOK_BASE set when the bot is connected): Telegram pushes to
 *   `{base}/api/v1/telegram/{webhook id}/webhook` with a random secret_token; `relay` checks
 *   the secret, wakes the agent and hands it the update, and answers only once it was accepted
 *   (so Telegram retries otherwise). The agent may sleep in between.
 * - long polling (unset): the agent polls, counts as busy and is not stopped.
 *
 * Connecting or disconnecting restarts a running agent (gracefully) so that it picks the bot
 * up or lets it go: the token reaches agents only through their start environment, never
 * through a call that a user could make on their own agent through the proxy.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError, badRequest, notFound, unauthorized } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { refuseBanned } from '../users/bans.js';
import { agentClient } from '../agents/client.js';
import type { AgentEndpoint } from '../agents/registry.js';
import type { SecretBox } from '../agents/secrets.js';
import { agentFetch } from '../agents/transport.js';
import type { AccountDb } from '../store.js';
import type { BotConnected, OwnerCode } from './schemas.js';
import { deleteWebhook, getMe, setWebhook } from './telegram.js';

export const OWNER_CODE_TTL_MS = 10 * 60_000;
/** How long a webhook delivery waits for a freshly started agent's bot to be ready. */
const RELAY_READY_MS = 15_000;

export interface BotAgents {
  agentFor(userId: string): Promise<AgentEndpoint>;
  /** Restarts the user's agent if it runs (`start`: also when it does not). */
  restart(userId: string, opts: { start: boolean }): Promise<void>;
}

export interface MessengerBotsOptions {
  telegramApiRoot: string;
  /** TELEGRAM_WEBHOOK_BASE: the account's public base URL; unset: agents long-poll. */
  webhookBase: string | undefined;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

export class MessengerBots {
  constructor(
    private readonly db: AccountDb,
    private readonly box: SecretBox,
    private readonly agents: BotAgents,
    private readonly log: Logger,
    private readonly options: MessengerBotsOptions,
  ) {}

  webhookUrl(webhookId: string): string {
    return `${this.options.webhookBase}/api/v1/telegram/${webhookId}/webhook`;
  }

  /** `PUT /messenger/bot`: checks the token with getMe, stores it sealed, sets the webhook (webhook mode). */
  async connect(userId: string, token: string): Promise<BotConnected> {
    const trimmed = token.trim();
    const identity = await getMe(this.options.telegramApiRoot, trimmed);
    const previous = await this.db.messengerBot.findUnique({ where: { userId } });
    const webhookId = randomBytes(16).toString('base64url');
    const secret = randomBytes(32).toString('base64url');
    const webhook = this.options.webhookBase !== undefined;
    if (webhook) await setWebhook(this.options.telegramApiRoot, trimmed, this.webhookUrl(webhookId), secret);
    // Polling needs no webhook: one left from an earlier connection would make getUpdates fail.
    else await deleteWebhook(this.options.telegramApiRoot, trimmed);
    if (previous) {
      const oldToken = this.box.open(previous.tokenEncrypted);
      if (oldToken !== trimmed && previous.webhook) await deleteWebhook(this.options.telegramApiRoot, oldToken);
    }
    const data = {
      tokenEncrypted: this.box.seal(trimmed),
      botUsername: identity.username,
      botName: identity.name,
      webhookId,
      webhookSecretEncrypted: this.box.seal(secret),
      webhook,
    };
    await this.db.messengerBot.upsert({ where: { userId }, create: { userId, ...data }, update: data });
    this.log.info({ userId, bot: identity.username, mode: webhook ? 'webhook' : 'polling' }, 'messenger bot connected');
    await this.agents.restart(userId, { start: !webhook });
    return { connected: true, bot_username: identity.username, bot_name: identity.name };
  }

  /** `DELETE /messenger/bot`: webhook removed, polling stopped (the agent restarts without it), token forgotten. */
  async disconnect(userId: string): Promise<void> {
    const row = await this.db.messengerBot.findUnique({ where: { userId } });
    if (!row) return;
    await this.db.messengerBot.deleteMany({ where: { userId } });
    if (row.webhook) await deleteWebhook(this.options.telegramApiRoot, this.box.open(row.tokenEncrypted));
    this.log.info({ userId, bot: row.botUsername }, 'messenger bot disconnected');
    await this.agents.restart(userId, { start: false });
  }

  /** The account is being deleted (its agent is gone): the row goes and Telegram stops pushing to us. */
  async forget(userId: string): Promise<void> {
    const row = await this.db.messengerBot.findUnique({ where: { userId } });
    if (!row) return;
    await this.db.messengerBot.deleteMany({ where: { userId } });
    if (row.webhook) await deleteWebhook(this.options.telegramApiRoot, this.box.open(row.tokenEncrypted));
  }

  /** `POST /messenger/bot/owner-code`: a one-time code; its hash goes to the agent, which pairs on `/start <code>`. */
  async ownerCode(userId: string, now = new Date()): Promise<OwnerCode> {
    const row = await this.db.messengerBot.findUnique({ where: { userId }, select: { userId: true } });
    if (!row) throw notFound('Connect a bot first (PUT /messenger/bot)', 'BOT_NOT_CONNECTED');
    const code = randomBytes(12).toString('base64url');
    const expiresAt = new Date(now.getTime() + OWNER_CODE_TTL_MS);
    const agent = await this.agents.agentFor(userId);
    await agentClient(agent).messenger.setOwnerCode.mutate({
      code_sha256: createHash('sha256').update(code).digest('hex'),
      expires_at: expiresAt.toISOString(),
    });
    return { code, expires_at: expiresAt.toISOString() };
  }

  /** What the user's agent gets at start for its bot (nothing without one). */
  async agentEnv(userId: string): Promise<Record<string, string>> {
    const row = await this.db.messengerBot.findUnique({ where: { userId } });
    if (!row) return {};
    return {
      TELEGRAM_BOT_TOKEN: this.box.open(row.tokenEncrypted),
      ...(row.webhook ? { TELEGRAM_WEBHOOK_SECRET: this.box.open(row.webhookSecretEncrypted) } : {}),
    };
  }

  /**
   * A push from Telegram to `/api/v1/telegram/{webhook id}/webhook`. Wrong or missing secret →
   * 401 and nothing is delivered. Otherwise the agent is woken and given the update; resolves
   * only once it accepted it.
   */
  async relay(webhookId: string, givenSecret: string | undefined, update: unknown): Promise<void> {
    const row = await this.db.messengerBot.findUnique({ where: { webhookId } });
    if (!row?.webhook) throw notFound('No such webhook', 'WEBHOOK_NOT_FOUND');
    const secret = this.box.open(row.webhookSecretEncrypted);
    if (!timingSafeEqual(digest(givenSecret ?? ''), digest(secret))) throw unauthorized('Missing or invalid webhook secret', 'INVALID_WEBHOOK_SECRET');
    if (typeof update !== 'object' || update === null || typeof (update as { update_id?: unknown }).update_id !== 'number')
      throw badRequest('Not a Telegram update');
    // A ban removes the webhook; an update Telegram still had in flight wakes nothing.
    await refuseBanned(this.db, row.userId);
    const agent = await this.agents.agentFor(row.userId);
    const { base, fetch } = agentFetch(agent.url);
    const deadline = Date.now() + RELAY_READY_MS;
    for (;;) {
      const res = await fetch(`${base}/telegram/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': secret },
        body: JSON.stringify(update),
      }).catch(() => undefined);
      if (res?.ok) return;
      await res?.body?.cancel();
      // 503: the freshly started agent's bot is still connecting (getMe); anything else is final here.
      if ((res && res.status !== 503) || Date.now() > deadline) {
        this.log.warn({ userId: row.userId, status: res?.status ?? 0 }, 'telegram webhook: the agent did not take the update; Telegram will retry');
        throw new AppError(503, 'AGENT_UNAVAILABLE', 'The agent could not take the update now', { 'Retry-After': '5' });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
