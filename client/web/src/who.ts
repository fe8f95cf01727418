/** Who is signed in (from `tokens.me`), for the header and the guest limits. */
import { api } from './api.js';
import { isGuestToken } from '../../sdk/account.js';
import { loadTokens } from './session.js';

export interface Me {
  user_id: string;
  session_id: string;
  guest: boolean;
}

let cached: Promise<Me> | null = null;

export function me(): Promise<Me> {
  cached ??= api.tokens.me.query().catch((error: unknown) => {
    cached = null;
    throw error;
  });
  return cached;
}

export function forgetMe(): void {
  cached = null;
}

/** From the token's claim (not verified; only to shape the page). */
export function isGuest(): boolean {
  const tokens = loadTokens();
  return tokens ? isGuestToken(tokens.access_token) : false;
}
