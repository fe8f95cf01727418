/**
 * The browser's token pair, kept in localStorage. Every sign-in method ends in `saveTokens`.
 */
export interface TokenPair {
  access_token: string;
  refresh_token: string;
  token_type: 'bearer';
  expires_in: number;
}

const KEY = 'agent.tokens';

export function loadTokens(): TokenPair | undefined {
  const raw = localStorage.getItem(KEY);
  return raw ? (JSON.parse(raw) as TokenPair) : undefined;
}

export function saveTokens(pair: TokenPair): void {
  localStorage.setItem(KEY, JSON.stringify(pair));
}

export function clearTokens(): void {
  localStorage.removeItem(KEY);
}
