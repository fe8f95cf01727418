/**
 * /auth/verify?token=…: the page behind the e-mail link. It POSTs the token (a mail scanner
 * that only GETs the link consumes nothing), then opens the app. The token leaves the address
 * bar at once.
 *
 * Whose account (docs/security.md, "Whose account a sign-in joins"): the token goes with the
 * signed-in account's token, and the service joins the address to that account only when that
 * account asked for the mail. Any other link signs in to the address's own account, and the
 * answer is held here, not stored, until the person says yes to "Sign in as a•••@example.com?":
 * a link someone else sent (to take a guest's account, or to slip this browser into theirs)
 * moves nothing without that click. No question when the answer is the signed-in account itself
 * (upgraded or linked in place), or when nobody is signed in and this browser asked for that
 * address (signin/asked.ts). Declining ends the held session.
 */
import { createTRPCClient, httpLink } from '@trpc/client';
import superjson from 'superjson';
import type { AccountRouter } from '@contracts/account/router.js';
import type { ErrorCode } from '@contracts/errors.js';
import { isGuestToken, type TokenPair } from '../../../sdk/account.js';
import { account, errorCode } from '../api.js';
import { h } from '../dom.js';
import { navigate, route } from '../router.js';
import { forgetAccountData, loadTokens } from '../session.js';
import { askedHere } from '../signin/asked.js';
import { forgetMe } from '../who.js';

const MESSAGES: Partial<Record<ErrorCode, string>> = {
  INVALID_LINK: 'This sign-in link has expired or was already used. Request a new one.',
  IDENTITY_IN_USE: 'That address already belongs to another account. Sign out, then sign in with it.',
  RATE_LIMITED: 'Too many attempts. Please wait a minute and try again.',
};

/** `ann@example.com` → `a•••@example.com`: enough to recognise one's own address, not to learn someone else's. */
export const maskedAddress = (address: string) => address.replace(/^([^@])[^@]*@/, '$1•••@');

/** The `sub` of an access token (read, not verified: only to compare whom two answers are for). */
const subjectOf = (accessToken: string): string | undefined => {
  try {
    const payload = accessToken.split('.')[1] ?? '';
    return (JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as { sub?: string }).sub;
  } catch {
    return undefined;
  }
};

/** The address the held session signed in with: its e-mail identity used last (this very sign-in). */
async function addressOf(pair: TokenPair): Promise<string> {
  const client = createTRPCClient<AccountRouter>({
    links: [httpLink({ url: '/trpc', transformer: superjson, headers: () => ({ authorization: `Bearer ${pair.access_token}` }) })],
  });
  const { identities } = await client.account.get.query();
  const emails = identities.filter((identity) => identity.method === 'email').sort((a, b) => (b.last_used_at ?? '').localeCompare(a.last_used_at ?? ''));
  return emails[0]?.label ?? '';
}

export function verifyPage(): HTMLElement {
  const token = new URLSearchParams(location.search).get('token');
  history.replaceState(null, '', '/auth/verify');
  const status = h('p', { 'data-testid': 'verify-status', role: 'status' }, 'Signing you in…');
  const back = h('button', { type: 'button', hidden: true }, 'Back to sign-in');
  back.onclick = () => navigate('/');
  const question = h('div', { class: 'row', hidden: true });
  const fail = (message: string) => {
    status.textContent = message;
    status.setAttribute('role', 'alert');
    back.hidden = false;
  };

  const use = async (pair: TokenPair, signOutCurrent: boolean) => {
    if (signOutCurrent) {
      // Switching: the current session ends and this browser forgets it, as a sign-out does.
      await account.logout().catch(() => undefined);
      forgetMe();
      forgetAccountData();
    }
    await account.useTokens(pair);
    navigate('/');
  };

  const ask = (pair: TokenPair, address: string, current: 'guest' | 'account' | null) => {
    status.textContent = `Sign in as ${maskedAddress(address)}?`;
    const consequence =
      current === 'guest'
        ? ' You are signed in as a guest; this will sign you out of it.'
        : current === 'account'
          ? ' You are signed in with another account; this will sign you out of it.'
          : ' Only continue if you asked for this sign-in link.';
    status.append(consequence);
    const yes = h('button', { type: 'button', 'data-testid': 'verify-switch' }, `Sign in as ${maskedAddress(address)}`);
    const no = h('button', { type: 'button', 'data-testid': 'verify-stay' }, current ? 'Stay signed in as I am' : 'Cancel');
    yes.onclick = () => {
      yes.disabled = no.disabled = true;
      void use(pair, current !== null);
    };
    no.onclick = () => {
      yes.disabled = no.disabled = true;
      // The held session is ended, so nothing of it stays usable anywhere.
      void account
        .discardTokens(pair)
        .catch(() => undefined)
        .then(() => navigate('/'));
    };
    question.replaceChildren(yes, no);
    question.hidden = false;
    yes.focus();
  };

  const settle = async (pair: TokenPair) => {
    const current = loadTokens();
    if (current && subjectOf(current.access_token) === subjectOf(pair.access_token)) return use(pair, false);
    const address = await addressOf(pair);
    if (!current && askedHere(address)) return use(pair, false);
    ask(pair, address, current ? (isGuestToken(current.access_token) ? 'guest' : 'account') : null);
  };

  if (!token) fail('This link is incomplete. Request a new sign-in message.');
  else
    account
      .verifyEmailHeld({ token })
      .then(settle)
      .catch((error: unknown) => {
        const code = errorCode(error);
        fail((code && MESSAGES[code]) ?? 'The sign-in did not work. Please request a new link.');
      });
  return h('main', {}, h('h1', { class: 'page-title', tabIndex: -1 }, 'Signing in'), status, question, back);
}

route('/auth/verify', verifyPage);
