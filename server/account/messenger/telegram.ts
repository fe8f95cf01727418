/**
 * The few Bot API calls the account service makes itself for a user's bot: `getMe` to check a
 * token, `setWebhook` / `deleteWebhook` in webhook mode. Answers are mapped to our errors; the
 * token travels only in the request path and appears in no error, log line or answer.
 */
import { AppError } from '../../common/errors.js';

/** Telegram's token shape; anything else is refused before a call (it is put in a URL path). */
export const BOT_TOKEN = /^\d{1,20}:[A-Za-z0-9_-]{1,200}$/;

export const botTokenInvalid = () =>
  new AppError(400, 'BOT_TOKEN_INVALID', 'Telegram refused this bot token. Copy the token @BotFather gave you (it looks like 123456:ABC-DEF…) and try again.');
const telegramUnavailable = () => new AppError(502, 'TELEGRAM_UNAVAILABLE', 'Telegram could not be reached; try again in a moment.');

interface BotApiAnswer<T> {
  ok: boolean;
  result?: T;
  error_code?: number;
  description?: string;
}

export interface BotIdentity {
  username: string;
  name: string;
}

async function call<T>(apiRoot: string, token: string, method: string, params: Record<string, unknown> = {}): Promise<BotApiAnswer<T>> {
  if (!BOT_TOKEN.test(token)) throw botTokenInvalid();
  let res: Response;
  try {
    res = await fetch(`${apiRoot}/bot${token}/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(params),
      signal: AbortSignal.timeout(10_000),
    });
  } catch {
    throw telegramUnavailable();
  }
  const body = (await res.json().catch(() => ({ ok: false, error_code: res.status }))) as BotApiAnswer<T>;
  // 401: a revoked or made-up token; 404: a malformed one (Telegram's own answers).
  if (!body.ok && (body.error_code === 401 || body.error_code === 404)) throw botTokenInvalid();
  if (!body.ok && (body.error_code ?? res.status) >= 500) throw telegramUnavailable();
  return body;
}

export async function getMe(apiRoot: string, token: string): Promise<BotIdentity> {
  const answer = await call<{ username?: string; first_name?: string; last_name?: string; is_bot?: boolean }>(apiRoot, token, 'getMe');
  const me = answer.result;
  if (!answer.ok || !me?.username || me.is_bot === false) throw botTokenInvalid();
  return { username: me.username, name: [me.first_name, me.last_name].filter(Boolean).join(' ') };
}

export async function setWebhook(apiRoot: string, token: string, url: string, secret: string): Promise<void> {
  const answer = await call(apiRoot, token, 'setWebhook', { url, secret_token: secret, allowed_updates: ['message'] });
  if (!answer.ok) throw new AppError(502, 'TELEGRAM_WEBHOOK_REFUSED', `Telegram did not accept the webhook: ${answer.description ?? 'unknown reason'}`);
}

/** Best effort: a token revoked meanwhile has no webhook to remove. */
export async function deleteWebhook(apiRoot: string, token: string): Promise<void> {
  await call(apiRoot, token, 'deleteWebhook', { drop_pending_updates: false }).catch(() => undefined);
}
