/**
 * A chat transcript: user and assistant messages, tool calls and files, rendered as events
 * arrive (a text delta extends the assistant message in progress). An ordered list inside a
 * role="log" region, so screen readers hear new messages without losing their place.
 *
 * Assistant text is Markdown, rendered through the sanitizer (markdown.ts); everything else (the
 * user's words, tool input, file names) only ever becomes text nodes. The list follows the
 * newest event while the reader is at the bottom; once they scroll up it stays put and offers
 * "Jump to latest" instead.
 *
 * Each message has its tools (message-tools.ts): Copy on every user message and reply, Edit on a
 * user message (in place: the page sends the new text as a replacement of that message and
 * everything after it), Regenerate on the last reply, and "Show more" on a long message. User
 * messages carry their `message_id` (`data-message-id`), which a replacement names. Subagent
 * results (pending messages from `subagent`) are cards in the chat that started them; so are the
 * pages the agent read and the searches it made (web-card.ts). A compaction (history only: older
 * messages the model summarised in a long chat) is one entry, "Earlier messages summarised", that
 * expands to the summary and the original messages (compaction-entry.ts).
 */
import { STOPPED } from '@contracts/agent/chat-limits.js';
import { h } from '../dom.js';
import { icon } from '../icons.js';
import { editInPlace } from './edit-message.js';
import { fileCard } from './file-card.js';
import { renderMarkdown } from './markdown.js';
import { collapseIfLong, copyButton, toolButton } from './message-tools.js';
import { compactionEntry } from './compaction-entry.js';
import { subagentCard } from './subagent-card.js';
import type { ChatEvent, PendingMessage } from './types.js';
import { webCard } from './web-card.js';

/** What the page does for a message's Edit and the last reply's Regenerate. */
export interface TranscriptActions {
  /** Send `text` in place of the user message `messageId` and everything after it. */
  edit(messageId: string, text: string): void;
  /** A new reply to the last user message, in place of the last one. */
  regenerate(): void;
  /** Whether a message may be replaced now (not while a reply streams or a message is on its way). */
  canReplace(): boolean;
}

/** How close to the bottom (px) still counts as reading the newest event. */
const NEAR_BOTTOM_PX = 48;

export class Transcript {
  /** The messages; `view` is the scrolling, focusable log around them. */
  private readonly el = h('ol', { class: 'messages' });
  readonly view = h('div', { class: 'transcript', role: 'log', 'aria-label': 'Conversation', 'data-testid': 'transcript', tabIndex: 0 }, this.el);
  readonly jump = h('button', { type: 'button', class: 'jump small', hidden: true, 'data-testid': 'jump-latest' }, 'Jump to latest ', icon('down'));
  /** The assistant message in progress, its raw text, and whether a render is queued. */
  private text: { body: HTMLElement; bar: HTMLElement; raw: string; queued: boolean } | null = null;
  private following = true;
  /** The one Regenerate button, moved to the last reply. */
  private readonly regenerate = toolButton('Regenerate', 'Regenerate this reply', 'regenerate');

  constructor(private readonly actions?: TranscriptActions) {
    this.regenerate.onclick = () => this.actions?.regenerate();
    this.view.addEventListener('scroll', () => {
      this.following = this.view.scrollHeight - this.view.scrollTop - this.view.clientHeight <= NEAR_BOTTOM_PX;
      if (this.following) this.jump.hidden = true;
    });
    this.jump.onclick = () => {
      this.following = true;
      this.toBottom();
      this.view.focus();
    };
  }

  clear(): void {
    this.el.replaceChildren();
    this.regenerate.remove();
    this.text = null;
    this.following = true;
    this.jump.hidden = true;
  }

  private toBottom(): void {
    this.view.scrollTop = this.view.scrollHeight;
    this.jump.hidden = true;
  }

  /** After anything grew: follow, or let a reader who scrolled up know there is more. */
  private grew(): void {
    if (this.following) this.toBottom();
    else this.jump.hidden = false;
  }

  private add(item: HTMLElement): HTMLElement {
    this.el.append(item);
    this.grew();
    return item;
  }

  user(content: string, messageId?: string): HTMLElement {
    this.endTurn();
    // Sending is reading the newest: follow again.
    this.following = true;
    const body = h('p', { class: 'body' }, content);
    const bar = h('div', { class: 'msg-tools' });
    const item = h('li', { class: 'msg user', 'data-role': 'user' }, h('span', { class: 'who' }, 'You'), body, bar);
    if (messageId) item.dataset.messageId = messageId;
    const edit = toolButton('Edit', 'Edit this message', 'edit');
    edit.onclick = () => {
      if (item.dataset.messageId && this.actions) editInPlace({ item, content, body, bar }, item.dataset.messageId, this.actions);
    };
    bar.append(
      copyButton('Copy this message', () => content),
      edit,
    );
    this.add(item);
    collapseIfLong(body, bar, content.length);
    // A new exchange: the previous reply is no longer the one to regenerate.
    this.placeRegenerate();
    return item;
  }

  /** The last user message's id, once the agent has given it (`chat.start`'s run, a stream's). */
  setLastUserId(messageId: string): void {
    const last = [...this.el.querySelectorAll<HTMLElement>('[data-role="user"]')].at(-1);
    if (last && !last.dataset.messageId) last.dataset.messageId = messageId;
  }

  /** The last user message: its id (when known) and text. */
  lastUser(): { messageId: string | undefined; text: string } | undefined {
    const last = [...this.el.querySelectorAll<HTMLElement>('[data-role="user"]')].at(-1);
    return last ? { messageId: last.dataset.messageId, text: last.querySelector('.body')?.textContent ?? '' } : undefined;
  }

