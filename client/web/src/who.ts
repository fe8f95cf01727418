/** Who is signed in (from `tokens.me`), for the header and the guest limits. */
import { api } from './api.js';
import { isGuestToken } from '../../sdk/account.js';
import { loadTokens } from './session.js';

export interface Me {
  user_id: string;
  session_id: string;
  guest: boolean;
}

/**
 * One request shared by every caller until it fails or is forgotten (the user changed, or what it
 * read has moved): every page shows who is signed in, and the service rate-limits reads.
 */
function sharedQuery<T>(ask: () => Promise<T>): { get(): Promise<T>; forget(): void } {
  let pending: Promise<T> | null = null;
  return {
    get() {
      if (!pending) {
        const asked: Promise<T> = ask().catch((error: unknown) => {
          if (pending === asked) pending = null;
          throw error;
        });
        pending = asked;
      }
      return pending;
    },
    forget() {
      pending = null;
    },
  };
}

const meQuery = sharedQuery(() => api.tokens.me.query());
type AccountInfo = Awaited<ReturnType<typeof api.account.get.query>>;
const accountQuery = sharedQuery(() => api.account.get.query());

export const me = (): Promise<Me> => meQuery.get();

/** `GET /account`, asked once per sign-in and after replies (`refreshAccountInfo`). */
export const accountInfo = (): Promise<AccountInfo> => accountQuery.get();

export function forgetMe(): void {
  meQuery.forget();
  accountQuery.forget();
  clearTimeout(refreshTimer);
  refreshTimer = undefined;
}

const accountListeners = new Set<() => void>();

/**
 * Reads `GET /account` again and tells every view showing it (the header, the chat's composer):
 * after a reply, a guest's messages and the model budget have moved. `listener` runs on each
 * refresh until `stillShown` says its view is gone.
 */
export function onAccountRefresh(listener: () => void, stillShown: () => boolean): void {
  const once = () => (stillShown() ? listener() : accountListeners.delete(once));
  accountListeners.add(once);
}

const REFRESH_SPACING_MS = 10_000;
let lastRefresh = 0;
let refreshTimer: ReturnType<typeof setTimeout> | undefined;
/**
 * Replies can come faster than the read limit would like: one read per 10 s at most, and one
 * asked for sooner is made when the 10 s are over, so the counts always catch up.
 */
export function refreshAccountInfo(): void {
  if (refreshTimer !== undefined) return;
  refreshTimer = setTimeout(
    () => {
      refreshTimer = undefined;
      lastRefresh = Date.now();
      accountQuery.forget();
      for (const listener of [...accountListeners]) listener();
    },
    Math.max(0, lastRefresh + REFRESH_SPACING_MS - Date.now()),
  );
}

/** The user's own zone, as the browser knows it. */
export const browserTimezone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/**
 * Keeps the browser's time zone on the account when it differs from what the account holds (the
 * layout, once signed in): the agent reads the user's tasks in it and is told the local time there.
 */
export async function keepTimezone(zone: string = browserTimezone()): Promise<void> {
  try {
    if ((await accountInfo()).timezone === zone) return;
    await api.account.setTimezone.mutate({ timezone: zone });
    accountQuery.forget();
  } catch {
    // Only a display preference: the page shows the browser's zone either way.
  }
}

type ModelTokens = AccountInfo['usage']['model_tokens'];
const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });
const exact = new Intl.NumberFormat('en');
const clock = (iso: string) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

/** What spent model tokens, in the words of the Account and admin pages (docs/agent.md, "Proactive turns and the budget"). */
export const SOURCE_NAMES = { chat: 'Chats', heartbeat: 'Heartbeats', task: 'Scheduled tasks', subagent: 'Subagents' } as const;

/** "Chats 1,234 · Heartbeats 0 · Scheduled tasks 56 · Subagents 0": tokens by source, exact. */
export function bySourceText(bySource: ModelTokens['by_source']): string {
  return (Object.keys(SOURCE_NAMES) as Array<keyof typeof SOURCE_NAMES>)
    .map((source) => `${SOURCE_NAMES[source]} ${exact.format(bySource[source])}`)
    .join(' · ');
}

/**
 * The day's model budget in words: `text` short enough for the header ("1.2M of 2M model tokens
 * left today"), `detail` with the exact figures and when it resets; null when there is no ceiling.
 */
export function budgetSummary(tokens: ModelTokens): { text: string; detail: string; spent: boolean } | null {
  if (tokens.limit === null) return null;
  const left = Math.max(0, tokens.limit - tokens.used);
  const resets = `resets at ${clock(tokens.resets_at)}`;
  if (left === 0)
    return {
      text: `Model budget used up for today · ${resets}`,
      detail: `All ${exact.format(tokens.limit)} model tokens of today are used; ${resets}.`,
      spent: true,
    };
  return {
    text: `${compact.format(left)} of ${compact.format(tokens.limit)} model tokens left today`,
    detail: `${exact.format(left)} of ${exact.format(tokens.limit)} model tokens left today; ${resets}.`,
    spent: false,
  };
}

/** From the token's claim (not verified; only to shape the page). */
export function isGuest(): boolean {
  const tokens = loadTokens();
  return tokens ? isGuestToken(tokens.access_token) : false;
}

/**
 * Who is signed in, in words: the first linked method's label (an address, a provider login, a
 * wallet) instead of an id; for an account on guest terms (a guest, or an `unverified` wallet or
 * passkey account: docs/security.md), what is left of today's messages.
 */
export async function accountSummary(): Promise<string> {
  try {
    const account = await accountInfo();
    const { messages_left_today: left, messages_per_day: perDay } = account.usage;
    const quota = left === null ? '' : ` · ${left} of ${perDay} messages left today`;
    if (account.tier === 'unverified') return `Signed in as ${account.identities[0]?.label ?? 'your account'} (unverified)${quota}`;
    if (account.guest) return `Signed in as a guest${quota}`;
    return `Signed in as ${account.identities[0]?.label ?? 'your account'}`;
  } catch {
    return isGuest() ? 'Signed in as a guest' : 'Signed in';
  }
}
