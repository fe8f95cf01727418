/**
 * Chat: the chats of this browser (localStorage) and a "New chat"; the open chat's history, its
 * running reply resumed after a reload (`agent.chat.active` → `agent.chat.stream`), new messages
 * streamed event by event (`agent.chat.send`; the tRPC link resumes with `lastEventId` after a
 * network blip). Stop: the agent cancels a run when a new message arrives or the chat is
 * deleted, so "Stop" offers exactly that.
 */
import { api, live } from '../api.js';
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
  const stopBox = h('div', { class: 'stop-box', hidden: true, role: 'group', 'aria-label': 'Stop the reply' });
  const stop = h('button', { type: 'button', hidden: true, 'data-testid': 'stop' }, 'Stop');
  const setStreaming = (on: boolean) => {
    stop.hidden = !on;
    if (!on) stopBox.hidden = true;
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

  // ----- opening a chat: history, then the running reply if there is one -----
  async function open(id: string): Promise<void> {
    end();
    chatId = id;
    setCurrentChat(id);
    renderList();
    transcript.clear();
    alert.clear();
    deleteButton.disabled = !listChats().some((c) => c.id === id);
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
  const input = h('textarea', { id: 'chat-input', name: 'message', rows: 3, required: true, maxLength: 32000, placeholder: 'Ask your agent…' });
  const send = h('button', { type: 'submit', 'data-testid': 'send' }, 'Send');
  const form = h('form', { class: 'composer', 'aria-label': 'Send a message' }, h('label', { for: 'chat-input' }, 'Message'), input, h('div', { class: 'row' }, send, stop));
  input.onkeydown = (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  };
  form.onsubmit = (e) => {
    e.preventDefault();
    const message = input.value.trim();
    if (!message) return;
    alert.clear();
    input.value = '';
    transcript.user(message);
    touchChat(chatId, titleFrom(message));
    deleteButton.disabled = false;
    renderList();
    // A new message cancels a running reply (the agent does that); its stream ends with `done`.
    const id = chatId;
    follow((cb) => live.agent.chat.send.subscribe({ message, chat_id: id }, cb));
  };

  // ----- stop and delete -----
  const stopAndClear = h('button', { type: 'button', class: 'danger' }, 'Stop and clear this chat');
  const keepGoing = h('button', { type: 'button' }, 'Keep going');
  stopBox.append(
    h('p', {}, 'Your agent stops a reply when you send a new message, or when the chat is cleared. Type a new message, or:'),
    h('div', { class: 'row' }, stopAndClear, keepGoing),
  );
  stop.onclick = () => {
    stopBox.hidden = false;
    keepGoing.focus();
  };
  keepGoing.onclick = () => {
    stopBox.hidden = true;
    input.focus();
  };
  const clear = async () => {
    const id = chatId;
    end();
    const { deleted } = await api.agent.chat.delete.mutate({ chat_id: id });
    return deleted;
  };
  stopAndClear.onclick = async () => {
    try {
      await clear();
      transcript.clear();
      status.textContent = 'Stopped; the chat is empty.';
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
    h('div', { class: 'chat-head' }, pageHeading('Chat'), deleteButton),
    transcript.el,
    status,
    alert.el,
    stopBox,
    form,
  );
  void open(chatId);
  return h('div', { class: 'chat-page' }, aside, main);
}
