/**
 * The messenger integration (Telegram): the bot's lifecycle, what happens to each incoming
 * private message according to its sender's contact, and delivery of proactive messages.
 *
 * - unknown sender → contact `pending`, one polite notice, nothing reaches the model;
 * - `pending` → nothing (the notice is sent once per contact);
 * - `blocked` → ignored;
 * - `allowed` (or `TELEGRAM_OWNER_ID`) → the text goes to the chat runtime as chat
 *   `telegram:<chat id>` and the run's events come back (delivery.ts). Only the owner's runs
 *   (TELEGRAM_OWNER_ID, or paired with the account's owner code) get the owner's tools and prompt
 *   files; any other contact's run gets the tools TELEGRAM_CONTACT_TOOLS names (none by default),
 *   in the contact's own chat, whose history is all it sees.
 * Group chats are ignored unless `TELEGRAM_GROUPS=on`; then messages from allowed senders go
 * to chat `telegram:<group id>` (unknown senders become pending contacts, without a notice), as
 * contacts' runs whoever writes: a group is shared with people who are not the owner.
 */
import type { Context } from 'grammy';
import type { Update } from 'grammy/types';
import type { Logger } from '../../common/log.js';
import type { ChatRuntime } from '../chat/runtime.js';
import { MESSAGE_MAX_CHARS } from '@contracts/agent/chat.js';
import type { AgentConfig } from '../config.js';
import type { AgentDb } from '../store.js';
import type { TelegramBot } from './bot.js';
import { claimNotice, findContact, ownerTelegramIds, pairOwner, recordSender, releaseNotice } from './contacts.js';
import { claimOwnerCode, pairingCode } from './owner-code.js';
import type { MessengerStatus } from '@contracts/agent/messenger.js';

/** The parts that need grammY, loaded together by an agent that has a bot. */
interface Telegram {
  bot: TelegramBot;
  delivery: typeof import('./delivery.js');
}

/** A proactive message (heartbeat, subagent) as the pending store announces it. */
export interface PendingNotice {
  chat_id: string;
  content: string;
  source: string;
}

/**
 * What the messenger needs from the pending-message store (server/agent/pending/, issue 8):
 * a listener called for each message added (the pending store provides it, see services.ts);
 * messages for `telegram:<id>` chats are then also sent to that Telegram chat.
 */
export interface PendingSource {
  onPending(listener: (message: PendingNotice) => void): () => void;
}

export const PENDING_NOTICE =
  'Hello! This is a personal assistant bot. Its owner has not approved you yet, so your messages are not read for now. ' +
  'You will be able to talk to it once the owner allows you; there is no need to write again before that.';
export const TEXT_ONLY_NOTICE = 'I can only read text messages for now.';
export const PAIRED_NOTICE = 'You are now the owner of this bot: your messages go to your agent.';

export const TELEGRAM_CHAT_PREFIX = 'telegram:';

export interface MessengerDeps {
  config: AgentConfig;
  log: Logger;
  db: AgentDb;
  chat: ChatRuntime;
  pending?: PendingSource;
  /** Tests shorten the typing refresh. */
  typingRefreshMs?: number;
}

