/**
 * /auth/callback: where the account service sends the browser after provider A or B.
 * `?code=` → exchanged once for the token pair → home. `?error=` (or a failed exchange) → a
 * plain message and the way back. The code is removed from the address bar at once.
 */
import { createTRPCClient, httpLink } from '@trpc/client';
import superjson from 'superjson';
import type { AccountRouter } from '@contracts/account/router.js';
import type { ErrorCode } from '@contracts/errors.js';
import { errorCode } from '../../../sdk/account.js';
import { h } from '../dom.js';
import { navigate, route } from '../router.js';
import { saveTokens } from '../session.js';

const MESSAGES: Record<string, string> = {
  access_denied: 'You declined the sign-in at the provider. Nothing was changed.',
  invalid_state: 'This sign-in attempt has expired or was already used. Please start again.',
  provider_error: 'The provider could not complete the sign-in. Please try again in a moment.',
  identity_in_use: 'That provider account already belongs to another user of ours. Sign out, then sign in with it.',
  not_configured: 'This sign-in method is not set up on this server.',
  rate_limited: 'Too many sign-in attempts. Please wait a minute and try again.',
};
/** A failed exchange, by its code (contracts/errors.ts). */
const EXCHANGE_MESSAGES: Partial<Record<ErrorCode, string>> = {
  INVALID_AUTH_CODE: 'This sign-in has expired, was already used, or was started in another browser. Please start again.',
};
const FALLBACK = 'The sign-in did not work. Please try again.';

/**
 * The exchange goes without the stored token: a guest who linked a provider was already
 * upgraded at the callback (the flow was started with the guest's token), and a guest token
 * that has expired meanwhile must not spoil a finished sign-in.
 */
const anonymous = createTRPCClient<AccountRouter>({ links: [httpLink({ url: '/trpc', transformer: superjson })] });

export function callbackPage(): HTMLElement {
  const params = new URLSearchParams(location.search);
  const code = params.get('code');
  const error = params.get('error');
  history.replaceState(null, '', '/auth/callback');

  const status = h('p', { 'data-testid': 'callback-status' }, 'Signing you in…');
  const back = h('button', { type: 'button', hidden: true }, 'Back to sign-in');
  back.onclick = () => navigate('/');
  const fail = (message: string) => {
    status.textContent = message;
    status.setAttribute('role', 'alert');
    status.dataset.testid = 'callback-error';
    back.hidden = false;
  };

  if (error || !code) {
    fail((error && MESSAGES[error]) ?? FALLBACK);
  } else {
    anonymous.auth.oauth.exchange.mutate({ code }).then(
      (pair) => {
        saveTokens(pair);
        navigate('/');
      },
      (e: unknown) => {
        const failed = errorCode(e);
        fail((failed && EXCHANGE_MESSAGES[failed]) ?? FALLBACK);
      },
    );
  }
  return h('div', {}, h('h1', { class: 'page-title', tabIndex: -1 }, 'Signing in'), status, back);
}

route('/auth/callback', callbackPage);
