/**
 * The chat page's list of chats (kept by the agent: agent/chats.ts) and "New chat": a sidebar on a
 * wide screen, which can be collapsed, and a drawer over the chat on a phone, which closes once a
 * chat is picked. Live markers show other devices' running replies; the list refreshes while the
 * page is visible.
 */
import { isSessionError } from '../../api.js';
import { listChats, type ChatSummary } from '../../agent/chats.js';
import { h } from '../../dom.js';
import { icon } from '../../icons.js';

/** Where the chat list is a drawer over the page rather than a sidebar beside it (style.css agrees). */
const PHONE = '(max-width: 40rem)';
/** How often the list refreshes while the page is visible (live markers of other devices' runs). */
export const LIST_REFRESH_MS = 15_000;

const when = (iso: string) => {
  const date = new Date(iso);
  const today = new Date().toDateString() === date.toDateString();
  return today ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : date.toLocaleDateString([], { month: 'short', day: 'numeric' });
};

export interface ChatListOptions {
  /** The page whose `data-list` says whether the list is shown (style.css). */
  page: HTMLElement;
  /** The open chat. */
  current(): string;
  /** A chat was picked, or "New chat" (`id` undefined). */
  pick(id: string | undefined): void;
  /** After each render: the open chat's entry, when the list has it. */
  rendered(current: ChatSummary | undefined): void;
  /** A failure that ends the session; others leave the list as it was (the connection line says what is wrong). */
  sessionLost(error: unknown): void;
  /** Whether the page is gone (a late answer renders nothing). */
  left(): boolean;
}

export class ChatList {
  chats: ChatSummary[] = [];
  private readonly list = h('ul', { class: 'chat-list' });
  readonly newChat = h('button', { type: 'button', 'data-testid': 'new-chat' }, 'New chat');
  readonly aside = h('nav', { class: 'chats', id: 'chat-list', 'aria-label': 'Chats' }, this.newChat, this.list);
  readonly toggle = h('button', { type: 'button', class: 'small chats-toggle', 'aria-controls': 'chat-list', 'data-testid': 'chats-toggle' }, 'Chats');
  readonly backdrop = h('div', { class: 'drawer-backdrop', 'aria-hidden': 'true' });
  private readonly phone = matchMedia(PHONE);

  constructor(private readonly opts: ChatListOptions) {
    this.newChat.onclick = () => {
      this.closeDrawer();
      opts.pick(undefined);
    };
    this.toggle.onclick = () => {
      const open = !this.isOpen;
      this.setOpen(open);
      if (open && this.phone.matches) (this.list.querySelector<HTMLElement>('[aria-current="true"]') ?? this.newChat).focus();
    };
    this.backdrop.onclick = () => {
      this.setOpen(false);
      this.toggle.focus();
    };
    this.setOpen(!this.phone.matches);
  }

  get isOpen(): boolean {
    return this.opts.page.dataset.list === 'open';
  }

  /** The drawer is open over the chat (a phone): Escape closes it first. */
  get isDrawerOpen(): boolean {
    return this.phone.matches && this.isOpen;
  }

  setOpen(open: boolean): void {
    this.opts.page.dataset.list = open ? 'open' : 'closed';
    this.toggle.setAttribute('aria-expanded', String(open));
  }

  /** On a phone the drawer covers the chat: it closes once a chat is picked. */
  closeDrawer(): void {
    if (this.phone.matches) this.setOpen(false);
  }

  title(id: string): string | undefined {
    return this.chats.find((c) => c.chat_id === id)?.title;
  }

  render(): void {
    const chatId = this.opts.current();
    const shown = this.chats.some((c) => c.chat_id === chatId)
      ? this.chats
      : [{ chat_id: chatId, title: 'New chat', created_at: '', updated_at: '', active: false }, ...this.chats];
    this.list.replaceChildren(...shown.map((chat) => h('li', {}, this.entry(chat, chat.chat_id === chatId))));
    this.opts.rendered(this.chats.find((c) => c.chat_id === chatId));
  }

  private entry(chat: ChatSummary, current: boolean): HTMLElement {
    // Titles are text nodes only: whatever a title holds, it is never markup here.
    const button = h(
      'button',
      { type: 'button', class: 'chat-link', 'aria-current': current ? 'true' : 'false', 'data-chat-id': chat.chat_id },
      h('span', { class: 'chat-title' }, chat.title),
      h(
        'span',
        { class: 'chat-meta' },
        chat.active ? h('span', { class: 'live', 'data-testid': 'live-marker' }, icon('live'), 'replying') : null,
        chat.updated_at ? h('time', { dateTime: chat.updated_at }, when(chat.updated_at)) : null,
      ),
    );
    // Title and time read as two things ("Trip, 08:36 PM"), not one run-on word.
    if (chat.updated_at) button.setAttribute('aria-label', `${chat.title}${chat.active ? ', replying' : ''}, ${when(chat.updated_at)}`);
    button.onclick = () => {
      this.closeDrawer();
      this.opts.pick(chat.chat_id);
    };
    return button;
  }

  async refresh(): Promise<void> {
    try {
      this.chats = await listChats();
      if (!this.opts.left()) this.render();
    } catch (error) {
      if (isSessionError(error)) this.opts.sessionLost(error);
    }
  }
}
