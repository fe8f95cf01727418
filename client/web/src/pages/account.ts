/**
 * The Account page: sign-in methods (link e-mail, a provider, a wallet or a passkey; rename a
 * passkey; remove a method), today's model tokens by source, two-step verification (mfa/enrol.ts), sessions (this device, sign out another), recent security activity,
 * and deleting the account after a confirmation. Everything goes through `api.account.*`.
 */
import { api, errorCode } from '../api.js';
import { alertBox, copyButton, h, pageHeading } from '../dom.js';
import { navigate } from '../router.js';
import { loadTokens, saveTokens, type TokenPair } from '../session.js';
import { emailForm } from '../signin/email.js';
import { keepIf } from '../signin/available.js';
import { oauthButtons } from '../signin/oauth.js';
import { describeDevice } from '../device.js';
import { addPasskeyForm } from '../signin/passkey.js';
import { secondFactorSection } from '../mfa/enrol.js';
import { walletMethod } from '../signin/wallet.js';
import { bySourceText, forgetMe, SOURCE_NAMES } from '../who.js';
import { signedOut, signOut } from './layout.js';

type AccountView = Awaited<ReturnType<typeof api.account.get.query>>;
type Identity = AccountView['identities'][number];

const METHOD_NAMES: Record<Identity['method'], string> = { email: 'E-mail', idpa: 'Provider A', idpb: 'Provider B', wallet: 'Wallet', passkey: 'Passkey' };

const EVENT_NAMES: Record<string, string> = {
  sign_in: 'Signed in',
  refresh_token_reused: 'A stolen sign-in was detected; that session was ended',
  identity_linked: 'Sign-in method added',
  identity_unlinked: 'Sign-in method removed',
  session_revoked: 'Session signed out',
  logout_all: 'Signed out everywhere',
  passkey_added: 'Passkey added',
  mfa_enabled: 'Two-step verification turned on',
  mfa_disabled: 'Two-step verification turned off',
  mfa_verified: 'Second step passed',
};

/** Server times are UTC without a zone suffix. */
const when = (utc: string | null) => (utc ? new Date(`${utc}Z`).toLocaleString() : '—');

/**
 * A link (or a guest upgrade) answers a new session of the same account: keep it, and end the
 * session it replaces (`previous`, any refresh token of it: logout ends the whole session) so the
 * sessions list does not grow with every link. Some calls have already stored the new pair.
 */
const linked =
  (previous: string | undefined) =>
  (pair: TokenPair): void => {
    saveTokens(pair);
    forgetMe();
    if (previous && previous !== pair.refresh_token)
      void api.tokens.logout.mutate({ refresh_token: previous }, { context: { auth: 'none' } }).catch(() => undefined);
    navigate('/account');
  };

