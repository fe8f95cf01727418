/**
 * Connectors (`connectors.*` over tRPC, docs/connectors.md): the user's own MCP servers, whose
 * tools the agent is offered as `<name>__<tool>`. Add one by URL and name; a server that wants a
 * sign-in sends the browser to its provider, and the account service's callback sends it back
 * here with `?connector=<id>&status=connected` or `&error=<reason>` (said once, checked against the
 * connector as listed, then dropped from the address bar so a reload does not say it again). Each connector is a card (connector-card.ts).
 * A guest (CONNECTORS_NOT_FOR_GUESTS) or a service without connectors (CONNECTORS_DISABLED) is
 * told why and, for the guest, how to become a full account: no form that could only fail.
 */
import { api, errorCode } from '../api.js';
import { alertBox, h, pageHeading } from '../dom.js';
import { go } from '../router.js';
import { connectorCard, type Connector } from './connector-card.js';

/**
 * The sign-in's outcome, from the address the callback sent the browser to. Its text is never
 * shown: anyone can make a link to /connectors with any `?error=`. What the page says comes from
 * the connector as the service lists it (its status, its stored error), or is one of ours.
 */
function signInOutcome(returned: URLSearchParams, connectors: Connector[]): { ok: boolean; text: string } | null {
  if (!returned.has('error') && !returned.has('status')) return null;
  const connector = connectors.find((c) => c.id === returned.get('connector'));
  if (!connector)
    return {
      ok: false,
      text: 'The sign-in did not work: its link was unknown, used or expired, or it was started in another browser. Start again with the connector’s Sign in button.',
    };
  // Connected whatever the address says (a failed sign-in drops the old tokens first, so this is not one).
  if (connector.status === 'connected') return returned.get('status') === 'connected' ? { ok: true, text: `Signed in: ${connector.name} is connected.` } : null;
  const reason = returned.get('error')?.startsWith('access_denied')
    ? 'You declined at the provider. Nothing was changed: sign in again when you want to.'
    : (connector.error ?? 'the server still asks for a sign-in.');
  return { ok: false, text: `Signing in to ${connector.name} did not work: ${reason}` };
}

