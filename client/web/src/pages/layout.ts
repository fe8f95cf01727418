/**
 * The signed-in frame around every page: the navigation, who is signed in, sign out, a guest's
 * way to keep the account (and lift the guest limits), and the inbox of proactive messages.
 */
import { account } from '../api.js';
import { dismissPending, onPending, startPendingPoll, stopPendingPoll, storedPending } from '../agent/pending.js';
import { h } from '../dom.js';
import { go, navigate, onLeave } from '../router.js';
import { clearTokens, forgetAccountData, forgetTabData } from '../session.js';
import { oauthButtons } from '../signin/oauth.js';
import { accountInfo, accountSummary, budgetSummary, forgetMe, keepTimezone, me, onAccountRefresh } from '../who.js';

const PAGES: Array<{ path: string; label: string }> = [
  { path: '/', label: 'Chat' },
  { path: '/files', label: 'Files' },
  { path: '/subagents', label: 'Subagents' },
  { path: '/tasks', label: 'Tasks' },
  { path: '/memory', label: 'Memory' },
  { path: '/messenger', label: 'Messenger' },
  { path: '/connectors', label: 'Connectors' },
  { path: '/account', label: 'Account' },
];

export function signedOut(): void {
  clearTokens();
  forgetAccountData();
  drawAfresh();
}

/**
 * Another tab signed out, or in to another account: this tab drops its own view of the account it
 * showed and draws what the shared tokens say now. The browser-wide part (tokens, device id) is
 * that tab's to clear, and may already hold its next sign-in.
 */
export function leftInAnotherTab(): void {
  forgetTabData();
  drawAfresh();
}

/** Nothing of the account shown so far stays in memory: no poll, no cached reads; the start page. */
function drawAfresh(): void {
  stopPendingPoll();
  forgetMe();
  navigate('/');
}

let endingEverywhere = false;
/** "Sign out everywhere" is under way: the calls it cuts off are its doing, not a session lost (main.ts). */
export const signingOutEverywhere = (): boolean => endingEverywhere;

export async function signOut(everywhere: boolean): Promise<void> {
  if (everywhere) {
    // The tokens stay until the service has ended every session: the call itself needs them.
    endingEverywhere = true;
    await account.logoutAll().catch(() => undefined);
    endingEverywhere = false;
    signedOut();
    return;
  }
  // The sign-in page at once: logout takes the tokens as it starts and ends the session behind it.
  const ended = account.logout().catch(() => undefined);
  signedOut();
  await ended;
}

function inbox(): HTMLElement {
  const list = h('ul', { class: 'inbox-list' });
  const box = h(
    'section',
    { class: 'inbox', 'aria-label': 'Messages from your agent', hidden: true, 'aria-live': 'polite' },
    h('h2', {}, 'From your agent'),
    list,
  );
  const render = () => {
    // A subagent's result is a card in the chat that started it (agent/subagent-card.ts), not here.
    const messages = storedPending().filter((m) => m.source !== 'subagent');
    box.hidden = messages.length === 0;
    list.replaceChildren(
      ...messages.map((m) => {
        const dismiss = h('button', { type: 'button', class: 'small', 'aria-label': 'Dismiss message' }, 'Dismiss');
        dismiss.onclick = () => dismissPending(m);
        return h('li', { 'data-testid': 'pending-message' }, h('span', { class: 'badge' }, m.source), ' ', m.content, ' ', dismiss);
      }),
    );
  };
  onLeave(onPending(render));
  render();
  return box;
}

/** Past the navigation to the page; focus moves without a new history entry (the router would re-render). */
function skipLink(): HTMLElement {
  const link = h('a', { class: 'skip-link', href: '#content' }, 'Skip to content');
  link.onclick = (e) => {
    e.preventDefault();
    document.getElementById('content')?.focus();
  };
  return link;
}

export function layout(page: () => HTMLElement): HTMLElement {
  startPendingPoll();
  const who = h('p', { 'data-testid': 'signed-in', class: 'who' }, 'Signed in.');
  // What is left of today's model budget, next to who is signed in (nothing when it has no ceiling).
  const budget = h('p', { 'data-testid': 'model-budget', class: 'who', hidden: true });
  const showAccount = () => {
    void accountInfo().then(
      ({ usage }) => {
        const summary = budgetSummary(usage.model_tokens);
        budget.hidden = !summary;
        if (!summary) return;
        budget.textContent = summary.text;
        budget.title = summary.detail;
      },
      () => undefined,
    );
    void accountSummary().then((summary) => {
      who.textContent = summary;
      // The header may cut it short: the whole line on hover.
      who.title = summary;
    });
  };
  onAccountRefresh(showAccount, () => who.isConnected);
  const guestBanner = h('section', { class: 'guest-banner', hidden: true, 'aria-label': 'Guest account' });
  me().then(
    (user) => {
      who.dataset.userId = user.user_id;
      showAccount();
      void keepTimezone();
      if (user.guest) {
        guestBanner.hidden = false;
        // The sentence ends where it is complete: the ways to keep the account follow it as
        // buttons (the providers this deployment offers) and a link to all the others.
        const more = h('a', { href: '/account', 'data-testid': 'guest-upgrade' }, 'Other sign-in methods');
        more.onclick = (e) => {
          e.preventDefault();
          go('/account');
        };
        const buttons = oauthButtons((p) => p.label.replace('Sign in with', 'Link'));
        buttons.append(more);
        guestBanner.replaceChildren(
          h('p', {}, 'Guest account: 50 messages a day, uploads up to 5 MB, no messenger. Link a sign-in method to keep this account and lift the limits.'),
          buttons,
        );
      }
    },
    () => undefined,
  );
  const signOutButton = h('button', { type: 'button', 'data-testid': 'sign-out' }, 'Sign out');
  signOutButton.onclick = () => signOut(false);
  const nav = h(
    'nav',
    { 'aria-label': 'Main' },
    h(
      'ul',
      {},
      ...PAGES.map((p) => {
        const current = location.pathname === p.path || (p.path === '/' && location.pathname === '/chat');
        const link = h('a', { href: p.path, 'aria-current': current ? 'page' : undefined }, p.label);
        link.onclick = (e) => {
          e.preventDefault();
          go(p.path);
        };
        return h('li', {}, link);
      }),
    ),
  );
  return h(
    'div',
    { class: 'shell' },
    skipLink(),
    h(
      'header',
      { class: 'top' },
      h('div', { class: 'row spread' }, h('span', { class: 'brand' }, 'Your agent'), h('div', { class: 'row' }, who, budget, signOutButton)),
      nav,
    ),
    guestBanner,
    inbox(),
    h('main', { id: 'content', tabIndex: -1 }, page()),
    // A full page load, outside the client's router: the account service serves the reference.
    h('footer', {}, h('a', { href: '/api/v1/docs' }, 'API reference')),
  );
}
