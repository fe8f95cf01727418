/**
 * A chat transcript: user and assistant messages, tool calls and files, rendered as events
 * arrive (a text delta extends the assistant message in progress). An ordered list with
 * role="log", so screen readers hear new messages without losing their place.
 */
import { STOPPED } from '../../../../server/agent/chat/limits.js';
import { h } from '../dom.js';
import { downloadFile, previewFile } from './files.js';
import type { ChatEvent } from './types.js';

export class Transcript {
  readonly el = h('ol', { class: 'transcript', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation', 'data-testid': 'transcript' });
  private text: HTMLElement | null = null;
  private textContent = '';

  clear(): void {
    this.el.replaceChildren();
    this.text = null;
  }

  private add(item: HTMLElement): HTMLElement {
    const atBottom = this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 40;
    this.el.append(item);
    if (atBottom) this.el.scrollTop = this.el.scrollHeight;
    return item;
  }

  user(content: string): HTMLElement {
    this.endTurn();
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
        if (!this.text) {
          this.textContent = '';
          const body = h('p', { class: 'body' });
          this.add(h('li', { class: 'msg assistant', 'data-role': 'assistant' }, h('span', { class: 'who' }, 'Agent'), body));
          this.text = body;
        }
        this.textContent += event.content;
        this.text.textContent = this.textContent;
        if (event.cut) this.text.after(h('span', { class: 'cut' }, '(cut short)'));
        if (event.cut) this.text = null;
        return;
      case 'tool_use': {
        this.text = null;
        let input = event.input;
        try {
          input = JSON.stringify(JSON.parse(event.input), null, 2);
        } catch {
          /* shown as sent */
        }
        this.add(
          h(
            'li',
            { class: 'msg tool', 'data-role': 'tool' },
            h('details', {}, h('summary', {}, `Tool: ${event.name}`), h('pre', {}, input)),
          ),
        );
        return;
      }
      case 'file':
        this.text = null;
        this.add(this.fileItem(event.path, event.caption));
        return;
      case 'error':
        this.text = null;
        if (event.content === STOPPED) return this.stopped();
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

  endTurn(): void {
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

  private fileItem(path: string, caption?: string): HTMLElement {
    const preview = h('div', { class: 'file-preview' });
    const show = h('button', { type: 'button', class: 'small' }, 'Preview');
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
    const save = h('button', { type: 'button', class: 'small' }, 'Download');
    save.onclick = () => downloadFile(path).catch((error: unknown) => preview.replaceChildren(h('p', { role: 'alert' }, error instanceof Error ? error.message : 'Download failed')));
    return h(
      'li',
      { class: 'msg file', 'data-role': 'file' },
      h('span', { class: 'who' }, 'File'),
      h('p', {}, h('code', {}, path), caption ? ` — ${caption}` : ''),
      h('div', { class: 'row' }, show, save),
      preview,
    );
  }
}
