/**
 * /auth/verify?token=…: the page behind the e-mail link. It POSTs the token (a mail scanner
 * that only GETs the link consumes nothing), then opens the app. The token leaves the address
 * bar at once.
 */
import type { ErrorCode } from '@contracts/errors.js';
import { account, errorCode } from '../api.js';
import { h } from '../dom.js';
import { navigate, route } from '../router.js';

const MESSAGES: Partial<Record<ErrorCode, string>> = {
  INVALID_LINK: 'This sign-in link has expired or was already used. Request a new one.',
  IDENTITY_IN_USE: 'That address already belongs to another account. Sign out, then sign in with it.',
  RATE_LIMITED: 'Too many attempts. Please wait a minute and try again.',
};

export function verifyPage(): HTMLElement {
  const token = new URLSearchParams(location.search).get('token');
  history.replaceState(null, '', '/auth/verify');
  const status = h('p', { 'data-testid': 'verify-status', role: 'status' }, 'Signing you in…');
  const back = h('button', { type: 'button', hidden: true }, 'Back to sign-in');
  back.onclick = () => navigate('/');
  const fail = (message: string) => {
    status.textContent = message;
    status.setAttribute('role', 'alert');
    back.hidden = false;
  };
  if (!token) fail('This link is incomplete. Request a new sign-in message.');
  else
    account.verifyEmail({ token }).then(
      () => navigate('/'),
      (error: unknown) => {
        const code = errorCode(error);
        fail((code && MESSAGES[code]) ?? 'The sign-in did not work. Please request a new link.');
      },
    );
  return h('main', {}, h('h1', { class: 'page-title', tabIndex: -1 }, 'Signing in'), status, back);
}

route('/auth/verify', verifyPage);
