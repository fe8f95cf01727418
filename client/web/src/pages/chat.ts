/**
 * Chat: the account's chats (kept by the agent) and a "New chat"; the open chat's history, its
 * running reply resumed after a reload (`agent.chat.active` → `agent.chat.stream`). The page puts
 * its parts together: the list (chat/list.ts), the transcript (agent/transcript.ts), the
 * connection that follows and resumes replies (chat/connection.ts), the message box
 * (chat/composer.ts) and the chat's menu (chat/menu.ts); it opens chats and sends to them.
 *
 * Sending: the message goes in the body of a POST (`agent.chat.start`), never in a URL (a long
 * message in a subscription's query string is refused by servers and proxies), then the reply is
 * followed from the run's first event. Edit and Regenerate send a replacement (`replace_from`:
 * that message and everything after it go on the agent; refused while a reply runs). Stop (or
 * Escape anywhere on the page) ends the run (`agent.chat.stop`); its partial reply stays.
 *
 * Layout: the page fills the window; the transcript is the only thing that scrolls and the
 * message box stays at the bottom. Focus is in the message box from the moment the page opens,
 * and goes back to it after Stop, after switching chats and after deleting one.
 */
import { api, errorCode, errorMessage } from '../api.js';
import { currentChat, newChatId, renameChat, setCurrentChat } from '../agent/chats.js';
import { dismissPending, onPending, storedPending } from '../agent/pending.js';
import { Transcript } from '../agent/transcript.js';
import { alertBox, h, pageHeading } from '../dom.js';
import { onLeave } from '../router.js';
import { refreshAccountInfo } from '../who.js';
import { Composer } from './chat/composer.js';
import { ChatConnection, isTransient } from './chat/connection.js';
import { ChatList, LIST_REFRESH_MS } from './chat/list.js';
import { ChatMenu } from './chat/menu.js';