export class MessengerService {
  private telegram: Telegram | undefined;
  private loading: Promise<void> | undefined;
  /** grammY is being imported: the bot is about to poll or receive, so the agent is not idle. */
  private starting = false;
  private stopped = false;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly deps: MessengerDeps) {
    if (deps.pending) this.unsubscribe = deps.pending.onPending((message) => this.onPending(message));
  }

  /**
   * Starts polling in the background (no-op without a token). grammY is about 10 MB of an
   * agent's memory, so it is imported here, by agents that have a token, and by no other.
   */
  start(): void {
    const { config, log } = this.deps;
    const telegram = config.telegram;
    if (!telegram.token || this.loading || this.stopped) return;
    const token = telegram.token;
    this.starting = true;
    this.loading = Promise.all([import('./bot.js'), import('./delivery.js')])
      .then(
        ([{ TelegramBot }, delivery]) => {
          if (this.stopped) return;
          const bot = new TelegramBot({
            token,
            apiRoot: telegram.apiRoot,
            egress: config.egress,
            pollTimeoutSeconds: telegram.pollTimeoutSeconds,
            retryBaseMs: telegram.retryBaseMs,
            retryMaxMs: telegram.retryMaxMs,
            webhook: telegram.webhook,
            log: log.child({ area: 'telegram' }),
            onMessage: (ctx) => this.onMessage(ctx),
          });
          this.telegram = { bot, delivery };
          bot.start();
        },
        (error: unknown) => log.error({ reason: error instanceof Error ? error.message : String(error) }, 'telegram: the bot could not be loaded'),
      )
      .finally(() => {
        this.starting = false;
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.loading;
    await this.telegram?.bot.stop();
  }

  /** Webhook mode's secret, from the configuration: known before the bot has loaded. */
  get webhookSecret(): string | undefined {
    return this.deps.config.telegram.token ? this.deps.config.telegram.webhook?.secret : undefined;
  }

  /** Webhook mode: one update pushed by Telegram; false while the bot is not connected yet. */
  receive(update: Update): boolean {
    return this.telegram?.bot.receive(update) ?? false;
  }

  busy(): boolean {
    return this.telegram?.bot.busy ?? (this.starting && !this.stopped);
  }

  /** The bot long-polls: the agent must be running for its messages to be read. */
  polling(): boolean {
    return this.telegram?.bot.polling ?? (this.starting && !this.stopped && !this.deps.config.telegram.webhook);
  }

  status(): MessengerStatus {
    const identity = this.telegram?.bot.identity;
    return identity ? { connected: true, bot_username: identity.username, bot_name: identity.name } : { connected: false, bot_username: '', bot_name: '' };
  }

  private async onMessage(ctx: Context): Promise<void> {
    const telegram = this.telegram;
    const message = ctx.message;
    if (!telegram || !message?.from || message.from.is_bot) return;
    const { bot, delivery } = telegram;
    const { db, config, log } = this.deps;
    const isPrivate = message.chat.type === 'private';
    if (!isPrivate && !config.telegram.groups) return;
    const from = message.from;
    const { contact, owner } = await recordSender(
      db,
      { telegramId: String(from.id), username: from.username ?? '', displayName: [from.first_name, from.last_name].filter(Boolean).join(' ') },
      config.telegram.ownerId,
    );
    // Owner pairing: a valid one-time code from the account makes the sender allowed, and the owner.
    const code = isPrivate ? pairingCode(message.text ?? '') : undefined;
    if (code && (await claimOwnerCode(db, code))) {
      await pairOwner(db, contact.telegram_id);
      log.info({ telegramId: contact.telegram_id, username: contact.username }, 'telegram: owner paired with a one-time code');
      await delivery.sendText(bot.api, message.chat.id, PAIRED_NOTICE, bot.signal);
      return;
    }
    if (contact.status === 'blocked') return;
    if (contact.status === 'pending') {
      if (isPrivate && (await claimNotice(db, contact.telegram_id))) {
        try {
          await delivery.sendText(bot.api, message.chat.id, PENDING_NOTICE, bot.signal);
        } catch (error) {
          await releaseNotice(db, contact.telegram_id);
          throw error;
        }
        log.info({ telegramId: contact.telegram_id, username: contact.username }, 'telegram: new contact waiting for approval');
      }
      return;
    }
    const text = (message.text ?? message.caption ?? '').slice(0, MESSAGE_MAX_CHARS);
    if (!text.trim()) {
      if (isPrivate) await delivery.sendText(bot.api, message.chat.id, TEXT_ONLY_NOTICE, bot.signal);
      return;
    }
    const chatId = `${TELEGRAM_CHAT_PREFIX}${message.chat.id}`;
    const audience = owner && isPrivate ? undefined : { name: contact.display_name || contact.username || contact.telegram_id };
    await delivery.deliverRun(this.deps.chat.send({ chat_id: chatId, message: text }, bot.signal, undefined, audience), {
      api: bot.api,
      chatId: message.chat.id,
      workspace: config.workspace,
      log,
      signal: bot.signal,
      typingRefreshMs: this.deps.typingRefreshMs,
    });
  }

  /**
   * A proactive message for `telegram:<id>` goes to that chat, if its contact may be written to;
   * a scheduled task's answer in any other chat goes to the owner's own Telegram chat (the owner
   * asked for it, wherever they are now).
   */
  private onPending(message: PendingNotice): void {
    if (!this.deps.config.telegram.token) return;
    const toChat = message.chat_id.startsWith(TELEGRAM_CHAT_PREFIX);
    if (!toChat && message.source !== 'task') return;
    const id = message.chat_id.slice(TELEGRAM_CHAT_PREFIX.length);
    if (toChat && !/^-?\d{1,20}$/.test(id)) return;
    const telegram = this.telegram;
    if (!telegram?.bot.connected) {
      this.deps.log.warn({ chatId: message.chat_id, source: message.source }, 'telegram: not connected; a pending message was not delivered to Telegram');
      return;
    }
    telegram.bot.track(toChat ? this.deliverPending(telegram, id, message) : this.deliverToOwner(telegram, message));
  }

  private async deliverToOwner({ bot, delivery }: Telegram, message: PendingNotice): Promise<void> {
    const { db, config } = this.deps;
    for (const owner of await ownerTelegramIds(db, config.telegram.ownerId)) {
      await delivery.sendText(bot.api, Number(owner), message.content, bot.signal);
    }
  }

  private async deliverPending({ bot, delivery }: Telegram, id: string, message: PendingNotice): Promise<void> {
    const { db, config, log } = this.deps;
    const isGroup = id.startsWith('-');
    const allowed = isGroup ? config.telegram.groups : id === config.telegram.ownerId || (await findContact(db, id))?.status === 'allowed';
    if (!allowed) {
      log.info({ chatId: message.chat_id, source: message.source }, 'telegram: pending message not sent (contact not allowed)');
      return;
    }
    await delivery.sendText(bot.api, Number(id), message.content, bot.signal);
  }
}