export function connectorsPage(): HTMLElement {
  const alert = alertBox();
  const notice = h('p', { role: 'status', 'data-testid': 'connector-notice' });
  const listBox = h('div', { 'data-testid': 'connectors' });
  const body = h('div', {}, h('p', {}, 'Loading…'));
  let built = false;
  /** Sign-in links from `create`, each used at most once. */
  const links = new Map<string, string>();
  const returned = new URLSearchParams(location.search);
  if (location.search) history.replaceState(null, '', '/connectors');

  const ctx = {
    alert,
    reload: (focus: string | null) => load(focus),
    link: (id: string) => {
      const url = links.get(id);
      links.delete(id);
      return url;
    },
  };

  function refused(code: string): HTMLElement {
    if (code === 'CONNECTORS_NOT_FOR_GUESTS') {
      const account = h('a', { href: '/account', 'data-testid': 'connectors-upgrade' }, 'Link an e-mail address, a provider or a wallet');
      account.onclick = (e) => {
        e.preventDefault();
        go('/account');
      };
      return h(
        'div',
        { class: 'unavailable', 'data-testid': 'connectors-refused', 'data-code': code },
        h(
          'p',
          {},
          'Connectors give your agent the tools of other services you use (your notes, calendar, issue tracker) through their MCP servers. They are for full accounts: a guest account has no sign-in of its own to keep those services’ sign-ins under.',
        ),
        h('p', {}, account, ' on the Account page to make this a full account (your chats and files stay), then come back here.'),
      );
    }
    return h(
      'div',
      { class: 'unavailable', 'data-testid': 'connectors-refused', 'data-code': code },
      h('p', {}, 'This service does not offer connectors: its operator has switched them off. Your agent keeps its own tools.'),
    );
  }

  function addForm(): HTMLElement {
    const name = h('input', {
      id: 'connector-name',
      name: 'name',
      required: true,
      maxLength: 24,
      pattern: '[A-Za-z0-9][A-Za-z0-9\\-]*',
      autocomplete: 'off',
      'aria-describedby': 'connector-name-hint',
    });
    const url = h('input', {
      id: 'connector-url',
      name: 'url',
      type: 'url',
      required: true,
      maxLength: 2048,
      placeholder: 'https://mcp.example.com/mcp',
      autocomplete: 'off',
    });
    const submit = h('button', { type: 'submit' }, 'Add connector');
    const form = h(
      'form',
      { 'aria-labelledby': 'connector-add-title' },
      h('h2', { id: 'connector-add-title' }, 'Add a connector'),
      h('label', { for: 'connector-url' }, 'Server URL'),
      url,
      h('label', { for: 'connector-name' }, 'Name'),
      name,
      h('p', { id: 'connector-name-hint', class: 'muted' }, 'Letters, digits and hyphens, up to 24. Your agent sees the tools as name__tool.'),
      h('div', { class: 'row' }, submit),
    );
    form.onsubmit = async (e) => {
      e.preventDefault();
      submit.disabled = true;
      alert.clear();
      notice.textContent = '';
      try {
        const created = await api.connectors.create.mutate({ name: name.value.trim(), url: url.value.trim() });
        if (created.authorize_url) links.set(created.id, created.authorize_url);
        notice.textContent =
          created.status === 'connected' ? `Added ${created.name}: connected.` : `Added ${created.name}. Sign in to it so your agent may use it.`;
        form.reset();
        await load(created.id);
      } catch (error) {
        alert.fail(error, submit);
        name.focus();
      } finally {
        if (!alert.el.dataset.countdown) submit.disabled = false;
      }
    };
    return form;
  }

  /** What the callback said, once the list is there to check it against (once: a reload does not say it again). */
  function sayReturn(connectors: Connector[]): void {
    const outcome = signInOutcome(returned, connectors);
    returned.delete('error');
    returned.delete('status');
    if (outcome?.ok) notice.textContent = outcome.text;
    else if (outcome) alert.show(outcome.text);
  }

  /** `focus`: the card of that id gets the focus (null: the list's heading); none at the first load. */
  async function load(focus?: string | null): Promise<void> {
    try {
      const { connectors } = await api.connectors.list.query();
      if (!built) {
        built = true;
        const heading = h('h2', { id: 'connectors-list-title', tabIndex: -1 }, 'Your connectors');
        body.replaceChildren(addForm(), h('section', { 'aria-labelledby': 'connectors-list-title' }, heading, listBox));
      }
      listBox.replaceChildren(
        connectors.length === 0
          ? h('p', {}, 'No connectors yet. Add an MCP server by its URL above.')
          : h('ul', { class: 'runs connectors' }, ...connectors.map((c) => connectorCard(c, ctx))),
      );
      sayReturn(connectors);
      if (focus === undefined) return;
      const card = focus === null ? null : listBox.querySelector<HTMLElement>(`[data-connector-id="${focus}"] h3`);
      (card ?? body.querySelector<HTMLElement>('#connectors-list-title'))?.focus();
    } catch (error) {
      const code = errorCode(error);
      if (code === 'CONNECTORS_NOT_FOR_GUESTS' || code === 'CONNECTORS_DISABLED') return void body.replaceChildren(refused(code));
      listBox.replaceChildren();
      alert.fail(error);
    }
  }

  void load();
  return h(
    'div',
    { class: 'connectors-page' },
    pageHeading('Connectors'),
    h(
      'p',
      { class: 'muted' },
      'Give your agent the tools of other services through their MCP servers. Their sign-ins stay with this service: your agent never holds them.',
    ),
    notice,
    alert.el,
    body,
  );
}
