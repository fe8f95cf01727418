/**
 * Sign in with provider A or B: the browser goes to the account service's start URL, which
 * redirects to the provider; the provider comes back through the service's callback to
 * /auth/callback (pages/callback.ts). A signed-in guest starts through tRPC instead, so that
 * the guest's token (sent by the api client) is bound to the flow and the account is upgraded
 * in place.
 */
import { api, errorMessage } from '../api.js';
import { alertBox, h } from '../dom.js';
import { loadTokens } from '../session.js';
import { keepIf } from './available.js';
import type { SignInMethod } from './method.js';

export type OAuthProvider = 'idpa' | 'idpb';

export const PROVIDERS: Array<{ id: OAuthProvider; label: string }> = [
  { id: 'idpa', label: 'Sign in with provider A' },
  { id: 'idpb', label: 'Sign in with provider B' },
];

export async function startOAuth(provider: OAuthProvider): Promise<void> {
  if (loadTokens()) {
    const { location: url } = await api.auth.oauth.authorizationUrl.mutate({ provider });
    location.assign(url);
  } else {
    location.assign(`/api/v1/auth/oauth/${provider}`);
  }
}

/** The provider buttons, for the sign-in page and for a guest's home page. */
export function oauthButtons(labels: (p: (typeof PROVIDERS)[number]) => string = (p) => p.label): HTMLElement {
  const alert = alertBox();
  const buttons = PROVIDERS.map((p) => {
    const button = h('button', { type: 'button', 'data-testid': `oauth-${p.id}` }, labels(p));
    button.onclick = async () => {
      alert.clear();
      button.disabled = true;
      try {
        await startOAuth(p.id);
      } catch (error) {
        button.disabled = false;
        alert.show(errorMessage(error));
      }
    };
    return keepIf(button, (methods) => methods.has(p.id));
  });
  return h('div', { class: 'oauth-buttons' }, ...buttons, alert.el);
}

export const oauthMethod: SignInMethod = {
  id: 'oauth',
  render() {
    const section = h('section', { 'aria-labelledby': 'oauth-title' }, h('h2', { id: 'oauth-title' }, 'Provider account'), oauthButtons());
    return keepIf(section, (methods) => methods.has('idpa') || methods.has('idpb'));
  },
};
