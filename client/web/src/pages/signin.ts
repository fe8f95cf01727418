import { h } from '../dom.js';
import { saveTokens } from '../session.js';
import { emailMethod } from '../signin/email.js';
import { guestMethod } from '../signin/guest.js';
import type { SignInMethod } from '../signin/method.js';
import { oauthMethod } from '../signin/oauth.js';
import { passkeyMethod } from '../signin/passkey.js';
import { walletMethod } from '../signin/wallet.js';

/** Every sign-in method, in the order the page shows them. */
const methods: SignInMethod[] = [emailMethod, oauthMethod, walletMethod, passkeyMethod, guestMethod];

/** `notice`: why the user is here again (e.g. the session ended). */
export function signInPage(onSignedIn: () => void, notice?: string): HTMLElement {
  const done = (pair: Parameters<Parameters<SignInMethod['render']>[0]>[0]) => {
    saveTokens(pair);
    onSignedIn();
  };
  return h(
    'main',
    { class: 'signin' },
    h('h1', { class: 'page-title', tabIndex: -1 }, 'Sign in'),
    notice ? h('p', { role: 'alert', 'data-testid': 'signin-notice' }, notice) : '',
    ...methods.map((method) => method.render(done)),
  );
}
