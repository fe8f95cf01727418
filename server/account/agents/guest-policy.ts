/**
 * What a guest may do with their agent until they upgrade (spec: "Guest accounts have limited
 * functionality until upgraded"):
 * - no messenger integration (a bot speaking for an anonymous account invites abuse);
 * - uploads up to 5 MB instead of 50 MB;
 * - 50 chat messages per day.
 * Full accounts get the agent's own limits.
 */
import { AppError } from '../../common/errors.js';
import type { RateLimits } from '../ratelimit/limits.js';

export const GUEST_UPLOAD_BYTES = 5 * 1024 * 1024;
export const FULL_UPLOAD_BYTES = 50 * 1024 * 1024 + 1024 * 1024; // the agent enforces 50 MB of file; room for the multipart envelope
export const GUEST_DAILY_MESSAGES = 50;

const upgradeHint = 'Sign in with e-mail, a provider or a wallet to lift guest limits';

export interface AgentRequest {
  method: string;
  /** Agent path without the query, e.g. `/chat` or `/messenger/contacts`. */
  path: string;
  guest: boolean;
  userId: string;
}

/** Throws 403 for what guests may not do; counts guest chat messages. Returns the body cap. */
export async function admitAgentRequest(request: AgentRequest, rateLimits: RateLimits): Promise<{ maxBodyBytes: number }> {
  if (!request.guest) return { maxBodyBytes: FULL_UPLOAD_BYTES };
  if (/^\/(messenger|telegram)(\/|$)/.test(request.path)) {
    throw new AppError(403, 'GUEST_LIMITED', `Guests cannot use the messenger integration. ${upgradeHint}`);
  }
  if (request.method === 'POST' && request.path === '/chat') {
    await rateLimits.consume('guest.chat.daily', request.userId).catch((error: unknown) => {
      if (error instanceof AppError && error.status === 429) {
        throw new AppError(429, 'GUEST_QUOTA', `Guests may send ${GUEST_DAILY_MESSAGES} messages a day. ${upgradeHint}`, error.headers);
      }
      throw error;
    });
  }
  return { maxBodyBytes: GUEST_UPLOAD_BYTES };
}
