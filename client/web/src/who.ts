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
  account = null;
}

type AccountInfo = Awaited<ReturnType<typeof api.account.get.query>>;
let account: Promise<AccountInfo> | null = null;

/** `GET /account`, asked once per sign-in (every page shows it; the service rate-limits reads). */
export function accountInfo(): Promise<AccountInfo> {
  // Like me(): one request shared by every caller until it fails or the user changes.
  account ??= api.account.get.query().catch((error: unknown) => {
    account = null;
    throw error;
  });
  return account;
}

/** From the token's claim (not verified; only to shape the page). */
export function isGuest(): boolean {
  const tokens = loadTokens();
  return tokens ? isGuestToken(tokens.access_token) : false;
}

/**
 * Who is signed in, in words: the first linked method's label (an address, a provider login, a
 * wallet) instead of an id; for a guest, what is left of today's messages.
 */
export async function accountSummary(): Promise<string> {
  try {
    const account = await accountInfo();
    const { messages_left_today: left, messages_per_day: perDay } = account.usage;
    if (account.guest) return `Signed in as a guest${left === null ? '' : ` · ${left} of ${perDay} messages left today`}`;
    return `Signed in as ${account.identities[0]?.label ?? 'your account'}`;
  } catch {
    return isGuest() ? 'Signed in as a guest' : 'Signed in';
  }
}
