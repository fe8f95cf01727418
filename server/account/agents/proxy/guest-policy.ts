/**
 * What a guest may do with their agent until they upgrade (spec: "Guest accounts have limited
 * functionality until upgraded"). "Guest" here is every account on guest terms: guests, and
 * accounts no verified e-mail or provider vouches for (users/identities.ts):
 * - no messenger integration (a bot speaking for an anonymous account invites abuse);
 * - uploads up to 5 MB instead of 50 MB;
 * - 50 chat messages per day (a reconnect to a running reply is not a message).
 * Full accounts get the agent's own limits. Everyone's chat message is refused up front with 429
 * BUDGET_EXCEEDED once their daily model budget is spent (egress/model-usage.ts), before it counts.
 *
 * Both faces of the proxy ask the same question with an action name, each route's from its row of
 * the route table (contracts/agent/routes.ts): the REST proxy from the route the request matched
 * (`restAgentAction`; agent-routes.ts matches only the documented spelling), the tRPC proxy from
 * the procedure's row and its input.
 */
import { agentRouteAt, guestActionOf, type AgentAction, type AgentRestRoute } from '@contracts/agent/routes.js';
import { AppError } from '../../../common/errors.js';
import type { RateLimits } from '../../ratelimit/limits.js';
import type { ModelBudget } from '../egress/model-usage.js';

export const GUEST_UPLOAD_BYTES = 5 * 1024 * 1024;
export const FULL_UPLOAD_BYTES = 50 * 1024 * 1024 + 1024 * 1024; // the agent enforces 50 MB of file; room for the multipart envelope
export const GUEST_DAILY_MESSAGES = 50;

const upgradeHint = 'Link a verified e-mail address or a provider account to lift guest limits';

export type { AgentAction };

export interface AgentUser {
  guest: boolean;
  userId: string;
}

/** The action of a REST call to one of the agent's routes: its row's (the body is not read: a REST reconnect is a message too). */
export function restAgentAction(route: AgentRestRoute): AgentAction {
  const row = agentRouteAt(route.method, route.path);
  return row ? guestActionOf(row) : 'other';
}

type Budget = Pick<ModelBudget, 'check' | 'guestMessagesPerDay' | 'countActivity'>;

/**
 * Throws 403 for what guests may not do; counts guest chat messages against their quota, and every
 * admitted chat message in the user's usage of the day (a refused one counts nowhere). Returns the body cap.
 */
export async function admitAgentAction(action: AgentAction, user: AgentUser, rateLimits: RateLimits, budget?: Budget): Promise<{ maxBodyBytes: number }> {
  const admitted = await admitUnderPolicy(action, user, rateLimits, budget);
  if (action === 'chat.message') await budget?.countActivity(user.userId, 'message');
  return admitted;
}

async function admitUnderPolicy(action: AgentAction, user: AgentUser, rateLimits: RateLimits, budget?: Budget): Promise<{ maxBodyBytes: number }> {
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

/** The REST proxy's entry: the action from the matched route. */
export function admitAgentRequest(route: AgentRestRoute, user: AgentUser, rateLimits: RateLimits, budget?: Budget): Promise<{ maxBodyBytes: number }> {
  return admitAgentAction(restAgentAction(route), user, rateLimits, budget);
}
