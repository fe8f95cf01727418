/**
 * `POST /telegram/webhook` (webhook mode, `TELEGRAM_WEBHOOK_URL`): Telegram pushes updates here.
 * Not behind the agent secret (Telegram cannot send it): the `X-Telegram-Bot-Api-Secret-Token`
 * header must equal `TELEGRAM_WEBHOOK_SECRET` (constant-time). Answers 200 at once; the update
 * is handled in the background, as in polling mode.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Update } from 'grammy/types';
import { AppError, notFound, unauthorized } from '../../common/errors.js';
import type { MessengerService } from './service.js';

export const TELEGRAM_WEBHOOK_PATH = '/telegram/webhook';

const digest = (value: string) => createHash('sha256').update(value).digest();

export function telegramWebhook(messenger: MessengerService): RequestHandler {
  return (req, res) => {
    const secret = messenger.webhookSecret;
    if (!secret) throw notFound('Webhook mode is not enabled', 'ROUTE_NOT_FOUND');
    const given = req.get('x-telegram-bot-api-secret-token') ?? '';
    if (!timingSafeEqual(digest(given), digest(secret))) throw unauthorized('Missing or invalid webhook secret', 'INVALID_WEBHOOK_SECRET');
    const update = req.body as Update | undefined;
    if (typeof update !== 'object' || update === null || typeof update.update_id !== 'number') throw new AppError(400, 'BAD_REQUEST', 'Not a Telegram update');
    // Not connected yet (bot loading, setWebhook still retrying): 503 makes Telegram deliver it again later.
    if (!messenger.receive(update)) throw new AppError(503, 'NOT_READY', 'The bot is not ready');
    res.json({ ok: true });
  };
}
