/**
 * One connector on the Connectors page (connectors.ts): its name, URL and status; the sign-in
 * step while it `needs_auth`; its tools with a switch each (`connectors.update` with the one tool
 * named); Rename (an inline form) and Remove (asked first, inline, like the other destructive
 * actions of the client). Everything the server or the user named only ever becomes text nodes.
 */
import { api } from '../api.js';
import type { AlertBox } from '../dom.js';
import { h } from '../dom.js';
import { icon } from '../icons.js';

export type Connector = Awaited<ReturnType<typeof api.connectors.list.query>>['connectors'][number];

const STATUS: Record<Connector['status'], string> = { connected: 'Connected', needs_auth: 'Needs sign-in', error: 'Error' };
const BADGE: Record<Connector['status'], string> = { connected: 'completed', needs_auth: 'pending', error: 'failed' };

export interface CardContext {
  alert: AlertBox;
  /** The list again, after a rename or a removal; the focus goes to the card of id `focus` (null: the list's heading). */
  reload(focus: string | null): Promise<void>;
  /** A sign-in link already in hand (from `create`), used instead of asking for a new one. */
  link(id: string): string | undefined;
}

export function connectorCard(connector: Connector, ctx: CardContext): HTMLElement {
  const id = `connector-${connector.id}`;
  const title = h('h3', { id: `${id}-title`, tabIndex: -1 }, connector.name);
  const card = h(
    'li',
    {
      class: 'connector',
      'data-connector': connector.name,
      'data-connector-id': connector.id,
      'data-status': connector.status,
      'aria-labelledby': `${id}-title`,
    },
    h(
      'div',
      { class: 'row spread' },
      title,
      h('span', { class: `badge ${BADGE[connector.status]}`, 'data-testid': 'connector-status' }, STATUS[connector.status]),
    ),
    h('p', { class: 'connector-url' }, h('code', {}, connector.url)),
  );
  if (connector.error) card.append(h('p', { class: 'field-error', 'data-testid': 'connector-error' }, connector.error));
  if (connector.status === 'needs_auth') card.append(signIn(connector, ctx));
  if (connector.tools.length > 0) card.append(tools(connector, ctx));
  const actions = h('div', { class: 'row' });
  const panel = h('div', { class: 'confirm-box', hidden: true });
  const rename = h('button', { type: 'button', class: 'small', 'aria-label': `Rename ${connector.name}` }, 'Rename');
  const remove = h('button', { type: 'button', class: 'small danger', 'aria-label': `Remove ${connector.name}` }, icon('trash', 16), ' Remove');
  rename.onclick = () => renameForm(connector, ctx, panel, rename);
  remove.onclick = () => confirmRemoval(connector, ctx, panel, remove);
  actions.append(rename, remove);
  card.append(actions, panel);
  return card;
}

/** Off to the provider: the link from `create` when there is one, else a new one (one use, 10 minutes). */
function signIn(connector: Connector, ctx: CardContext): HTMLElement {
  const button = h('button', { type: 'button', class: 'small', 'data-testid': 'connector-sign-in' }, `Sign in to ${connector.name}`);
  button.onclick = async () => {
    button.disabled = true;
    try {
      const url = ctx.link(connector.id) ?? (await api.connectors.signIn.mutate({ id: connector.id })).authorize_url;
      location.assign(url);
    } catch (error) {
      button.disabled = false;
      ctx.alert.fail(error, button);
    }
  };
  return h(
    'div',
    { class: 'connector-sign-in' },
    h('p', {}, 'This server asks you to sign in at its provider before your agent may use it. You come back here afterwards.'),
    button,
  );
}

function tools(connector: Connector, ctx: CardContext): HTMLElement {
  const status = h('p', { role: 'status', class: 'muted' });
  const list = h('ul', { class: 'connector-tools' });
  for (const [index, tool] of connector.tools.entries()) {
    // By position: tool names are the server's, and two could differ only in characters an id cannot hold.
    const inputId = `${connector.id}-tool-${index}`;
    const box = h('input', { type: 'checkbox', id: inputId, role: 'switch', checked: tool.enabled, 'aria-describedby': `${inputId}-about` });
    box.onchange = async () => {
      const on = box.checked;
      box.disabled = true;
      try {
        await api.connectors.update.mutate({ id: connector.id, tools: { [tool.name]: on } });
        status.textContent = `${tool.name} switched ${on ? 'on' : 'off'}.`;
      } catch (error) {
        box.checked = !on;
        ctx.alert.fail(error);
      } finally {
        box.disabled = false;
      }
    };
    list.append(
      h(
        'li',
        { 'data-tool': tool.name },
        h('div', { class: 'switch' }, box, h('label', { for: inputId }, h('code', {}, `${connector.name}__${tool.name}`))),
        h('p', { id: `${inputId}-about`, class: 'muted' }, tool.description),
      ),
    );
  }
  return h(
    'details',
    { class: 'connector-tools-box' },
    h('summary', {}, `Tools (${connector.tools.filter((t) => t.enabled).length} of ${connector.tools.length} on)`),
    h('p', { class: 'muted' }, 'Your agent is offered the tools that are on, under these names.'),
    list,
    status,
  );
}

/** Closes the card's inline panel (also on Escape) and gives the focus back to the button that opened it. */
function closer(panel: HTMLElement, back: HTMLElement): () => void {
  const close = () => {
    panel.hidden = true;
    panel.replaceChildren();
    back.focus();
  };
  panel.onkeydown = (e) => {
    if (e.key === 'Escape') close();
  };
  return close;
}

function renameForm(connector: Connector, ctx: CardContext, panel: HTMLElement, opener: HTMLButtonElement): void {
  const inputId = `${connector.id}-rename`;
  const input = h('input', { id: inputId, name: 'name', required: true, maxLength: 24, pattern: '[A-Za-z0-9][A-Za-z0-9\\-]*', autocomplete: 'off' });
  input.value = connector.name;
  const cancel = h('button', { type: 'button' }, 'Cancel');
  const close = closer(panel, opener);
  cancel.onclick = close;
  const form = h(
    'form',
    {},
    h('label', { for: inputId }, `New name for ${connector.name}`),
    input,
    h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Save name'), cancel),
  );
  form.onsubmit = async (e) => {
    e.preventDefault();
    try {
      const saved = await api.connectors.update.mutate({ id: connector.id, name: input.value.trim() });
      ctx.alert.show(`Renamed to ${saved.name}: your agent now sees its tools as ${saved.name}__….`);
      await ctx.reload(saved.id);
    } catch (error) {
      ctx.alert.fail(error);
      input.focus();
    }
  };
  panel.replaceChildren(form);
  panel.hidden = false;
  input.focus();
  input.select();
}

function confirmRemoval(connector: Connector, ctx: CardContext, panel: HTMLElement, opener: HTMLButtonElement): void {
  const yes = h('button', { type: 'button', class: 'danger' }, `Yes, remove ${connector.name}`);
  const no = h('button', { type: 'button' }, 'Cancel');
  no.onclick = closer(panel, opener);
  yes.onclick = async () => {
    yes.disabled = true;
    try {
      await api.connectors.remove.mutate({ id: connector.id });
      ctx.alert.show(`Removed ${connector.name}.`);
      await ctx.reload(null);
    } catch (error) {
      yes.disabled = false;
      ctx.alert.fail(error);
    }
  };
  panel.replaceChildren(
    h('p', {}, `Remove ${connector.name}? Your agent can no longer use its tools, and its sign-in is revoked.`),
    h('div', { class: 'row' }, yes, no),
  );
  panel.hidden = false;
  yes.focus();
}
