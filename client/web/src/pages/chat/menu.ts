/**
 * The open chat's menu: Rename, Clear chat and Delete chat, each asking first in a box under the
 * chat's heading. Deleting names the chat, and its answer's button has focus, so Enter twice on
 * "Delete chat" deletes this one chat and leaves focus in the message box, not on another Delete.
 * Shown once the list says the open chat is in it.
 */
import { CHAT_TITLE_MAX_CHARS } from '@contracts/agent/chat-limits.js';
import { h } from '../../dom.js';
import { icon } from '../../icons.js';

export interface ChatMenuOptions {
  /** The open chat's title, as the list has it. */
  title(): string;
  /** Renames the chat (and closes `renameBox` once it did). */
  rename(title: string): Promise<void>;
  clear(): Promise<void>;
  delete(): Promise<void>;
  /** Back to the message box (after Cancel). */
  done(): void;
}

export class ChatMenu {
  readonly button = h('summary', { class: 'menu-button', 'data-testid': 'chat-menu', 'aria-label': 'Chat options' }, icon('more'));
  private readonly titleInput = h('input', { id: 'chat-title', name: 'title', maxLength: CHAT_TITLE_MAX_CHARS, required: true, autocomplete: 'off' });
  readonly renameBox: HTMLFormElement;
  readonly clearBox: HTMLElement;
  readonly deleteBox: HTMLElement;
  readonly menu: HTMLDetailsElement;

  constructor(opts: ChatMenuOptions) {
    const renameButton = h('button', { type: 'button', 'data-testid': 'rename-chat' }, 'Rename');
    const cancelRename = h('button', { type: 'button' }, 'Cancel');
    this.renameBox = h(
      'form',
      { class: 'confirm-box', hidden: true, 'aria-label': 'Rename this chat', 'data-testid': 'rename-form' },
      h('label', { for: 'chat-title' }, 'Chat title'),
      this.titleInput,
      h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Save'), cancelRename),
    );
    renameButton.onclick = () => {
      this.menu.open = false;
      this.titleInput.value = opts.title();
      this.renameBox.hidden = false;
      this.titleInput.select();
      this.titleInput.focus();
    };
    cancelRename.onclick = () => {
      this.renameBox.hidden = true;
      opts.done();
    };
    this.renameBox.onsubmit = (e) => {
      e.preventDefault();
      void opts.rename(this.titleInput.value);
    };

    const clearButton = h('button', { type: 'button', 'data-testid': 'clear-chat' }, 'Clear chat');
    const confirmClear = h('button', { type: 'button', class: 'danger' }, 'Clear');
    const cancelClear = h('button', { type: 'button' }, 'Cancel');
    this.clearBox = h(
      'div',
      { class: 'confirm-box', hidden: true, role: 'group', 'aria-label': 'Clear this chat', 'data-testid': 'clear-confirm' },
      h('p', {}, 'Clear this chat? Its messages are deleted for good (a running reply is stopped first).'),
      h('div', { class: 'row' }, confirmClear, cancelClear),
    );
    clearButton.onclick = () => {
      this.menu.open = false;
      this.deleteBox.hidden = true;
      this.clearBox.hidden = false;
      cancelClear.focus();
    };
    cancelClear.onclick = () => {
      this.clearBox.hidden = true;
      opts.done();
    };
    confirmClear.onclick = () => {
      this.clearBox.hidden = true;
      void opts.clear();
    };

    const deleteButton = h('button', { type: 'button', class: 'danger', 'data-testid': 'delete-chat' }, 'Delete chat');
    const question = h('p', {});
    const confirmDelete = h('button', { type: 'button', class: 'danger', 'data-testid': 'confirm-delete' }, 'Delete');
    const cancelDelete = h('button', { type: 'button' }, 'Cancel');
    this.deleteBox = h(
      'div',
      { class: 'confirm-box', hidden: true, role: 'group', 'aria-label': 'Delete this chat', 'data-testid': 'delete-confirm' },
      question,
      h('div', { class: 'row' }, confirmDelete, cancelDelete),
    );
    deleteButton.onclick = () => {
      this.menu.open = false;
      this.clearBox.hidden = true;
      question.textContent = `Delete “${opts.title()}”? The chat and its messages are deleted for good.`;
      this.deleteBox.hidden = false;
      confirmDelete.focus();
    };
    cancelDelete.onclick = () => {
      this.deleteBox.hidden = true;
      opts.done();
    };
    confirmDelete.onclick = () => {
      this.deleteBox.hidden = true;
      opts.done();
      void opts.delete();
    };

    this.menu = h(
      'details',
      { class: 'chat-menu', hidden: true },
      this.button,
      h('div', { class: 'menu', role: 'group', 'aria-label': 'Chat options' }, renameButton, clearButton, deleteButton),
    );
  }

  /** The menu is there only for a chat the list has. */
  show(shown: boolean): void {
    this.menu.hidden = !shown;
    if (!shown) this.menu.open = false;
  }

  /** Escape closes an open menu first; true when it did. */
  closeOnEscape(): boolean {
    if (!this.menu.open) return false;
    this.menu.open = false;
    this.button.focus();
    return true;
  }

  /** Another chat opens: no question about this one stays. */
  reset(): void {
    this.clearBox.hidden = true;
    this.deleteBox.hidden = true;
    this.renameBox.hidden = true;
  }
}