  /** Removes the user message `messageId` and everything after it (a replacement is on its way). */
  truncateFrom(messageId: string): void {
    this.endTurn();
    const from = [...this.el.children].find((li) => (li as HTMLElement).dataset.messageId === messageId);
    if (!from) return;
    while (from.nextElementSibling) from.nextElementSibling.remove();
    from.remove();
    this.placeRegenerate();
  }

  /**
   * A proactive message: a subagent's result as a card, anything else as a note. Shown once: the
   * poll can hand over a message while the chat's history loads, after which the load adds the
   * stored ones (that message among them).
   */
  note(message: PendingMessage): void {
    const key = `${message.created_at} ${message.source} ${message.content}`;
    if ([...this.el.children].some((li) => (li as HTMLElement).dataset.pendingKey === key)) return;
    this.endTurn();
    const item =
      message.source === 'subagent'
        ? subagentCard(message)
        : h('li', { class: 'msg note', 'data-role': 'pending' }, h('span', { class: 'who' }, `Agent (${message.source})`), h('p', {}, message.content));
    item.dataset.pendingKey = key;
    this.add(item);
  }

  /** Renders one chat event (live or from history). */
  event(event: ChatEvent): void {
    switch (event.type) {
      case 'text':
        if (event.name === 'user') {
          this.user(event.content, event.message_id);
          return;
        }
        this.appendText(event.content);
        if (event.cut) {
          this.text?.body.after(h('span', { class: 'cut' }, '(cut short)'));
          this.endTurn();
        }
        return;
      case 'tool_use': {
        this.endTurn();
        const web = webCard(event.name, event.input);
        if (web) {
          this.add(web);
          return;
        }
        let input = event.input;
        try {
          input = JSON.stringify(JSON.parse(event.input), null, 2);
        } catch {
          /* shown as sent */
        }
        this.add(h('li', { class: 'msg tool', 'data-role': 'tool' }, h('details', {}, h('summary', {}, `Tool: ${event.name}`), h('pre', {}, input))));
        return;
      }
      case 'file':
        this.endTurn();
        this.add(fileCard(event.path, event.caption));
        return;
      case 'error':
        this.endTurn();
        if (event.content === STOPPED) {
          this.stopped();
          return;
        }
        this.add(h('li', { class: 'msg error', role: 'alert', 'data-role': 'error' }, `Error: ${event.content}`));
        return;
      case 'compaction':
        this.endTurn();
        this.add(compactionEntry(event));
        return;
      case 'stream_meta':
      case 'keepalive':
        return;
      case 'done':
        this.endTurn();
        return;
    }
  }

  private appendText(delta: string): void {
    if (!this.text) {
      const body = h('div', { class: 'body markdown' });
      const bar = h('div', { class: 'msg-tools' });
      const text = { body, bar, raw: '', queued: false };
      bar.append(copyButton('Copy this reply', () => text.raw));
      this.add(h('li', { class: 'msg assistant', 'data-role': 'assistant' }, h('span', { class: 'who' }, 'Agent'), body, bar));
      this.text = text;
    }
    this.text.raw += delta;
    const text = this.text;
    // Deltas arrive faster than frames: render once per frame, the whole text so far.
    if (text.queued) return;
    text.queued = true;
    requestAnimationFrame(() => this.render(text));
  }

  private render(text: { body: HTMLElement; bar: HTMLElement; raw: string; queued: boolean }): void {
    text.queued = false;
    text.body.replaceChildren(renderMarkdown(text.raw));
    this.grew();
  }

  /** Ends the assistant message in progress (rendering what it has at once). */
  endTurn(): void {
    const text = this.text;
    if (text?.queued) this.render(text);
    this.text = null;
    if (text) collapseIfLong(text.body, text.bar, text.raw.length);
    this.placeRegenerate();
  }

  /** Regenerate sits on the last reply of the last exchange (also when it was stopped or cut off). */
  private placeRegenerate(): void {
    let bar: Element | null = null;
    for (let li = this.el.lastElementChild; li && li.getAttribute('data-role') !== 'user'; li = li.previousElementSibling) {
      if (li.getAttribute('data-role') === 'assistant') {
        bar = li.querySelector('.msg-tools');
        break;
      }
    }
    if (bar && this.actions && this.text === null) bar.append(this.regenerate);
    else this.regenerate.remove();
  }

  /** While a reply streams there is nothing to regenerate yet. */
  setBusy(busy: boolean): void {
    this.regenerate.disabled = busy;
  }

  /**
   * A reply stopped on request (live, or its marker in history). History also flags the partial
   * text as cut; "stopped" says more, so the generic "(cut short)" note before it goes.
   */
  private stopped(): void {
    const last = this.el.lastElementChild;
    if (last?.getAttribute('data-role') === 'assistant') {
      last.querySelector('.cut')?.remove();
      last.setAttribute('data-stopped', 'true');
    }
    this.add(h('li', { class: 'msg stopped', 'data-role': 'stopped' }, 'Reply stopped.'));
    this.placeRegenerate();
  }

  /** The reply in progress was lost with the connection (the agent restarted, or never came back). */
  cutOff(): void {
    this.endTurn();
    const last = this.el.lastElementChild;
    if (last?.getAttribute('data-role') === 'assistant') last.setAttribute('data-cut-off', 'true');
    this.add(h('li', { class: 'msg stopped', 'data-role': 'cut-off' }, 'The reply was cut off: the connection to your agent was lost.'));
  }
}
