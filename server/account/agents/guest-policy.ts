/**
 * What a guest may do with their agent until they upgrade (spec: "Guest accounts have limited
 * functionality until upgraded"):
 * - no messenger integration (a bot speaking for an anonymous account invites abuse);
 * - uploads up to 5 MB instead of 50 MB;
 * - 50 chat messages per day (a reconnect to a running reply is not a message).
 * Full accounts get the agent's own limits. Everyone's chat message is refused up front with 429
 * BUDGET_EXCEEDED once their daily model budget is spent (model-usage.ts), before it counts.
 *
 * Both faces of the proxy ask the same question with an action name: the REST proxy derives it
 * from the method and path (`restAgentAction`), the tRPC routers name it per procedure.
 */
import { AppError } from '../../common/errors.js';
import type { RateLimits } from '../ratelimit/limits.js';
import type { ModelBudget } from './model-usage.js';

export const GUEST_UPLOAD_BYTES = 5 * 1024 * 1024;
export const FULL_UPLOAD_BYTES = 50 * 1024 * 1024 + 1024 * 1024; // the agent enforces 50 MB of file; room for the multipart envelope
export const GUEST_DAILY_MESSAGES = 50;

const upgradeHint = 'Sign in with e-mail, a provider or a wallet to lift guest limits';

/** What a call to the agent does, as far as the guest policy cares. */
export type AgentAction = 'chat.message' | 'messenger' | 'other';

export interface AgentUser {
  guest: boolean;
  userId: string;
}

export interface AgentRequest extends AgentUser {
  method: string;
  /** Agent path without the query, e.g. `/chat` or `/messenger/contacts`. */
  path: string;
}

/** The action of a REST call to the agent's documented paths. */
export function restAgentAction(method: string, path: string): AgentAction {
  if (/^\/(messenger|telegram)(\/|$)/.test(path)) return 'messenger';
  if (method === 'POST' && path === '/chat') return 'chat.message';
  return 'other';
}

/** REST calls whose answer is an event stream the proxy relays: a chat message, a reconnect to its reply. */
export const opensEventStream = (method: string, path: string): boolean =>
  (method === 'POST' && path === '/chat') || (method === 'GET' && /^\/chat\/[^/]+\/stream$/.test(path));

/** Throws 403 for what guests may not do; counts guest chat messages. Returns the body cap. */
export async function admitAgentAction(
  action: AgentAction,
  user: AgentUser,
  rateLimits: RateLimits,
  budget?: Pick<ModelBudget, 'check' | 'guestMessagesPerDay'>,
): Promise<{ maxBodyBytes: number }> {
  if (action === 'chat.message') await budget?.check(user.userId);
  if (!user.guest) return { maxBodyBytes: FULL_UPLOAD_BYTES };
  if (action === 'messenger') {
    throw new AppError(403, 'GUEST_LIMITED', `Guests cannot use the messenger integration. ${upgradeHint}`);
  }
  if (action === 'chat.message') {
    const perDay = await budget?.guestMessagesPerDay(user.userId);
    await rateLimits.consume('guest.chat.daily', user.userId, undefined, perDay).catch((error: unknown) => {
      if (error instanceof AppError && error.status === 429) {
        throw new AppError(429, 'GUEST_QUOTA', `Guests may send ${perDay ?? GUEST_DAILY_MESSAGES} messages a day. ${upgradeHint}`, error.headers);
      }
      throw error;
    });
  }
  return { maxBodyBytes: GUEST_UPLOAD_BYTES };
}

/** The REST proxy's entry: the action from method and path. */
export function admitAgentRequest(
  request: AgentRequest,
  rateLimits: RateLimits,
  budget?: Pick<ModelBudget, 'check' | 'guestMessagesPerDay'>,
): Promise<{ maxBodyBytes: number }> {
  return admitAgentAction(restAgentAction(request.method, request.path), request, rateLimits, budget);
}