export function chatPage(): HTMLElement {
  let chatId = currentChat() ?? '';
  let left = false;
  /** Chats being opened: a message sent meanwhile waits (the composer queues it). */
  let loading = 0;
  const page = h('div', { class: 'chat-page' });
  // The open chat's title is the page's heading.
  const heading = pageHeading('New chat');
  const alert = alertBox();
  const status = h('p', { class: 'status', role: 'status', 'data-testid': 'chat-status' });
  const say = (text: string) => (status.textContent = text);
  const busy = () => composer.replying || composer.isSending || loading > 0;

  const transcript = new Transcript({
    canReplace: () => !busy(),
    edit: (messageId, text) => void sendMessage(text, { replaceFrom: messageId, edit: true }),
    regenerate: () => {
      const last = transcript.lastUser();
      if (!last?.messageId) return;
      if (busy()) return say('The agent is still replying: stop the reply first (Escape), then regenerate it.');
      void sendMessage(last.text, { replaceFrom: last.messageId });
    },
  });
  const composer = new Composer({ loading: () => loading > 0, send: (message) => sendMessage(message), say });
  const connection = new ChatConnection({
    transcript,
    current: () => chatId,
    left: () => left,
    streaming: (on) => {
      composer.streaming(on);
      transcript.setBusy(on);
      say(on ? 'The agent is replying…' : '');
    },
    say,
    finished: () => {
      void list.refresh();
      // The reply spent a message and model tokens: the header's counts follow.
      refreshAccountInfo();
    },
    fail: (error) => alert.fail(error),
    reopen: (id) => void open(id),
  });
  const menu = new ChatMenu({
    title: () => heading.textContent ?? '',
    rename: async (title) => {
      try {
        await renameChat(chatId, title);
        menu.renameBox.hidden = true;
        await list.refresh();
        composer.focus();
      } catch (error) {
        alert.fail(error);
      }
    },
    clear: () =>
      connection.attempt(async () => {
        await clear();
        transcript.clear();
        say('The chat is empty.');
        await list.refresh();
        composer.focus();
      }),
    delete: () =>
      connection.attempt(async () => {
        await clear();
        await list.refresh();
        await open(list.chats[0]?.chat_id ?? newChatId());
        say('Chat deleted.');
        composer.focus();
      }),
    done: () => composer.focus(),
  });
  const list = new ChatList({
    page,
    current: () => chatId,
    pick: (id) => {
      if (id === undefined) {
        void open(newChatId());
        composer.focus();
        return;
      }
      composer.focus();
      if (id !== chatId) void open(id);
    },
    rendered: (current) => {
      heading.textContent = current?.title ?? 'New chat';
      menu.show(current !== undefined);
    },
    sessionLost: (error) => alert.fail(error),
    left: () => left,
  });

  /** Empties the open chat on the agent (a running reply is stopped first). */
  async function clear(): Promise<void> {
    const id = chatId;
    connection.end();
    await api.agent.chat.delete.mutate({ chat_id: id });
    // Its subagent results (kept in this browser) go with it.
    for (const m of storedPending()) if (m.chat_id === id && m.source === 'subagent') dismissPending(m);
  }

  // ----- opening a chat: history, then the running reply if there is one -----
  async function open(id: string): Promise<void> {
    loading++;
    composer.updateSend();
    try {
      await load(id);
    } finally {
      loading--;
      composer.updateSend();
      composer.sendQueued();
    }
  }

  async function load(id: string): Promise<void> {
    connection.end();
    chatId = id;
    setCurrentChat(id);
    list.render();
    transcript.clear();
    alert.clear();
    menu.reset();
    say('Loading…');
    try {
      const [history, active] = await Promise.all([api.agent.chat.history.query({ chat_id: id, limit: 200 }), api.agent.chat.active.query({ chat_id: id })]);
      if (chatId !== id) return;
      connection.online();
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
      say('');
      if (active.active) connection.follow(id);
    } catch (error) {
      say('');
      if (chatId !== id) return;
      if (!isTransient(error)) return alert.fail(error);
      // Open it again once the service answers (the probe throws while it does not).
      connection.reconnect(id);
    }
  }

  /**
   * Sends a message; with `replaceFrom` it replaces that user message and everything after it
   * (Regenerate, or Edit with `edit`), which the transcript shows at once.
   */
  async function sendMessage(message: string, replacing?: { replaceFrom: string; edit?: boolean }): Promise<void> {
    alert.clear();
    // A new message cancels a running reply (the agent does that); its stream ends with `done`.
    const id = chatId;
    connection.end();
    if (replacing) transcript.truncateFrom(replacing.replaceFrom);
    const shown = transcript.user(message);
    shown.dataset.state = 'sending';
    composer.setSending(true);
    say('Sending…');
    let failure: unknown;
    try {
      const started = await api.agent.chat.start.mutate({ message, chat_id: id, ...(replacing ? { replace_from: replacing.replaceFrom } : {}) });
      delete shown.dataset.state;
      shown.dataset.messageId = started.run_id;
      if (chatId !== id) return;
      connection.online();
      void list.refresh();
      connection.follow(id, started.last_event_id);
    } catch (error) {
      // Nothing was sent: the message goes back to the composer rather than being lost.
      failure = error;
      shown.remove();
      const code = errorCode(error);
      if (code === 'GUEST_QUOTA' || code === 'BUDGET_EXCEEDED') composer.showSpent(errorMessage(error));
      // An edit's text goes to the box too; a regenerated message is still in the chat.
      if (!replacing || replacing.edit) composer.restore(message);
      if (chatId === id) say('');
      // A refused replacement changed nothing on the agent: show the chat as it is there.
      if (replacing && chatId === id) void open(id);
    } finally {
      composer.setSending(false);
    }
    if (failure === undefined) return;
    // After setSending: a rate limit's countdown keeps Send disabled until it may be retried.
    if (isTransient(failure)) {
      alert.show(`Not sent: ${errorMessage(failure)} Your message is still in the box; send it again when the connection is back.`);
      // `end()` above cancelled any retry: without a new one the page would say "Reconnecting"
      // for ever. Try again soon (the user is waiting), then back off as usual.
      if (chatId === id && !left) connection.reconnect(id);
    } else alert.fail(failure, composer.send);
  }

  const stopReply = () => {
    composer.stop.disabled = true;
    composer.focus();
    connection.stop().catch(() => (composer.stop.disabled = false));
  };
  composer.stop.onclick = stopReply;

  // Escape stops the reply from anywhere on the page (a drawer or an open menu closes first).
  const onEscape = (e: KeyboardEvent) => {
    if (e.key !== 'Escape' || e.defaultPrevented || !page.isConnected) return;
    if (list.isDrawerOpen) {
      list.setOpen(false);
      list.toggle.focus();
    } else if (!menu.closeOnEscape()) {
      if (!composer.replying) return;
      stopReply();
    }
    e.preventDefault();
  };
  document.addEventListener('keydown', onEscape);

  // Proactive messages for this chat appear in it as they arrive.
  const unlisten = onPending((messages) => {
    for (const m of messages) if (m.chat_id === chatId) transcript.note(m);
  });
  const listTimer = setInterval(() => {
    if (document.visibilityState === 'visible') void list.refresh();
  }, LIST_REFRESH_MS);
  onLeave(() => {
    left = true;
    unlisten();
    clearInterval(listTimer);
    connection.close();
    document.removeEventListener('keydown', onEscape);
  });

  composer.watchSpent();
  // Open the chat this tab had open, else the newest one, else a new one. The first call to the
  // agent starts it when it is asleep: say so, rather than a bare "Loading".
  void (async () => {
    loading++;
    composer.updateSend();
    status.replaceChildren('Starting your agent… ', h('progress', { 'aria-label': 'Starting your agent' }));
    await list.refresh();
    status.replaceChildren();
    loading--;
    if (!chatId) chatId = list.chats[0]?.chat_id ?? newChatId();
    await open(chatId);
  })();

  const main = h(
    'div',
    { class: 'chat-main' },
    h('div', { class: 'chat-head' }, list.toggle, heading, menu.menu),
    menu.renameBox,
    menu.clearBox,
    menu.deleteBox,
    connection.line,
    h('div', { class: 'transcript-wrap' }, transcript.view, transcript.jump),
    status,
    alert.el,
    composer.form,
  );
  page.append(list.aside, list.backdrop, main);
  return page;
}
