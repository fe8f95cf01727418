/**
 * A chat transcript: user and assistant messages, tool calls and files, rendered as events
 * arrive (a text delta extends the assistant message in progress). An ordered list inside a
 * role="log" region, so screen readers hear new messages without losing their place.
 *
 * Assistant text is Markdown, rendered through the sanitizer (markdown.ts); everything else (the
 * user's words, tool input, file names) only ever becomes text nodes. The list follows the
 * newest event while the reader is at the bottom; once they scroll up it stays put and offers
 * "Jump to latest" instead.
 */
import { STOPPED } from '@contracts/agent/chat-limits.js';
import { h } from '../dom.js';
import { downloadFile, previewFile } from './files.js';
import { renderMarkdown } from './markdown.js';
import type { ChatEvent } from './types.js';

/** How close to the bottom (px) still counts as reading the newest event. */
const NEAR_BOTTOM_PX = 48;

export class Transcript {
  /** The messages; `view` is the scrolling, focusable log around them. */
  private readonly el = h('ol', { class: 'messages' });
  readonly view = h('div', { class: 'transcript', role: 'log', 'aria-label': 'Conversation', 'data-testid': 'transcript', tabIndex: 0 }, this.el);
  readonly jump = h('button', { type: 'button', class: 'jump small', hidden: true, 'data-testid': 'jump-latest' }, 'Jump to latest ↓');
  /** The assistant message in progress, its raw text, and whether a render is queued. */
  private text: { body: HTMLElement; raw: string; queued: boolean } | null = null;
  private following = true;

  constructor() {
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

  user(content: string): HTMLElement {
    this.endTurn();
    // Sending is reading the newest: follow again.
    this.following = true;
    return this.add(h('li', { class: 'msg user', 'data-role': 'user' }, h('span', { class: 'who' }, 'You'), h('p', {}, content)));
  }

  note(content: string, source: string): void {
    this.endTurn();
    this.add(h('li', { class: 'msg note', 'data-role': 'pending' }, h('span', { class: 'who' }, `Agent (${source})`), h('p', {}, content)));
  }

  /** Renders one chat event (live or from history). */
  event(event: ChatEvent): void {
    switch (event.type) {
      case 'text':
        if (event.name === 'user') {
          this.user(event.content);
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
        this.add(this.fileCard(event.path, event.caption));
        return;
      case 'error':
        this.endTurn();
        if (event.content === STOPPED) {
          this.stopped();
          return;
        }
        this.add(h('li', { class: 'msg error', role: 'alert', 'data-role': 'error' }, `Error: ${event.content}`));
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
      this.add(h('li', { class: 'msg assistant', 'data-role': 'assistant' }, h('span', { class: 'who' }, 'Agent'), body));
      this.text = { body, raw: '', queued: false };
    }
    this.text.raw += delta;
    const text = this.text;
    // Deltas arrive faster than frames: render once per frame, the whole text so far.
    if (text.queued) return;
    text.queued = true;
    requestAnimationFrame(() => this.render(text));
  }

  private render(text: { body: HTMLElement; raw: string; queued: boolean }): void {
    text.queued = false;
    text.body.replaceChildren(renderMarkdown(text.raw));
    this.grew();
  }

  /** Ends the assistant message in progress (rendering what it has at once). */
  endTurn(): void {
    if (this.text?.queued) this.render(this.text);
    this.text = null;
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
  }

  /** The reply in progress was lost with the connection (the agent restarted, or never came back). */
  cutOff(): void {
    this.endTurn();
    const last = this.el.lastElementChild;
    if (last?.getAttribute('data-role') === 'assistant') last.setAttribute('data-cut-off', 'true');
    this.add(h('li', { class: 'msg stopped', 'data-role': 'cut-off' }, 'The reply was cut off: the connection to your agent was lost.'));
  }

  private fileCard(path: string, caption?: string): HTMLElement {
    const name = path.split('/').pop() || path;
    const preview = h('div', { class: 'file-preview' });
    const show = h('button', { type: 'button', class: 'small', 'aria-label': `Preview ${name}` }, 'Preview');
    show.onclick = async () => {
      show.disabled = true;
      try {
        preview.replaceChildren(await previewFile(path));
      } catch (error) {
        preview.replaceChildren(h('p', { role: 'alert' }, error instanceof Error ? error.message : 'Preview failed'));
      } finally {
        show.disabled = false;
      }
    };
    const save = h('button', { type: 'button', class: 'small', 'aria-label': `Download ${name}` }, 'Download');
    save.onclick = () =>
      downloadFile(path).catch((error: unknown) =>
        preview.replaceChildren(h('p', { role: 'alert' }, error instanceof Error ? error.message : 'Download failed')),
      );
    return h(
      'li',
      { class: 'msg file', 'data-role': 'file' },
      h('span', { class: 'who' }, 'File'),
      h('p', { class: 'file-name' }, h('code', {}, path)),
      caption ? h('p', { class: 'file-caption' }, caption) : null,
      h('div', { class: 'row' }, show, save),
      preview,
    );
  }
}
