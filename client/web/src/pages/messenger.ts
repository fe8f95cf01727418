/**
 * Messenger: the user's own Telegram bot — connect it with a token from @BotFather (steps shown),
 * pair the owner with a one-time code (and its t.me link), disconnect — and its contacts with
 * allow / hold / block / delete, through the REST proxy (`/messenger/bot`, `/messenger/status`,
 * `/messenger/contacts`). 404: not available on this agent; 403 GUEST_LIMITED: guests must
 * upgrade first.
 */
import { agentFetch, agentJson, ApiError, apiError } from '../api.js';
import type { ContactStatus, MessengerContact, MessengerStatus } from '../agent/types.js';
import { alertBox, h, pageHeading } from '../dom.js';
import { notAvailable } from './subagents.js';
import { go } from '../router.js';
import { accountInfo } from '../who.js';

const ACTIONS: Array<{ status: ContactStatus; label: string }> = [
  { status: 'allowed', label: 'Allow' },
  { status: 'pending', label: 'Hold' },
  { status: 'blocked', label: 'Block' },
];

export function messengerPage(): HTMLElement {
  const alert = alertBox();
  const statusBox = h('div', { 'data-testid': 'messenger-status' }, h('p', {}, 'Loading…'));
  const contactsBox = h('div', { 'data-testid': 'contacts' });
  const filter = h('select', { id: 'contact-filter' }, h('option', { value: '' }, 'All'), ...ACTIONS.map((a) => h('option', { value: a.status }, a.status)));
  filter.onchange = () => void loadContacts();

  const unavailable = (error: unknown): boolean => {
    if (error instanceof ApiError && error.status === 404) {
      statusBox.replaceChildren(notAvailable('Messenger features'));
      contactsBox.replaceChildren();
      return true;
    }
    if (error instanceof ApiError && error.code === 'GUEST_LIMITED') {
      statusBox.replaceChildren(guestPanel());
      contactsSection.hidden = true;
      return true;
    }
    return false;
  };

  async function setStatus(contact: MessengerContact, status: ContactStatus): Promise<void> {
    try {
      await agentJson(`/messenger/contacts/${encodeURIComponent(contact.telegram_id)}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ status }),
      });
      await loadContacts();
    } catch (error) {
      alert.fail(error);
    }
  }

  async function remove(contact: MessengerContact): Promise<void> {
    try {
      await agentJson(`/messenger/contacts/${encodeURIComponent(contact.telegram_id)}`, { method: 'DELETE' });
      await loadContacts();
    } catch (error) {
      alert.fail(error);
    }
  }

  async function loadContacts(): Promise<void> {
    try {
      const query = filter.value ? `?status=${encodeURIComponent(filter.value)}` : '';
      const { contacts } = await agentJson<{ contacts: MessengerContact[] }>(`/messenger/contacts${query}`);
      // A filter over nothing is noise: shown once there are contacts (or one is chosen already).
      const filterField = contactsSection.querySelector<HTMLElement>('[data-testid="contact-filter-field"]');
      if (filterField) filterField.hidden = contacts.length === 0 && !filter.value;
      if (contacts.length === 0) return void contactsBox.replaceChildren(h('p', {}, 'No contacts yet. People who write to your bot appear here.'));
      contactsBox.replaceChildren(
        h(
          'table',
          {},
          h('caption', {}, 'Contacts'),
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Actions'))),
          h(
            'tbody',
            {},
            ...contacts.map((c) => {
              const name = c.display_name || c.username || c.telegram_id;
              const buttons = ACTIONS.filter((a) => a.status !== c.status).map((a) => {
                const b = h('button', { type: 'button', class: 'small', 'aria-label': `${a.label} ${name}` }, a.label);
                b.onclick = () => setStatus(c, a.status);
                return b;
              });
              const del = h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete ${name}` }, 'Delete');
              del.onclick = () => remove(c);
              return h(
                'tr',
                {},
                h('td', {}, name, c.username ? h('span', { class: 'muted' }, ` @${c.username}`) : ''),
                h('td', {}, h('span', { class: `badge ${c.status}` }, c.status)),
                h('td', {}, h('div', { class: 'row' }, ...buttons, del)),
              );
            }),
          ),
        ),
      );
    } catch (error) {
      if (!unavailable(error)) alert.fail(error);
    }
  }

  function connectForm(): HTMLElement {
    const token = h('input', { id: 'bot-token', type: 'password', autocomplete: 'off', spellcheck: false, required: true, placeholder: '123456789:AA…' });
    const submit = h('button', { type: 'submit' }, 'Connect');
    const form = h(
      'form',
      { 'aria-label': 'Connect your bot' },
      h('p', {}, 'The messenger bot is not connected. Connect a Telegram bot of your own, and people you allow can talk to your agent through it.'),
      h(
        'ol',
        {},
        h(
          'li',
          {},
          'In Telegram, open ',
          h('a', { href: 'https://t.me/BotFather', target: '_blank', rel: 'noopener noreferrer' }, '@BotFather'),
          ' and send ',
          h('code', {}, '/newbot'),
          '.',
        ),
        h('li', {}, 'Choose a name and a username ending in ', h('code', {}, 'bot'), '.'),
        h('li', {}, 'Copy the token BotFather answers with and paste it here.'),
      ),
      h('div', { class: 'field' }, h('label', { for: 'bot-token' }, 'Bot token'), token),
      submit,
    );
    form.onsubmit = async (event) => {
      event.preventDefault();
      submit.disabled = true;
      alert.clear();
      try {
        const connected = await agentJson<MessengerStatus>('/messenger/bot', {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ token: token.value.trim() }),
        });
        token.value = '';
        // From the answer: the agent's own status may still say "connecting" for a moment.
        statusBox.replaceChildren(connectedPanel(connected));
        await loadContacts();
      } catch (error) {
        alert.fail(error);
      } finally {
        submit.disabled = false;
      }
    };
    return form;
  }

  function connectedPanel(status: MessengerStatus): HTMLElement {
    const codeBox = h('div', { 'data-testid': 'owner-code', 'aria-live': 'polite' });
    const codeButton = h('button', { type: 'button' }, 'Get an owner code');
    codeButton.onclick = async () => {
      codeButton.disabled = true;
      try {
        const { code, expires_at } = await agentJson<{ code: string; expires_at: string }>('/messenger/bot/owner-code', { method: 'POST' });
        const link = `https://t.me/${encodeURIComponent(status.bot_username)}?start=${encodeURIComponent(code)}`;
        codeBox.replaceChildren(
          h(
            'p',
            {},
            'Open ',
            h('a', { href: link, target: '_blank', rel: 'noopener noreferrer' }, link),
            ' on your phone and press Start, or send the bot ',
            h('code', {}, `/start ${code}`),
            '.',
          ),
          h('p', { class: 'muted' }, `The code works once, until ${new Date(expires_at).toLocaleTimeString()}. Whoever uses it becomes the bot's owner.`),
        );
      } catch (error) {
        alert.fail(error);
      } finally {
        codeButton.disabled = false;
      }
    };
    const disconnect = h('button', { type: 'button', class: 'danger' }, 'Disconnect');
    disconnect.onclick = async () => {
      if (!confirm(`Disconnect @${status.bot_username}? Your agent stops answering through it and the token is forgotten.`)) return;
      disconnect.disabled = true;
      try {
        const res = await agentFetch('/messenger/bot', { method: 'DELETE' });
        if (!res.ok) throw await apiError(res);
        await load();
      } catch (error) {
        alert.fail(error);
        disconnect.disabled = false;
      }
    };
    return h(
      'div',
      {},
      h('p', {}, 'Connected as ', h('strong', {}, status.bot_name), status.bot_username ? ` (@${status.bot_username})` : '', '.'),
      h('div', { class: 'row' }, codeButton, disconnect),
      codeBox,
    );
  }

  /** A guest (or an unverified account) may not connect a bot: say so and how to lift it, and ask the agent nothing. */
  function guestPanel(): HTMLElement {
    const account = h('a', { href: '/account', 'data-testid': 'messenger-upgrade' }, 'Link an e-mail address or a provider');
    account.onclick = (e) => {
      e.preventDefault();
      go('/account');
    };
    return h(
      'div',
      { class: 'unavailable', 'data-testid': 'messenger-guest' },
      h(
        'p',
        {},
        'With a Telegram bot of your own, you and the people you allow can talk to your agent from Telegram. Guest accounts cannot connect one: a bot speaking for an anonymous account invites abuse.',
      ),
      h('p', {}, account, ' on the Account page to keep this account and connect a bot (your chats and files stay).'),
    );
  }

  async function load(): Promise<void> {
    try {
      if ((await accountInfo()).guest) {
        statusBox.replaceChildren(guestPanel());
        contactsSection.hidden = true;
        return;
      }
      const status = await agentJson<MessengerStatus>('/messenger/status');
      statusBox.replaceChildren(status.connected ? connectedPanel(status) : connectForm());
      await loadContacts();
    } catch (error) {
      if (!unavailable(error)) alert.fail(error);
    }
  }

  const contactsSection = h(
    'section',
    { 'aria-label': 'Contacts' },
    h('div', { class: 'field', hidden: true, 'data-testid': 'contact-filter-field' }, h('label', { for: 'contact-filter' }, 'Show'), filter),
    contactsBox,
  );
  void load();
  return h('div', {}, pageHeading('Messenger'), alert.el, h('section', { 'aria-label': 'Bot status' }, statusBox), contactsSection);
}
