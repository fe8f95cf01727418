/**
 * /admin: the operators' page (docs/admin.md), for admins only — the service refuses everyone
 * else (403), and the page then says so. Users (search, filter, a user's page with ban/unban and
 * delete behind a confirmation), running agents, API keys (the new key shown once), webhooks (the
 * new secret shown once, each endpoint's delivery log with resend) and the audit log.
 */
import { api } from '../api.js';
import { alertBox, h, pageHeading } from '../dom.js';
import { bySourceText } from '../who.js';

type Users = Awaited<ReturnType<typeof api.admin.users.list.query>>;

function section(title: string, ...children: Array<Node | string>): HTMLElement {
  const heading = h('h2', {}, title);
  heading.id = `admin-${title.toLowerCase().replace(/\W+/g, '-')}`;
  return h('section', { 'aria-labelledby': heading.id }, heading, ...children);
}

function userPage(id: string, back: () => void): HTMLElement {
  const box = h('div', { 'data-testid': 'admin-user' }, 'Loading…');
  const alert = alertBox();
  const load = async () => {
    try {
      const user = await api.admin.users.get.query({ id });
      const ban = h('button', { type: 'button' }, user.ban ? 'Unban' : 'Ban');
      const reason = h('input', { type: 'text', value: '' });
      reason.setAttribute('aria-label', 'Ban reason');
      ban.onclick = async () => {
        if (!user.ban && !confirm(`Ban ${user.email ?? user.id}? Their sessions end and their agent stops.`)) return;
        try {
          if (user.ban) await api.admin.users.unban.mutate({ id });
          else await api.admin.users.ban.mutate({ id, reason: reason.value || 'banned by an operator' });
          await load();
        } catch (error) {
          alert.fail(error, ban);
        }
      };
      const remove = h('button', { type: 'button' }, 'Delete user');
      remove.onclick = async () => {
        if (!confirm(`Delete ${user.email ?? user.id} and everything of theirs? This cannot be undone.`)) return;
        try {
          await api.admin.users.delete.mutate({ id });
          back();
        } catch (error) {
          alert.fail(error, remove);
        }
      };
      box.replaceChildren(
        h('h3', {}, user.email ?? user.id),
        h(
          'p',
          { 'data-testid': 'admin-user-state' },
          user.ban ? `Banned: ${user.ban.reason}` : 'Active',
          user.admin ? ' · admin' : '',
          user.guest ? ' · guest' : '',
        ),
        h('p', {}, `Identities: ${user.identities.map((i) => `${i.provider} ${i.subject}`).join(', ') || 'none'}`),
        h(
          'p',
          {},
          `Sessions: ${user.sessions.length} · today: ${user.usage.today.tokens_in + user.usage.today.tokens_out} model tokens, ${user.usage.today.messages} messages, ${user.usage.today.uploads} uploads`,
        ),
        h('p', { 'data-testid': 'admin-user-sources' }, `Model tokens by source today: ${bySourceText(user.usage.today.by_source)}`),
        h('p', {}, `Last 30 days: ${bySourceText(user.usage.last_30_days.by_source)}`),
        h('div', { class: 'row' }, ...(user.ban ? [] : [reason]), ban, remove),
        alert.el,
      );
    } catch (error) {
      alert.fail(error);
      box.replaceChildren(alert.el);
    }
  };
  void load();
  const backButton = h('button', { type: 'button' }, 'Back to users');
  backButton.onclick = back;
  return h('div', {}, backButton, box);
}

function usersSection(): HTMLElement {
  const query = h('input', { type: 'search' });
  query.setAttribute('aria-label', 'Search users');
  const filter = h('select', {}, ...['', 'guest', 'full', 'banned', 'admin'].map((f) => h('option', { value: f }, f || 'all')));
  filter.setAttribute('aria-label', 'Filter');
  const rows = h('tbody');
  const alert = alertBox();
  const holder = h('div');
  const table = h('table', { 'data-testid': 'admin-users' }, h('thead', {}, h('tr', {}, h('th', {}, 'User'), h('th', {}, 'Kind'), h('th', {}, 'State'))), rows);
  const list = h('div', {}, table);
  const show = (users: Users['users']) =>
    rows.replaceChildren(
      ...users.map((u) => {
        const open = h('button', { type: 'button', class: 'link' }, u.email ?? u.id);
        open.onclick = () =>
          holder.replaceChildren(
            userPage(u.id, () => {
              holder.replaceChildren(list);
              void search();
            }),
          );
        return h('tr', {}, h('td', {}, open), h('td', {}, u.guest ? 'guest' : u.admin ? 'admin' : 'full'), h('td', {}, u.ban ? 'banned' : 'active'));
      }),
    );
  const search = async () => {
    try {
      const value = filter.value as '' | 'guest' | 'full' | 'banned' | 'admin';
      show((await api.admin.users.list.query({ query: query.value || undefined, filter: value || undefined, sort: 'created', limit: 50 })).users);
    } catch (error) {
      alert.fail(error);
    }
  };
  const go = h('button', { type: 'submit' }, 'Search');
  const form = h('form', { class: 'row' }, query, filter, go);
  form.onsubmit = (e) => {
    e.preventDefault();
    void search();
  };
  holder.replaceChildren(list);
  void search();
  return section('Users', form, alert.el, holder);
}

