/**
 * Editing a user message in place (transcript.ts): the bubble becomes a box with "Save and rerun"
 * and Cancel; saving asks the page to send the new text as a replacement of that message and
 * everything after it (refused, with a note, while a reply runs). Escape in the box cancels the
 * edit only, never the page's reply.
 */
import { h } from '../dom.js';

/** What the page does for an edit (TranscriptActions). */
export interface ReplaceActions {
  edit(messageId: string, text: string): void;
  canReplace(): boolean;
}

/** Edit in place: the bubble becomes a box; sending replaces message `id` and everything after it. */
export function editInPlace(
  { item, content, body, bar }: { item: HTMLElement; content: string; body: HTMLElement; bar: HTMLElement },
  id: string,
  actions: ReplaceActions,
): void {
  const box = h('textarea', { class: 'edit-box', value: content, rows: Math.min(12, content.split('\n').length + 1), 'aria-label': 'Edit your message' });
  const save = h('button', { type: 'submit', 'data-testid': 'edit-save' }, 'Save and rerun');
  const cancel = h('button', { type: 'button', 'data-testid': 'edit-cancel' }, 'Cancel');
  const note = h('p', { class: 'hint', 'aria-live': 'polite' }, 'Saving replaces this message and everything after it, and the agent replies again.');
  const form = h('form', { class: 'edit-form', 'aria-label': 'Edit message' }, box, note, h('div', { class: 'row' }, save, cancel));
  const close = () => {
    form.remove();
    body.hidden = false;
    bar.hidden = false;
    bar.querySelector<HTMLElement>('[data-testid="edit"]')?.focus();
  };
  cancel.onclick = close;
  box.onkeydown = (e) => {
    if (e.key === 'Escape') {
      // Not the page's Escape (which stops a reply): this one only cancels the edit.
      e.preventDefault();
      close();
    } else if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  };
  form.onsubmit = (e) => {
    e.preventDefault();
    const text = box.value.trim();
    if (!text) return;
    if (!actions.canReplace()) {
      note.textContent = 'The agent is still replying: stop the reply first, then save the edit.';
      return;
    }
    actions.edit(id, text);
  };
  body.hidden = true;
  bar.hidden = true;
  item.append(form);
  box.focus();
  box.setSelectionRange(box.value.length, box.value.length);
}
