import { api, errorMessage } from '../api.js';
import { h } from '../dom.js';
import { clearTokens, loadTokens } from '../session.js';
import { oauthButtons } from '../signin/oauth.js';

/** Signed in: who you are, and the way out. (The chat, files and agent pages come later.) */
export function homePage(onSignedOut: () => void): HTMLElement {
  const who = h('p', { 'data-testid': 'signed-in' }, 'Signed in.');
  // A guest keeps this account by linking a provider (upgraded in place).
  const upgrade = h('div', {});
  api.tokens.me.query().then(
    (me) => {
      who.textContent = `Signed in${me.guest ? ' as a guest' : ''} (user ${me.user_id}).`;
      if (me.guest) upgrade.replaceChildren(h('p', {}, 'Keep this account by linking a provider:'), oauthButtons((p) => p.label.replace('Sign in with', 'Link')));
    },
    (error: unknown) => (who.textContent = errorMessage(error)),
  );
  const signOut = h('button', { type: 'button' }, 'Sign out');
  signOut.onclick = async () => {
    const tokens = loadTokens();
    if (tokens) await api.tokens.logout.mutate({ refresh_token: tokens.refresh_token }).catch(() => undefined);
    clearTokens();
    onSignedOut();
  };
  return h('div', {}, h('h1', {}, 'Your agent'), who, upgrade, signOut);
}
