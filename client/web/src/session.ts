/**
 * The browser's tokens, kept in localStorage under `agent.tokens` in the client SDK's format
 * (`StoredTokens`: the pair plus when the access token expires), so the SDK (api.ts) reads,
 * refreshes and rotates them. Every sign-in method ends in `saveTokens`.
 */
import { localTokenStorage, type StoredTokens, type TokenPair } from '../../sdk/account.js';

export type { TokenPair };

export const tokenStorage = localTokenStorage('agent.tokens');

export function loadTokens(): StoredTokens | null {
  return tokenStorage.get() as StoredTokens | null;
}

export function saveTokens(pair: TokenPair): void {
  void tokenStorage.set({ access_token: pair.access_token, refresh_token: pair.refresh_token, access_expires_at: Date.now() + pair.expires_in * 1000 });
}

export function clearTokens(): void {
  void tokenStorage.set(null);
}
