/**
 * Chat: the chats of this browser (localStorage) and a "New chat"; the open chat's history, its
 * running reply resumed after a reload (`agent.chat.active` → `agent.chat.stream`).
 *
 * Sending: the message goes in the body of a POST (`agent.chat.start`), never in a URL (a long
 * message in a subscription's query string is refused by servers and proxies); the reply is then
 * followed with `agent.chat.stream` from the run's first event (the tRPC link resumes with
 * `lastEventId` after a network blip). Messages over the agent's bound are refused here, inline.
 *
 * Stop (button or Escape) ends the run on the agent (`agent.chat.stop`); the chat and its partial
 * reply stay, marked stopped. Clearing the chat is a separate action, confirmed first.
 */
import { MESSAGE_MAX_CHARS } from '../../../../server/agent/chat/limits.js';
import { api, errorCode, live } from '../api.js';
import { currentChat, listChats, newChatId, removeChat, setCurrentChat, titleFrom, touchChat } from '../agent/chats.js';
import { onPending } from '../agent/pending.js';
import { Transcript } from '../agent/transcript.js';
import type { ChatEvent } from '../agent/types.js';
import { alertBox, h, pageHeading } from '../dom.js';
import { onLeave } from '../router.js';

type Item = ChatEvent | { id: string; data: ChatEvent };
const eventOf = (item: Item): ChatEvent => ('data' in item && 'id' in item ? item.data : (item as ChatEvent));

