/**
 * Chat: the account's chats (kept by the agent: `agent.chats.list`, renamed with
 * `agent.chats.rename`, deleted with `agent.chat.delete`) and a "New chat"; the open chat's
 * history, its running reply resumed after a reload (`agent.chat.active` → `agent.chat.stream`).
 *
 * Sending: the message goes in the body of a POST (`agent.chat.start`), never in a URL (a long
 * message in a subscription's query string is refused by servers and proxies); the reply is then
 * followed with `agent.chat.stream` from the run's first event. Messages over the agent's bound
 * are refused here, inline. A message that cannot be sent goes back to the composer, with the
 * reason next to it.
 *
 * Connection: when the stream drops (the service or the agent went away), or goes silent with its
 * connection open (a hung agent or service: no byte, not even the agent's keepalive, for
 * STALL_MS), the page says so and retries with backoff (1, 2, 4, then every 5 s); once the
 * service answers again the stream is resumed after the last event seen (`lastEventId`). If the
 * run did not survive (the agent restarted) and history does not hold its end either, the reply
 * is marked as cut off. Whatever fails for want of a connection (a send, opening a chat, clearing
 * it) leaves the page reconnecting: nothing the user does in the meantime cancels the retries
 * without arming new ones, so the page is back by itself within one backoff step of the service.
 *
 * Stop (Send turns into Stop while a reply streams; Escape anywhere on the page) ends the run on
 * the agent (`agent.chat.stop`); the chat and its partial reply stay, marked stopped. A message
 * is not sent over a running reply: it waits in the box until the reply ends or is stopped.
 * Clearing and deleting the chat are in the chat's menu and ask first.
 *
 * Messages (agent/transcript.ts, message-tools.ts): Copy on every message, Edit on a user
 * message and Regenerate on the last reply (both a clear replacement: `agent.chat.start` with
 * `replace_from`, which deletes that message and everything after it on the agent; refused while
 * a reply runs), long messages folded behind "Show more", subagent results as cards in the chat
 * that started them. Files attach from the message box (agent/attachments.ts: picker, drop,
 * paste), are uploaded to `uploads/` on Send and named in the message.
 *
 * Layout: the page fills the window; the transcript is the only thing that scrolls and the
 * message box stays at the bottom. The chat list is a sidebar on a wide screen (it can be
 * collapsed) and a drawer on a phone. Focus goes to the message box on load, after Stop, after
 * switching chats and after deleting one.
 */
import { TRPCClientError } from '@trpc/client';
import { CHAT_TITLE_MAX_CHARS, MESSAGE_MAX_CHARS } from '@contracts/agent/chat-limits.js';
import { api, errorCode, errorMessage, isSessionError, live } from '../api.js';
import { currentChat, listChats, newChatId, renameChat, setCurrentChat, type ChatSummary } from '../agent/chats.js';
import { Attachments } from '../agent/attachments.js';
import { dismissPending, onPending, storedPending } from '../agent/pending.js';
import { Transcript } from '../agent/transcript.js';
import type { ChatEvent } from '../agent/types.js';
import { alertBox, h, pageHeading } from '../dom.js';
import { accountInfo, budgetSummary, onAccountRefresh, refreshAccountInfo } from '../who.js';
import { onLeave } from '../router.js';

type Item = ChatEvent | { id: string; data: ChatEvent };
const isTracked = (item: Item): item is { id: string; data: ChatEvent } => 'data' in item && 'id' in item;

/**
 * Waits between reconnection attempts (ms); the last one repeats. At most 5 s: a page is back
 * within 10 s of the service (issue 37), one probe per tab every 5 s while it is away.
 */
const BACKOFF_MS = [1_000, 2_000, 4_000, 5_000];
/**
 * Silence (ms) after which a followed stream counts as dropped although its connection is open
 * (a stalled agent or service sends nothing and closes nothing). The agent sends a `keepalive`
 * after each AGENT_KEEPALIVE_INTERVAL of quiet (2 s by default), so a live stream is never this
 * quiet; the page then says so well within 5 s of the last byte.
 */
