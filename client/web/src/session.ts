/**
 * The browser's tokens, kept in localStorage under `agent.tokens` in the client SDK's format
 * (`StoredTokens`: the pair plus when the access token expires), so the SDK (api.ts) reads,
 * refreshes and rotates them. Every sign-in method ends in `saveTokens`.
 */
import { localTokenStorage, sessionIdOf, userIdOf, type StoredTokens, type TokenPair } from '../../sdk/account.js';

export type { TokenPair };

export const tokenStorage = localTokenStorage('agent.tokens');

export function loadTokens(): StoredTokens | null {
  return tokenStorage.get() as StoredTokens | null;
}

/** What `read` finds in the stored access token, or null when signed out. */
function ofStoredToken(read: (accessToken: string) => string | undefined): string | null {
  const tokens = loadTokens();
  return tokens ? (read(tokens.access_token) ?? null) : null;
}

/** The session the stored tokens belong to, or null when signed out. */
export const currentSessionId = (): string | null => ofStoredToken(sessionIdOf);

/** The user the stored tokens belong to, or null when signed out. */
export const currentUserId = (): string | null => ofStoredToken(userIdOf);

export function saveTokens(pair: TokenPair): void {
  void tokenStorage.set({ access_token: pair.access_token, refresh_token: pair.refresh_token, access_expires_at: Date.now() + pair.expires_in * 1000 });
}

export function clearTokens(): void {
  void tokenStorage.set(null);
}

/**
 * Sign-out leaves nothing of the account in this browser for the next person: every key this
 * client keeps (tokens, the open chat, collected agent messages, the guest device id, which
 * would otherwise sign the next guest into the same guest account) in localStorage and
 * sessionStorage. The chat list itself lives on the agent, not here.
 */
export function forgetAccountData(): void {
  for (const storage of [localStorage, sessionStorage]) forgetKeys(storage);
}

/** This tab's part of it (the open chat): another tab has signed in to another session, whose tokens stay. */
export function forgetTabData(): void {
  forgetKeys(sessionStorage);
}

function forgetKeys(storage: Storage): void {
  for (const key of Object.keys(storage)) if (key.startsWith('agent.')) storage.removeItem(key);
}
