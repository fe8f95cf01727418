/**
 * Messenger: the bot's status and its contacts with allow / hold / block / delete, through the
 * REST proxy (`/messenger/status`, `/messenger/contacts`). 404: not available on this agent;
 * 403 GUEST_LIMITED: guests must upgrade first.
 */
import { agentJson, ApiError } from '../api.js';
import type { ContactStatus, MessengerContact, MessengerStatus } from '../agent/types.js';
import { alertBox, h, pageHeading } from '../dom.js';
import { notAvailable } from './subagents.js';

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
      statusBox.replaceChildren(h('p', { class: 'unavailable', role: 'status' }, error.message));
      contactsBox.replaceChildren();
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

  async function load(): Promise<void> {
    try {
      const status = await agentJson<MessengerStatus>('/messenger/status');
      statusBox.replaceChildren(
        status.connected
          ? h('p', {}, 'Connected as ', h('strong', {}, status.bot_name), status.bot_username ? ` (@${status.bot_username})` : '', '.')
          : h('p', {}, 'The messenger bot is not connected.'),
      );
      await loadContacts();
    } catch (error) {
      if (!unavailable(error)) alert.fail(error);
    }
  }

  void load();
  return h(
    'div',
    {},
    pageHeading('Messenger'),
    alert.el,
    h('section', { 'aria-label': 'Bot status' }, statusBox),
    h('section', { 'aria-label': 'Contacts' }, h('div', { class: 'field' }, h('label', { for: 'contact-filter' }, 'Show'), filter), contactsBox),
  );
}