export function chatPage(): HTMLElement {
  let chatId = currentChat() ?? newChatId();
  let subscription: { unsubscribe(): void } | null = null;
  const transcript = new Transcript();
  const alert = alertBox();
  const status = h('p', { class: 'status', role: 'status', 'data-testid': 'chat-status' });

  // ----- the list of chats -----
  const list = h('ul', { class: 'chat-list' });
  const newChat = h('button', { type: 'button', 'data-testid': 'new-chat' }, 'New chat');
  newChat.onclick = () => {
    open(newChatId());
    input.focus();
  };
  const renderList = () => {
    const chats = listChats();
    if (!chats.some((c) => c.id === chatId)) chats.unshift({ id: chatId, title: 'New chat', updated: Date.now() });
    list.replaceChildren(
      ...chats.map((chat) => {
        const button = h('button', { type: 'button', class: 'chat-link', 'aria-current': chat.id === chatId ? 'true' : 'false' }, chat.title);
        button.onclick = () => open(chat.id);
        return h('li', {}, button);
      }),
    );
  };
  const aside = h('nav', { class: 'chats', 'aria-label': 'Chats' }, newChat, list);

  // ----- streaming -----
  const stop = h('button', { type: 'button', hidden: true, 'data-testid': 'stop' }, 'Stop');
  const setStreaming = (on: boolean) => {
    stop.hidden = !on;
    stop.disabled = false;
    status.textContent = on ? 'The agent is replying…' : '';
    form.setAttribute('aria-busy', String(on));
  };
  const end = () => {
    subscription?.unsubscribe();
    subscription = null;
    setStreaming(false);
  };
  /** Renders a subscription's events until `done`. */
  const follow = (subscribe: (callbacks: { onData(v: Item): void; onError(e: unknown): void; onComplete(): void }) => { unsubscribe(): void }) => {
    subscription?.unsubscribe();
    setStreaming(true);
    const mine = subscribe({
      onData(item) {
        const event = eventOf(item);
        transcript.event(event);
        if (event.type === 'done') {
          if (subscription === mine) end();
          else mine.unsubscribe();
        }
      },
      onError(error) {
        if (subscription === mine) end();
        alert.fail(error);
      },
      onComplete() {
        if (subscription === mine) end();
      },
    });
    subscription = mine;
  };

  // Send waits while the chat loads (history and a running reply arriving after a new message
  // would be shown twice) and while a message is on its way.
  let loading = 0;
  let sending = false;
  let fits = true;
  const updateSend = () => {
    send.disabled = loading > 0 || sending || !fits;
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
    }
  }

  async function load(id: string): Promise<void> {
    end();
    chatId = id;
    setCurrentChat(id);
    renderList();
    transcript.clear();
    alert.clear();
    deleteButton.disabled = !listChats().some((c) => c.id === id);
    clearButton.disabled = deleteButton.disabled;
    clearBox.hidden = true;
    status.textContent = 'Loading…';
    try {
      const [history, active] = await Promise.all([api.agent.chat.history.query({ chat_id: id, limit: 200 }), api.agent.chat.active.query({ chat_id: id })]);
      if (chatId !== id) return;
      let shown = history.messages;
      if (active.active) {
        // The stream replays the running reply from its start: show history up to its user message.
        const at = shown.map((e) => e.type === 'text' && e.name === 'user' && e.content === active.user_message).lastIndexOf(true);
        shown = at >= 0 ? shown.slice(0, at + 1) : [...shown, { type: 'text', name: 'user', content: active.user_message }];
      }
      for (const event of shown) transcript.event(event);
      transcript.endTurn();
      status.textContent = '';
      if (active.active) follow((cb) => live.agent.chat.stream.subscribe({ chat_id: id }, cb));
    } catch (error) {
      status.textContent = '';
      alert.fail(error);
    }
  }

  // ----- sending -----
  // No `maxLength`: the browser would cut a pasted message silently; over the bound it says so instead.
  const input = h('textarea', { id: 'chat-input', name: 'message', rows: 3, required: true, placeholder: 'Ask your agent…', 'aria-describedby': 'chat-input-error' });
  const inputError = h('p', { id: 'chat-input-error', class: 'field-error', 'data-testid': 'message-error', 'aria-live': 'polite' });
  const send = h('button', { type: 'submit', 'data-testid': 'send' }, 'Send');
  const form = h(
    'form',
    { class: 'composer', 'aria-label': 'Send a message' },
    h('label', { for: 'chat-input' }, 'Message'),
    input,
    inputError,
    h('div', { class: 'row' }, send, stop),
  );
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
    } else if (e.key === 'Escape' && !stop.hidden) {
      e.preventDefault();
      void stopReply();
    }
  };
  form.onsubmit = async (e) => {
    e.preventDefault();
    const message = input.value.trim();
    if (!message) return;
    if (!checkLength(message)) {
      input.focus();
      return;
    }
    // The message stays in the composer until it can go.
    if (send.disabled) return;
    alert.clear();
    // A new message cancels a running reply (the agent does that); its stream ends with `done`.
    const id = chatId;
    end();
    const shown = transcript.user(message);
    input.value = '';
    sending = true;
    updateSend();
    status.textContent = 'Sending…';
    let failure: unknown;
    try {
      const started = await api.agent.chat.start.mutate({ message, chat_id: id });
      touchChat(id, titleFrom(message));
      if (chatId !== id) return;
      deleteButton.disabled = false;
      clearButton.disabled = false;
      renderList();
      follow((cb) => live.agent.chat.stream.subscribe({ chat_id: id, lastEventId: started.last_event_id }, cb));
    } catch (error) {
      // Nothing was sent: the message goes back to the composer rather than being lost.
      failure = error;
      shown.remove();
      if (!input.value) input.value = message;
      if (chatId === id) status.textContent = '';
    } finally {
      sending = false;
      updateSend();
    }
    // After updateSend: a rate limit's countdown keeps Send disabled until it may be retried.
    if (failure !== undefined) alert.fail(failure, send);
  };

  // ----- stop, clear and delete -----
  async function stopReply(): Promise<void> {
    stop.disabled = true;
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
    clearBox.hidden = false;
    cancelClear.focus();
  };
  cancelClear.onclick = () => {
    clearBox.hidden = true;
    clearButton.focus();
  };
  const clear = async () => {
    const id = chatId;
    end();
    const { deleted } = await api.agent.chat.delete.mutate({ chat_id: id });
    return deleted;
  };
  confirmClear.onclick = async () => {
    clearBox.hidden = true;
    try {
      await clear();
      transcript.clear();
      status.textContent = 'The chat is empty.';
      input.focus();
    } catch (error) {
      alert.fail(error);
    }
  };
  const deleteButton = h('button', { type: 'button', class: 'danger', 'data-testid': 'delete-chat' }, 'Delete chat');
  deleteButton.onclick = async () => {
    try {
      await clear();
      removeChat(chatId);
      const next = listChats()[0];
      await open(next?.id ?? newChatId());
      status.textContent = 'Chat deleted.';
    } catch (error) {
      alert.fail(error);
    }
  };

  // Proactive messages for this chat appear in it as they arrive.
  const unlisten = onPending((messages) => {
    for (const m of messages) if (m.chat_id === chatId) transcript.note(m.content, m.source);
  });
  onLeave(() => {
    unlisten();
    subscription?.unsubscribe();
  });

  const main = h(
    'div',
    { class: 'chat-main' },
    h('div', { class: 'chat-head' }, pageHeading('Chat'), h('div', { class: 'row spread' }, clearButton, deleteButton)),
    clearBox,
    transcript.el,
    status,
    alert.el,
    form,
  );
  void open(chatId);
  return h('div', { class: 'chat-page' }, aside, main);
}