const STALL_MS = 4_000;
/** How often the list refreshes while the page is visible (live markers of other devices' runs). */
const LIST_REFRESH_MS = 15_000;
/** Where the chat list is a drawer over the page rather than a sidebar beside it (style.css agrees). */
const PHONE = '(max-width: 40rem)';

const when = (iso: string) => {
  const date = new Date(iso);
  const today = new Date().toDateString() === date.toDateString();
  return today ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : date.toLocaleDateString([], { month: 'short', day: 'numeric' });
};

/** A failure that means "not reachable right now" (retry), rather than "refused" (say why). */
function isTransient(error: unknown): boolean {
  if (!(error instanceof TRPCClientError)) return true;
  const status = (error.data as { httpStatus?: number } | undefined)?.httpStatus;
  return status === undefined || status >= 500 || status === 408;
}

export function chatPage(): HTMLElement {
  let chatId = currentChat() ?? '';
  let chats: ChatSummary[] = [];
  let subscription: { unsubscribe(): void } | null = null;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** Fires when the followed stream has been silent for STALL_MS. */
  let stallTimer: ReturnType<typeof setTimeout> | undefined;
  let left = false;
  const page = h('div', { class: 'chat-page' });
  // The open chat's title is the page's heading.
  const heading = pageHeading('New chat');
  const transcript = new Transcript({
    canReplace: () => stop.hidden && !sending && loading === 0,
    edit: (messageId, text) => void sendMessage(text, { replaceFrom: messageId, edit: true }),
    regenerate: () => {
      const last = transcript.lastUser();
      if (!last?.messageId) return;
      if (!stop.hidden || sending || loading > 0) {
        status.textContent = 'The agent is still replying: stop the reply first (Escape), then regenerate it.';
        return;
      }
      void sendMessage(last.text, { replaceFrom: last.messageId });
    },
  });
  const alert = alertBox();
  const status = h('p', { class: 'status', role: 'status', 'data-testid': 'chat-status' });
  const connection = h('p', { class: 'connection', role: 'status', 'data-testid': 'connection', 'data-state': 'online' });

  // ----- the list of chats -----
  const list = h('ul', { class: 'chat-list' });
  const newChat = h('button', { type: 'button', 'data-testid': 'new-chat' }, 'New chat');
  newChat.onclick = () => {
    closeDrawer();
    void open(newChatId());
    input.focus();
  };
  const renderList = () => {
    const shown = chats.some((c) => c.chat_id === chatId)
      ? chats
      : [{ chat_id: chatId, title: 'New chat', created_at: '', updated_at: '', active: false }, ...chats];
    list.replaceChildren(
      ...shown.map((chat) => {
        // Titles are text nodes only: whatever a title holds, it is never markup here.
        const button = h(
          'button',
          { type: 'button', class: 'chat-link', 'aria-current': chat.chat_id === chatId ? 'true' : 'false', 'data-chat-id': chat.chat_id },
          h('span', { class: 'chat-title' }, chat.title),
          h(
            'span',
            { class: 'chat-meta' },
            chat.active ? h('span', { class: 'live', 'data-testid': 'live-marker' }, '● replying') : null,
            chat.updated_at ? h('time', { dateTime: chat.updated_at }, when(chat.updated_at)) : null,
          ),
        );
        // Title and time read as two things ("Trip, 08:36 PM"), not one run-on word.
        if (chat.updated_at) button.setAttribute('aria-label', `${chat.title}${chat.active ? ', replying' : ''}, ${when(chat.updated_at)}`);
        button.onclick = () => {
          closeDrawer();
          input.focus();
          if (chat.chat_id !== chatId) void open(chat.chat_id);
        };
        return h('li', {}, button);
      }),
    );
    const current = chats.find((c) => c.chat_id === chatId);
    heading.textContent = current?.title ?? 'New chat';
    menu.hidden = !current;
    if (!current) menu.open = false;
  };
  const refreshList = async () => {
    try {
      chats = await listChats();
      if (!left) renderList();
    } catch (error) {
      if (isSessionError(error)) alert.fail(error);
      // Otherwise the list stays as it was; the connection status says what is wrong.
    }
  };
  const aside = h('nav', { class: 'chats', id: 'chat-list', 'aria-label': 'Chats' }, newChat, list);

  // ----- the list as a sidebar (wide) or a drawer (phone) -----
  const phone = matchMedia(PHONE);
  const toggle = h('button', { type: 'button', class: 'small chats-toggle', 'aria-controls': 'chat-list', 'data-testid': 'chats-toggle' }, 'Chats');
  const setList = (open: boolean) => {
    page.dataset.list = open ? 'open' : 'closed';
    toggle.setAttribute('aria-expanded', String(open));
  };
  /** On a phone the drawer covers the chat: it closes once a chat is picked. */
  const closeDrawer = () => {
    if (phone.matches) setList(false);
  };
  toggle.onclick = () => {
    const open = page.dataset.list !== 'open';
    setList(open);
    if (open && phone.matches) (list.querySelector<HTMLElement>('[aria-current="true"]') ?? newChat).focus();
  };
  const backdrop = h('div', { class: 'drawer-backdrop', 'aria-hidden': 'true' });
  backdrop.onclick = () => {
    setList(false);
    toggle.focus();
  };

  // ----- connection state -----
  const setConnection = (state: 'online' | 'reconnecting', message = '') => {
    connection.dataset.state = state;
    connection.textContent = message;
  };
  /** Waits, then tries again until the service answers: `attempt` resolves true when done. */
  const retry = (attempt: () => Promise<boolean>, tries = 0) => {
    clearTimeout(retryTimer);
    const wait = BACKOFF_MS[Math.min(tries, BACKOFF_MS.length - 1)]!;
    setConnection('reconnecting', `Connection to your agent lost. Reconnecting in ${Math.round(wait / 1000)} s…`);
    retryTimer = setTimeout(async () => {
      if (left) return;
      setConnection('reconnecting', 'Connection to your agent lost. Reconnecting…');
      if (!(await attempt().catch(() => false))) retry(attempt, tries + 1);
    }, wait);
  };

  /**
   * Reopens chat `id` (history, then its running reply) once the service answers. Whatever
   * cancelled the retries before (`end()` ahead of a send, a clear, another chat) armed this
   * instead when it failed for want of a connection.
   */
  const reconnect = (id: string, tries = 0) =>
    retry(async () => {
      await api.agent.chat.active.query({ chat_id: id });
      if (chatId === id && !left) void open(id);
      return true;
    }, tries);

  // ----- streaming -----
  const stop = h('button', { type: 'button', hidden: true, 'data-testid': 'stop' }, 'Stop');
  const setStreaming = (on: boolean) => {
    // Send turns into Stop while a reply streams.
    const hadFocus = document.activeElement === stop || document.activeElement === send;
    stop.hidden = !on;
    send.hidden = on;
    stop.disabled = false;
    transcript.setBusy(on);
    if (hadFocus) input.focus();
    status.textContent = on ? 'The agent is replying…' : '';
    form.setAttribute('aria-busy', String(on));
  };
  /** Forgets the current subscription before ending it: unsubscribing calls its `onComplete`. */
  const unfollow = () => {
    clearTimeout(stallTimer);
    const current = subscription;
    subscription = null;
    current?.unsubscribe();
  };
  const end = () => {
    clearTimeout(retryTimer);
    unfollow();
    setStreaming(false);
  };

  /**
   * Follows the chat's run from after `lastEventId` (from its start without one) until `done`.
   * A drop hands over to `resume`, which continues after the last event that arrived.
   */
  const follow = (id: string, lastEventId?: string) => {
    unfollow();
    setStreaming(true);
    let last = lastEventId;
    let resuming = lastEventId !== undefined;
    const finish = () => {
      if (subscription === mine) end();
      else mine.unsubscribe();
      void refreshList();
      // The reply spent a message and model tokens: the header's counts follow.
      refreshAccountInfo();
    };
    const dropped = () => {
      if (subscription !== mine) return;
      unfollow();
      resume(id, last);
    };
    /** (Re)arms the watchdog: every item, keepalives included, proves the stream alive. */
    const alive = () => {
      clearTimeout(stallTimer);
      stallTimer = setTimeout(dropped, STALL_MS);
    };
    const mine = live.agent.chat.stream.subscribe(
      { chat_id: id, ...(last ? { lastEventId: last } : {}) },
      {
        onData(item: Item) {
          if (subscription === mine) alive();
          setConnection('online');
          if (!isTracked(item)) {
            // No run behind this stream: either none is active, or (after a drop) ours is gone.
            if (item.type === 'done') {
              if (resuming) void settleLostRun(id);
              finish();
            } else transcript.event(item);
            return;
          }
          resuming = false;
          last = item.id;
          // A run followed from the start (after a reload): its id is its user message's.
          transcript.setLastUserId(item.id.slice(0, item.id.lastIndexOf('-')));
          transcript.event(item.data);
          if (item.data.type === 'done') finish();
        },
        onConnectionStateChange(state) {
          if (state.state === 'connecting' && state.error) dropped();
        },
        onError(error) {
          if (isTransient(error)) return dropped();
          if (subscription === mine) end();
          alert.fail(error);
        },
        onComplete() {
          // Ended without `done` and without an error: the connection went away.
          if (subscription === mine) dropped();
        },
      },
    );
    subscription = mine;
    alive();
  };

  /** After a drop: once the service answers again, follow on from the last event seen. */
  const resume = (id: string, lastEventId: string | undefined) => {
    status.textContent = 'The reply will continue when the connection is back.';
    retry(async () => {
      if (chatId !== id) return true;
      await api.agent.chat.active.query({ chat_id: id });
      if (chatId !== id) return true;
      setConnection('online');
      follow(id, lastEventId);
      return true;
    });
  };

  /** The run we followed did not survive: history shows how far it got; otherwise mark it cut off. */
  async function settleLostRun(id: string): Promise<void> {
    try {
      const { messages } = await api.agent.chat.history.query({ chat_id: id, limit: 200 });
      if (chatId !== id) return;
      const last = messages.at(-1);
      const ended = last !== undefined && !(last.type === 'text' && (last.name === 'user' || last.cut));
      if (ended) {
        transcript.clear();
        for (const event of messages) transcript.event(event);
        transcript.endTurn();
      } else transcript.cutOff();
    } catch {
      if (chatId === id) transcript.cutOff();
    }
  }

  // A message sent while the chat loads (its agent may be starting) waits in `queued` and goes
  // once the chat has loaded (history and a running reply arriving after a new message would be
  // shown twice); Send waits only while a message is on its way.
  let loading = 0;
  let sending = false;
  let fits = true;
  let queued: string | undefined;
  /** Why nothing can be sent today (a guest's messages or the model budget are used up), if so. */
  let spent: string | undefined;
  const updateSend = () => {
    send.disabled = sending || !fits || spent !== undefined || attachments.busy;
  };
  const sendQueued = () => {
    if (loading > 0 || sending || queued === undefined) return;
    const message = queued;
    queued = undefined;
    queuedNote.textContent = '';
    void sendMessage(message);
  };
  const showSpent = (why: string) => {
    spent = why;
    inputError.textContent = why;
    updateSend();
  };

  // ----- opening a chat: history, then the running reply if there is one -----
  async function open(id: string): Promise<void> {
    loading++;
    updateSend();
    try {
      await load(id);
    } finally {
      loading--;
      updateSend();
      sendQueued();
    }
  }

  async function load(id: string): Promise<void> {
    end();
    chatId = id;
    setCurrentChat(id);
    renderList();
    transcript.clear();
    alert.clear();
    clearBox.hidden = true;
    deleteBox.hidden = true;
    renameBox.hidden = true;
    status.textContent = 'Loading…';
    try {
      const [history, active] = await Promise.all([api.agent.chat.history.query({ chat_id: id, limit: 200 }), api.agent.chat.active.query({ chat_id: id })]);
      if (chatId !== id) return;
      setConnection('online');
      let shown = history.messages;
      if (active.active) {
        // The stream replays the running reply from its start: show history up to its user message.
        const at = shown.map((e) => e.type === 'text' && e.name === 'user' && e.content === active.user_message).lastIndexOf(true);
        shown = at >= 0 ? shown.slice(0, at + 1) : [...shown, { type: 'text', name: 'user', content: active.user_message }];
      }
      for (const event of shown) transcript.event(event);
      transcript.endTurn();
      // Subagent results for this chat that arrived before (kept in this browser) come last.
      for (const m of storedPending()) if (m.chat_id === id && m.source === 'subagent') transcript.note(m);
      status.textContent = '';
      if (active.active) follow(id);
    } catch (error) {
      status.textContent = '';
      if (chatId !== id) return;
      if (!isTransient(error)) return alert.fail(error);
      // Open it again once the service answers (the probe throws while it does not).
      reconnect(id);
    }
  }

  // ----- sending -----
  // No `maxLength`: the browser would cut a pasted message silently; over the bound it says so instead.
  const input = h('textarea', {
    id: 'chat-input',
    name: 'message',
    rows: 2,
    required: true,
    placeholder: 'Ask your agent…',
    'aria-describedby': 'chat-input-error chat-input-hint',
  });
  const inputError = h('p', { id: 'chat-input-error', class: 'field-error', 'data-testid': 'message-error', 'aria-live': 'polite' });
  const hint = h('p', { id: 'chat-input-hint', class: 'hint' }, 'Enter sends, Shift+Enter starts a new line, Escape stops the reply.');
  const send = h('button', { type: 'submit', 'data-testid': 'send' }, 'Send');
  const attachments = new Attachments(
    (message) => (inputError.textContent = message),
    () => updateSend(),
  );
  const queuedNote = h('p', { class: 'hint', 'data-testid': 'queued', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'composer', 'aria-label': 'Send a message' },
    h('label', { for: 'chat-input', class: 'visually-hidden' }, 'Message'),
    attachments.list,
    h('div', { class: 'composer-box' }, attachments.button, attachments.input, input, h('div', { class: 'composer-actions' }, send, stop)),
    inputError,
    queuedNote,
    hint,
  );
  attachments.wire(form, input);
  /** Whether the message fits; if not, says by how much, next to the field. */
  const checkLength = (message: string): boolean => {
    const over = message.length - MESSAGE_MAX_CHARS;
    fits = over <= 0;
    input.setAttribute('aria-invalid', String(!fits));
    updateSend();
    inputError.textContent = fits
      ? ''
      : `Your message is ${message.length.toLocaleString('en')} characters; the limit is ${MESSAGE_MAX_CHARS.toLocaleString('en')}. Remove ${over.toLocaleString('en')} to send it.`;
    return fits;
  };
  input.oninput = () => checkLength(input.value.trim());
  input.onkeydown = (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  };
  // Escape stops the reply from anywhere on the page (a drawer or an open menu closes first).
  const onEscape = (e: KeyboardEvent) => {
    if (e.key !== 'Escape' || e.defaultPrevented || !page.isConnected) return;
    if (phone.matches && page.dataset.list === 'open') {
      setList(false);
      toggle.focus();
    } else if (menu.open) {
      menu.open = false;
      menuButton.focus();
    } else if (!stop.hidden) void stopReply();
    else return;
    e.preventDefault();
  };
  document.addEventListener('keydown', onEscape);
  form.onsubmit = async (e) => {
    e.preventDefault();
    const typed = input.value.trim();
    if (!typed && attachments.count === 0) return;
    if (!checkLength(typed)) {
      input.focus();
      return;
    }
    // The message stays in the composer until it can go.
    if (send.disabled) return;
    // Not over a running reply (the agent would cut it): it waits for the reply to end, or Stop.
    if (!stop.hidden) {
      status.textContent = 'The agent is still replying: your message waits in the box. Stop the reply (Escape) to send it now.';
      return;
    }
    if (loading > 0) {
      if (attachments.count > 0) {
        queuedNote.textContent = 'Your agent is starting: send again in a moment to upload the attached files.';
        return;
      }
      // Typing never waits for the agent: this goes as soon as the chat has loaded.
      queued = queued === undefined ? typed : `${queued}\n\n${typed}`;
      input.value = '';
      queuedNote.textContent = 'Your message will be sent as soon as your agent is ready.';
      return;
    }
    let message = typed;
    if (attachments.count > 0) {
      // Files first (into uploads/), then the message naming them; a failed upload keeps both.
      status.textContent = 'Uploading the attached files…';
      const uploading = attachments.upload();
      updateSend();
      const lines = await uploading.catch(() => undefined);
      updateSend();
      status.textContent = '';
      if (!lines) return;
      message = typed ? `${typed}\n\n${lines.join('\n')}` : lines.join('\n');
      if (!checkLength(message)) return;
      attachments.clear();
    }
    input.value = '';
    await sendMessage(message);
  };

  /**
   * Sends a message; with `replaceFrom` it replaces that user message and everything after it
   * (Regenerate, or Edit with `edit`), which the transcript shows at once.
   */
  async function sendMessage(message: string, replacing?: { replaceFrom: string; edit?: boolean }): Promise<void> {
    alert.clear();
    // A new message cancels a running reply (the agent does that); its stream ends with `done`.
    const id = chatId;
    end();
    if (replacing) transcript.truncateFrom(replacing.replaceFrom);
    const shown = transcript.user(message);
    shown.dataset.state = 'sending';
    sending = true;
    updateSend();
    status.textContent = 'Sending…';
    let failure: unknown;
    try {
      const started = await api.agent.chat.start.mutate({ message, chat_id: id, ...(replacing ? { replace_from: replacing.replaceFrom } : {}) });
      delete shown.dataset.state;
      shown.dataset.messageId = started.run_id;
      if (chatId !== id) return;
      setConnection('online');
      void refreshList();
      follow(id, started.last_event_id);
    } catch (error) {
      // Nothing was sent: the message goes back to the composer rather than being lost.
      failure = error;
      shown.remove();
      const code = errorCode(error);
      if (code === 'GUEST_QUOTA' || code === 'BUDGET_EXCEEDED') showSpent(errorMessage(error));
      // An edit's text goes to the box too; a regenerated message is still in the chat.
      if (!input.value && (!replacing || replacing.edit)) input.value = message;
      if (chatId === id) status.textContent = '';
      // A refused replacement changed nothing on the agent: show the chat as it is there.
      if (replacing && chatId === id) void open(id);
    } finally {
      sending = false;
      updateSend();
    }
    if (failure === undefined) return;
    // After updateSend: a rate limit's countdown keeps Send disabled until it may be retried.
    if (isTransient(failure)) {
      alert.show(`Not sent: ${errorMessage(failure)} Your message is still in the box; send it again when the connection is back.`);
      // `end()` above cancelled any retry: without a new one the page would say "Reconnecting"
      // for ever. Try again soon (the user is waiting), then back off as usual.
      if (chatId === id && !left) reconnect(id);
    } else alert.fail(failure, send);
  }

  // ----- stop, rename, clear and delete -----
  async function stopReply(): Promise<void> {
    stop.disabled = true;
    input.focus();
    try {
      // The stream itself reports the end: `error` "stopped", then `done`.
      await api.agent.chat.stop.mutate({ chat_id: chatId });
    } catch (error) {
      // The reply ended on its own meanwhile: nothing to stop.
      if (errorCode(error) === 'RUN_NOT_ACTIVE' || errorCode(error) === 'CHAT_NOT_FOUND') return;
      stop.disabled = false;
      alert.fail(error);
    }
  }
  stop.onclick = () => void stopReply();

  // The chat's menu: shown once the list says the open chat is in it.
  const menuButton = h('summary', { class: 'menu-button', 'data-testid': 'chat-menu', 'aria-label': 'Chat options' }, '⋯');
  const renameButton = h('button', { type: 'button', 'data-testid': 'rename-chat' }, 'Rename');
  const titleInput = h('input', { id: 'chat-title', name: 'title', maxLength: CHAT_TITLE_MAX_CHARS, required: true, autocomplete: 'off' });
  const cancelRename = h('button', { type: 'button' }, 'Cancel');
  const renameBox = h(
    'form',
    { class: 'confirm-box', hidden: true, 'aria-label': 'Rename this chat', 'data-testid': 'rename-form' },
    h('label', { for: 'chat-title' }, 'Chat title'),
    titleInput,
    h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Save'), cancelRename),
  );
  renameButton.onclick = () => {
    menu.open = false;
    titleInput.value = chats.find((c) => c.chat_id === chatId)?.title ?? '';
    renameBox.hidden = false;
    titleInput.select();
    titleInput.focus();
  };
  cancelRename.onclick = () => {
    renameBox.hidden = true;
    input.focus();
  };
  renameBox.onsubmit = async (e) => {
    e.preventDefault();
    try {
      await renameChat(chatId, titleInput.value);
      renameBox.hidden = true;
      await refreshList();
      input.focus();
    } catch (error) {
      alert.fail(error);
    }
  };

  const clearButton = h('button', { type: 'button', 'data-testid': 'clear-chat' }, 'Clear chat');
  const confirmClear = h('button', { type: 'button', class: 'danger' }, 'Clear');
  const cancelClear = h('button', { type: 'button' }, 'Cancel');
  const clearBox = h(
    'div',
    { class: 'confirm-box', hidden: true, role: 'group', 'aria-label': 'Clear this chat', 'data-testid': 'clear-confirm' },
    h('p', {}, 'Clear this chat? Its messages are deleted for good (a running reply is stopped first).'),
    h('div', { class: 'row' }, confirmClear, cancelClear),
  );
  clearButton.onclick = () => {
    menu.open = false;
    deleteBox.hidden = true;
    clearBox.hidden = false;
    cancelClear.focus();
  };
  cancelClear.onclick = () => {
    clearBox.hidden = true;
    input.focus();
  };
  const clear = async () => {
    const id = chatId;
    end();
    const { deleted } = await api.agent.chat.delete.mutate({ chat_id: id });
    // Its subagent results (kept in this browser) go with it.
    for (const m of storedPending()) if (m.chat_id === id && m.source === 'subagent') dismissPending(m);
    return deleted;
  };
  confirmClear.onclick = async () => {
    clearBox.hidden = true;
    const id = chatId;
    try {
      await clear();
      transcript.clear();
      status.textContent = 'The chat is empty.';
      await refreshList();
      input.focus();
    } catch (error) {
      alert.fail(error);
      if (isTransient(error) && chatId === id) reconnect(id);
    }
  };
  // Deleting asks first, naming the chat; the answer's button has focus, so Enter twice on
  // "Delete chat" deletes this one chat and leaves focus in the message box, not on another Delete.
  const deleteButton = h('button', { type: 'button', class: 'danger', 'data-testid': 'delete-chat' }, 'Delete chat');
  const deleteQuestion = h('p', {});
  const confirmDelete = h('button', { type: 'button', class: 'danger', 'data-testid': 'confirm-delete' }, 'Delete');
  const cancelDelete = h('button', { type: 'button' }, 'Cancel');
  const deleteBox = h(
    'div',
    { class: 'confirm-box', hidden: true, role: 'group', 'aria-label': 'Delete this chat', 'data-testid': 'delete-confirm' },
    deleteQuestion,
    h('div', { class: 'row' }, confirmDelete, cancelDelete),
  );
  deleteButton.onclick = () => {
    menu.open = false;
    clearBox.hidden = true;
    deleteQuestion.textContent = `Delete “${heading.textContent}”? The chat and its messages are deleted for good.`;
    deleteBox.hidden = false;
    confirmDelete.focus();
  };
  cancelDelete.onclick = () => {
    deleteBox.hidden = true;
    input.focus();
  };
  confirmDelete.onclick = async () => {
    deleteBox.hidden = true;
    input.focus();
    const id = chatId;
    try {
      await clear();
      await refreshList();
      await open(chats[0]?.chat_id ?? newChatId());
      status.textContent = 'Chat deleted.';
      input.focus();
    } catch (error) {
      alert.fail(error);
      if (isTransient(error) && chatId === id) reconnect(id);
    }
  };
  const menu = h(
    'details',
    { class: 'chat-menu', hidden: true },
    menuButton,
    h('div', { class: 'menu', role: 'group', 'aria-label': 'Chat options' }, renameButton, clearButton, deleteButton),
  );

  // Proactive messages for this chat appear in it as they arrive.
  const unlisten = onPending((messages) => {
    for (const m of messages) if (m.chat_id === chatId) transcript.note(m);
  });
  const listTimer = setInterval(() => {
    if (document.visibilityState === 'visible') void refreshList();
  }, LIST_REFRESH_MS);
  onLeave(() => {
    left = true;
    unlisten();
    clearInterval(listTimer);
    clearTimeout(retryTimer);
    unfollow();
    document.removeEventListener('keydown', onEscape);
  });

  const main = h(
    'div',
    { class: 'chat-main' },
    h('div', { class: 'chat-head' }, toggle, heading, menu),
    renameBox,
    clearBox,
    deleteBox,
    connection,
    h('div', { class: 'transcript-wrap' }, transcript.view, transcript.jump),
    status,
    alert.el,
    form,
  );
  // A guest who used today's messages, or anyone whose model budget is spent, sees why before
  // typing, not after.
  const checkSpent = () =>
    void accountInfo().then(
      ({ guest, usage }) => {
        const budget = budgetSummary(usage.model_tokens);
        if (guest && usage.messages_left_today === 0)
          showSpent(
            `You have sent today's ${usage.messages_per_day} guest messages. Link a sign-in method on the Account page to keep chatting, or come back tomorrow.`,
          );
        else if (budget?.spent) showSpent(`Your agent has used today's model budget. ${budget.detail}`);
      },
      () => undefined,
    );
  checkSpent();
  onAccountRefresh(checkSpent, () => form.isConnected);
  // Open the chat this tab had open, else the newest one, else a new one. The first call to the
  // agent starts it when it is asleep: say so, rather than a bare "Loading".
  void (async () => {
    loading++;
    updateSend();
    status.replaceChildren('Starting your agent… ', h('progress', { 'aria-label': 'Starting your agent' }));
    await refreshList();
    status.replaceChildren();
    loading--;
    if (!chatId) chatId = chats[0]?.chat_id ?? newChatId();
    await open(chatId);
  })();
  // Focus starts in the message box (after the router has focused the heading), so typing works at once.
  requestAnimationFrame(() => {
    if (document.activeElement === document.body || document.activeElement === heading) input.focus();
  });
  setList(!phone.matches);
  page.append(aside, backdrop, main);
  return page;
}
