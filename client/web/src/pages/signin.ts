import { h } from '../dom.js';
import { PRODUCT_NAME } from '../router.js';
import { saveTokens } from '../session.js';
import { emailMethod } from '../signin/email.js';
import { guestMethod } from '../signin/guest.js';
import type { SignInMethod } from '../signin/method.js';
import { oauthMethod } from '../signin/oauth.js';
import { passkeyMethod } from '../signin/passkey.js';
import { walletMethod } from '../signin/wallet.js';

/**
 * Every sign-in method, in the order the page shows them. Guest first: it is the one click a new
 * visitor needs, and it stays above the fold on a phone (e2e/rough-edges.spec.ts).
 */
const methods: SignInMethod[] = [guestMethod, emailMethod, oauthMethod, walletMethod, passkeyMethod];

/** `notice`: why the user is here again (e.g. the session ended). */
export function signInPage(onSignedIn: () => void, notice?: string): HTMLElement {
  const done = (pair: Parameters<Parameters<SignInMethod['render']>[0]>[0]) => {
    saveTokens(pair);
    onSignedIn();
  };
  return h(
    'main',
    { class: 'signin' },
    h('p', { class: 'brand signin-brand', 'data-testid': 'product-name' }, h('img', { src: '/favicon.svg', alt: '', width: 28, height: 28 }), PRODUCT_NAME),
    h('h1', { class: 'page-title', tabIndex: -1 }, 'Sign in'),
    h(
      'p',
      { class: 'tagline', 'data-testid': 'tagline' },
      'Your own AI agent: it chats with you, works on files in a workspace of its own, keeps working while you are away and can answer you on Telegram. Sign in, or try it as a guest.',
    ),
    notice ? h('p', { role: 'alert', 'data-testid': 'signin-notice' }, notice) : '',
    ...methods.map((method) => method.render(done)),
  );
}
