import { h } from '../dom.js';
import { saveTokens } from '../session.js';
import { guestMethod } from '../signin/guest.js';
import type { SignInMethod } from '../signin/method.js';
import { oauthMethod } from '../signin/oauth.js';
import { walletMethod } from '../signin/wallet.js';

/** Every sign-in method, in the order the page shows them. */
const methods: SignInMethod[] = [oauthMethod, walletMethod, guestMethod];

export function signInPage(onSignedIn: () => void): HTMLElement {
  const done = (pair: Parameters<Parameters<SignInMethod['render']>[0]>[0]) => {
    saveTokens(pair);
    onSignedIn();
  };
  return h('div', {}, h('h1', {}, 'Sign in'), ...methods.map((method) => method.render(done)));
}