function keysSection(): HTMLElement {
  const rows = h('ul', { 'data-testid': 'admin-keys' });
  const alert = alertBox();
  const shown = h('p', { 'data-testid': 'admin-new-key' });
  const load = async () => {
    try {
      const { keys } = await api.admin.keys.list.query();
      rows.replaceChildren(...keys.map((k) => h('li', {}, `${k.name} (${k.scopes.join(' ')})${k.revoked_at ? ' — revoked' : ''}`)));
    } catch (error) {
      alert.fail(error);
    }
  };
  const name = h('input', { type: 'text' });
  name.setAttribute('aria-label', 'Key name');
  const create = h('button', { type: 'submit' }, 'Create key');
  const form = h('form', { class: 'row' }, name, create);
  form.onsubmit = async (e) => {
    e.preventDefault();
    try {
      const created = await api.admin.keys.create.mutate({ name: name.value || 'unnamed', scopes: ['users:read', 'audit:read'] });
      shown.textContent = `New key (shown once): ${created.key}`;
      await load();
    } catch (error) {
      alert.fail(error, create);
    }
  };
  void load();
  return section('API keys', form, shown, alert.el, rows);
}

type Endpoint = Awaited<ReturnType<typeof api.admin.webhooks.list.query>>['endpoints'][number];

/** An endpoint's deliveries, newest first: state, attempts, the last answer, and Resend. */
function deliveriesList(endpoint: Endpoint): HTMLElement {
  const rows = h('ul', { 'data-testid': 'admin-deliveries', 'aria-label': `Deliveries to ${endpoint.url}` });
  const alert = alertBox();
  const load = async () => {
    try {
      const { deliveries } = await api.admin.webhooks.deliveries.query({ id: endpoint.id, limit: 20 });
      if (deliveries.length === 0) rows.replaceChildren(h('li', {}, 'No deliveries yet.'));
      else
        rows.replaceChildren(
          ...deliveries.map((d) => {
            const last = d.log[0];
            const answer = last
              ? last.status === null
                ? `no answer (${last.error ?? 'error'})`
                : `HTTP ${last.status} in ${last.latency_ms} ms`
              : 'not tried yet';
            const resend = h('button', { type: 'button', class: 'small' }, 'Resend');
            resend.onclick = async () => {
              try {
                await api.admin.webhooks.resend.mutate({ id: d.id });
                await load();
              } catch (error) {
                alert.fail(error, resend);
              }
            };
            return h('li', {}, `${d.event_type} · ${d.state} · ${d.attempts} attempt(s) · ${answer} `, resend);
          }),
        );
    } catch (error) {
      alert.fail(error);
    }
  };
  void load();
  return h('div', {}, alert.el, rows);
}

function webhooksSection(): HTMLElement {
  const rows = h('ul', { 'data-testid': 'admin-webhooks' });
  const alert = alertBox();
  const shown = h('p', { 'data-testid': 'admin-new-secret' });
  const load = async () => {
    try {
      const { endpoints } = await api.admin.webhooks.list.query();
      rows.replaceChildren(
        ...endpoints.map((endpoint) => {
          const events = endpoint.event_types.length ? endpoint.event_types.join(', ') : 'all events';
          const state = endpoint.enabled ? 'enabled' : `disabled${endpoint.disabled_reason ? `: ${endpoint.disabled_reason}` : ''}`;
          const toggle = h('button', { type: 'button', class: 'small', 'aria-expanded': 'false' }, 'Deliveries');
          const item = h('li', {}, `${endpoint.url} (${events}; ${state}) `, toggle);
          let log: HTMLElement | undefined;
          toggle.onclick = () => {
            if (log) {
              log.remove();
              log = undefined;
            } else item.append((log = deliveriesList(endpoint)));
            toggle.setAttribute('aria-expanded', String(log !== undefined));
          };
          return item;
        }),
      );
    } catch (error) {
      alert.fail(error);
    }
  };
  const url = h('input', { type: 'url', required: true });
  url.setAttribute('aria-label', 'Endpoint URL');
  const add = h('button', { type: 'submit' }, 'Add endpoint');
  const form = h('form', { class: 'row' }, url, add);
  form.onsubmit = async (e) => {
    e.preventDefault();
    try {
      const created = await api.admin.webhooks.create.mutate({ url: url.value });
      shown.textContent = `Signing secret (shown once): ${created.secret}`;
      url.value = '';
      await load();
    } catch (error) {
      alert.fail(error, add);
    }
  };
  void load();
  return section('Webhooks', form, shown, alert.el, rows);
}

function agentsSection(): HTMLElement {
  const rows = h('ul');
  const alert = alertBox();
  api.admin.agents.list
    .query()
    .then(({ agents }) => rows.replaceChildren(...agents.map((a) => h('li', {}, `${a.name} · user ${a.user_id ?? '-'} · runs ${a.runs_in_flight ?? '?'}`))))
    .catch((error: unknown) => alert.fail(error));
  return section('Agents', alert.el, rows);
}

function auditSection(): HTMLElement {
  const rows = h('ul', { 'data-testid': 'admin-audit' });
  const alert = alertBox();
  api.admin.audit.list
    .query({ limit: 50 })
    .then(({ events }) => rows.replaceChildren(...events.map((e) => h('li', {}, `${e.at} ${e.actor.label ?? e.actor.type} ${e.action} ${e.target?.id ?? ''}`))))
    .catch((error: unknown) => alert.fail(error));
  return section('Audit log', alert.el, rows);
}

export function adminPage(): HTMLElement {
  const page = h('div', { 'data-testid': 'admin-page' }, pageHeading('Admin'));
  const alert = alertBox();
  page.append(alert.el);
  // One cheap admin call decides whether the page has anything to show.
  api.admin.audit.list
    .query({ limit: 1 })
    .then(() => page.append(usersSection(), agentsSection(), keysSection(), webhooksSection(), auditSection()))
    .catch((error: unknown) => alert.fail(error));
  return page;
}