function methodsSection(view: AccountView, alert: ReturnType<typeof alertBox>, reload: () => void): HTMLElement {
  const done = linked(loadTokens()?.refresh_token);
  const rows = view.identities.map((identity) => {
    const remove = h('button', { type: 'button', class: 'small', 'aria-label': `Remove ${METHOD_NAMES[identity.method]} ${identity.label}` }, 'Remove');
    remove.onclick = async () => {
      alert.clear();
      try {
        await api.account.unlinkIdentity.mutate({ id: identity.id });
        reload();
      } catch (error) {
        if (errorCode(error) === 'LAST_IDENTITY') alert.show('This is the only way to sign in to this account. Add another method before removing it.');
        else alert.fail(error);
      }
    };
    const actions: HTMLElement[] = [remove];
    if (identity.method === 'passkey') {
      const rename = h('button', { type: 'button', class: 'small', 'aria-label': `Rename passkey ${identity.label}` }, 'Rename');
      rename.onclick = async () => {
        const name = prompt('New name for this passkey', identity.label)?.trim();
        if (!name) return;
        try {
          await api.account.renamePasskey.mutate({ id: identity.id, name });
          reload();
        } catch (error) {
          alert.fail(error);
        }
      };
      actions.unshift(rename);
    }
    return h(
      'tr',
      { 'data-testid': 'identity' },
      h('td', {}, METHOD_NAMES[identity.method]),
      h('td', {}, identity.label),
      h('td', {}, when(identity.created_at)),
      h('td', {}, when(identity.last_used_at)),
      h('td', { class: 'row' }, ...actions),
    );
  });
  return h(
    'section',
    { 'aria-labelledby': 'methods-title' },
    h('h2', { id: 'methods-title' }, 'Sign-in methods'),
    rows.length
      ? h(
          'table',
          {},
          h('thead', {}, h('tr', {}, ...['Method', 'Name', 'Added', 'Last used', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
          h('tbody', {}, ...rows),
        )
      : h(
          'p',
          {},
          view.guest
            ? 'You are using a guest account. Add a sign-in method to keep it: your agent and its files stay; an e-mail address or a provider also lifts the guest limits.'
            : 'No sign-in methods.',
        ),
    h('h3', {}, 'Add a method'),
    // Each with its heading, and only when this deployment offers it: no heading over nothing.
    keepIf(h('div', {}, h('h4', {}, 'E-mail'), emailForm(done, 'link-email', true)), (m) => m.has('email')),
    keepIf(
      h(
        'div',
        {},
        h('h4', {}, 'Provider'),
        oauthButtons((p) => p.label.replace('Sign in with', 'Link')),
      ),
      (m) => m.has('idpa') || m.has('idpb'),
    ),
    keepIf(walletMethod.render(done), (m) => m.has('wallet')),
    keepIf(h('div', {}, h('h4', {}, 'Passkey'), addPasskeyForm(done)), (m) => m.has('passkey')),
  );
}

async function sessionsSection(alert: ReturnType<typeof alertBox>, reload: () => void): Promise<HTMLElement> {
  const { sessions } = await api.account.sessions.query();
  const items = sessions.map((s) => {
    // "Chrome on Linux"; the user-agent string as sent stays in the tooltip. A guest's session
    // learns its user agent with its first use (tokens/usage.ts): this one is this browser.
    const userAgent = s.user_agent ?? (s.current ? navigator.userAgent : null);
    const device = describeDevice(userAgent);
    const label = h(
      'span',
      {},
      h('span', { class: 'device', 'data-testid': 'session-device', title: userAgent ?? '' }, device),
      ` · ${s.ip ?? 'unknown address'} · signed in ${when(s.created_at)} · last used ${when(s.last_used_at)}`,
    );
    if (s.current) return h('li', { 'data-testid': 'session', 'data-current': 'true' }, h('strong', {}, 'This device'), ' ', label);
    const revoke = h('button', { type: 'button', class: 'small', 'data-testid': 'revoke-session', 'aria-label': `Sign out ${device}` }, 'Sign out');
    revoke.onclick = async () => {
      alert.clear();
      try {
        await api.account.revokeSession.mutate({ id: s.id });
        reload();
      } catch (error) {
        alert.fail(error);
      }
    };
    return h('li', { 'data-testid': 'session' }, label, ' ', revoke);
  });
  const out = h('button', { type: 'button' }, 'Sign out');
  out.onclick = () => signOut(false);
  const everywhere = h('button', { type: 'button', class: 'danger', 'data-testid': 'sign-out-everywhere' }, 'Sign out everywhere');
  everywhere.onclick = () => signOut(true);
  return h(
    'section',
    { 'aria-labelledby': 'sessions-title' },
    h('h2', { id: 'sessions-title' }, 'Sessions'),
    h('ul', { class: 'sessions' }, ...items),
    h('p', {}, '“Sign out everywhere” ends every session of this account, on every device.'),
    h('div', { class: 'row' }, out, everywhere),
  );
}

async function activitySection(): Promise<HTMLElement> {
  const { events } = await api.account.activity.query();
  return h(
    'section',
    { 'aria-labelledby': 'activity-title' },
    h('h2', { id: 'activity-title' }, 'Recent activity'),
    events.length
      ? h(
          'ul',
          { class: 'activity' },
          ...events.slice(0, 50).map((e) => {
            const about = e.detail.label ?? e.detail.name ?? e.detail.method ?? '';
            return h(
              'li',
              { 'data-testid': 'activity' },
              `${when(e.at)} — ${EVENT_NAMES[e.type] ?? e.type}${about ? ` (${about})` : ''}${e.ip ? ` from ${e.ip}` : ''}`,
            );
          }),
        )
      : h('p', {}, 'Nothing yet.'),
  );
}

/**
 * Today's model tokens and what spent them: the user's chats, and what the agent did on its own
 * (heartbeats, scheduled tasks, subagents), so that proactive turns are never a hidden cost.
 */
function usageSection(tokens: AccountView['usage']['model_tokens']): HTMLElement {
  const exact = new Intl.NumberFormat('en');
  const total =
    tokens.limit === null ? `${exact.format(tokens.used)} model tokens` : `${exact.format(tokens.used)} of ${exact.format(tokens.limit)} model tokens`;
  return h(
    'section',
    { 'aria-labelledby': 'usage-title' },
    h('h2', { id: 'usage-title' }, 'Usage today'),
    h('p', { 'data-testid': 'usage-total' }, `${total} used today.`),
    h(
      'ul',
      { class: 'usage-sources', 'aria-label': `By source: ${bySourceText(tokens.by_source)}` },
      ...(Object.keys(SOURCE_NAMES) as Array<keyof typeof SOURCE_NAMES>).map((source) =>
        h('li', { 'data-testid': `usage-${source}` }, `${SOURCE_NAMES[source]}: ${exact.format(tokens.by_source[source])}`),
      ),
    ),
  );
}

function deleteSection(): HTMLElement {
  const alert = alertBox();
  const confirmInput = h('input', { type: 'text', id: 'delete-confirm', autocomplete: 'off' });
  const confirmButton = h('button', { type: 'submit', class: 'danger', 'data-testid': 'delete-account-confirm' }, 'Delete my account for good');
  const form = h(
    'form',
    { hidden: true },
    h(
      'label',
      { for: 'delete-confirm' },
      'Type DELETE to confirm. Your sign-in methods, sessions, activity, agent and all its files are removed; this cannot be undone.',
    ),
    confirmInput,
    h('div', { class: 'row' }, confirmButton),
  );
  const start = h('button', { type: 'button', class: 'danger', 'data-testid': 'delete-account' }, 'Delete account…');
  start.onclick = () => {
    form.hidden = false;
    confirmInput.focus();
  };
  form.onsubmit = async (e) => {
    e.preventDefault();
    alert.clear();
    if (confirmInput.value.trim() !== 'DELETE') return alert.show('Type DELETE to confirm.');
    confirmButton.disabled = true;
    try {
      await api.account.delete.mutate();
      signedOut();
    } catch (error) {
      confirmButton.disabled = false;
      if (errorCode(error) === 'REAUTH_REQUIRED') alert.show('For your safety, sign out and sign in again, then delete the account within 10 minutes.');
      else alert.fail(error);
    }
  };
  return h('section', { 'aria-labelledby': 'delete-title' }, h('h2', { id: 'delete-title' }, 'Delete account'), start, form, alert.el);
}

/** The account's id is for support and the API, not for reading: folded away, with a copy button. */
function accountIdDetails(userId: string): HTMLElement {
  const copy = copyButton(userId, 'copy-account-id', 'Select the id to copy it.');
  return h(
    'details',
    { class: 'account-id' },
    h('summary', {}, 'Account ID (for support)'),
    h('div', { class: 'row' }, h('code', { 'data-testid': 'account-id' }, userId), copy.button, copy.status),
  );
}

export function accountPage(): HTMLElement {
  const alert = alertBox();
  const body = h('div', {}, h('p', {}, 'Loading…'));
  const load = async () => {
    try {
      const view = await api.account.get.query();
      const summary = h(
        'p',
        { 'data-testid': 'account-summary' },
        `${view.tier === 'guest' ? 'Guest account' : view.tier === 'unverified' ? 'Unverified account (guest limits until an e-mail address or a provider is linked)' : 'Account'}, created ${when(view.created_at)}.`,
      );
      body.replaceChildren(
        summary,
        accountIdDetails(view.user_id),
        usageSection(view.usage.model_tokens),
        methodsSection(view, alert, reload),
        await secondFactorSection(view.tier === 'full', reload),
        await sessionsSection(alert, reload),
        await activitySection(),
        deleteSection(),
      );
    } catch (error) {
      alert.fail(error);
    }
  };
  const reload = () => void load();
  void load();
  return h('div', {}, pageHeading('Account'), alert.el, body);
}
