/**
 * The chat page's message box: Enter sends, Shift+Enter starts a new line; Send turns into Stop
 * while a reply streams. Messages over the agent's bound are refused here, inline, with how much
 * to remove (no `maxLength`: the browser would cut a pasted message silently). Files attach from
 * the box (agent/attachments.ts: picker, drop, paste) and are uploaded to `uploads/` on Send and
 * named in the message.
 *
 * Nothing typed is lost: the box is the page's first focus (the router focuses it as the page
 * opens, so the first keystrokes land in it), a message sent while the chat loads (its agent
 * starting) waits in `queued` and goes, its attached files uploaded first, once the chat has
 * loaded, a message is not sent over a
 * running reply (it waits in the box until the reply ends or is stopped), and a message that
 * could not be sent goes back into the box.
 */
import { MESSAGE_MAX_CHARS } from '@contracts/agent/chat-limits.js';
import { Attachments } from '../../agent/attachments.js';
import { h } from '../../dom.js';
import { accountInfo, budgetSummary, onAccountRefresh } from '../../who.js';

export interface ComposerOptions {
  /** Whether the chat is loading (its agent may be starting): a message then waits. */
  loading(): boolean;
  /** Sends a message (the box is already empty). */
  send(message: string): Promise<void>;
  /** Says something in the page's status line ('' clears it). */
  say(text: string): void;
}

export class Composer {
  readonly input = h('textarea', {
    id: 'chat-input',
    name: 'message',
    rows: 2,
    required: true,
    placeholder: 'Ask your agent…',
    'aria-describedby': 'chat-input-error chat-input-hint',
    // The page's first focus (router.ts): typing works the moment the page is there.
    'data-autofocus': 'true',
  });
  readonly send = h('button', { type: 'submit', 'data-testid': 'send' }, 'Send');
  readonly stop = h('button', { type: 'button', hidden: true, 'data-testid': 'stop' }, 'Stop');
  private readonly error = h('p', { id: 'chat-input-error', class: 'field-error', 'data-testid': 'message-error', 'aria-live': 'polite' });
  private readonly queuedNote = h('p', { class: 'hint', 'data-testid': 'queued', 'aria-live': 'polite' });
  private readonly attachments = new Attachments(
    (message) => (this.error.textContent = message),
    () => this.updateSend(),
  );
  readonly form: HTMLFormElement;
  /** A message on its way to the agent: Send waits. */
  private sending = false;
  private fits = true;
  /** A message sent while the chat loads, sent once it has loaded. */
  private queued: string | undefined;
  /** Why nothing can be sent today (a guest's messages or the model budget are used up), if so. */
  private spent: string | undefined;

  constructor(private readonly opts: ComposerOptions) {
    const hint = h('p', { id: 'chat-input-hint', class: 'hint' }, 'Enter sends, Shift+Enter starts a new line, Escape stops the reply.');
    this.form = h(
      'form',
      { class: 'composer', 'aria-label': 'Send a message' },
      h('label', { for: 'chat-input', class: 'visually-hidden' }, 'Message'),
      this.attachments.list,
      h(
        'div',
        { class: 'composer-box' },
        this.attachments.button,
        this.attachments.input,
        this.input,
        h('div', { class: 'composer-actions' }, this.send, this.stop),
      ),
      this.error,
      this.queuedNote,
      hint,
    );
    this.attachments.wire(this.form, this.input);
    this.input.oninput = () => this.checkLength(this.input.value.trim());
    this.input.onkeydown = (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.form.requestSubmit();
      }
    };
    this.form.onsubmit = (e) => {
      e.preventDefault();
      void this.submit();
    };
  }

  /** A message is on its way to the agent. */
  get isSending(): boolean {
    return this.sending;
  }

  /** A reply streams: Stop instead of Send. */
  get replying(): boolean {
    return !this.stop.hidden;
  }

  focus(): void {
    this.input.focus();
  }

  /** Send turns into Stop while a reply streams; focus stays in the box. */
  streaming(on: boolean): void {
    const hadFocus = document.activeElement === this.stop || document.activeElement === this.send;
    this.stop.hidden = !on;
    this.send.hidden = on;
    this.stop.disabled = false;
    if (hadFocus) this.input.focus();
    this.form.setAttribute('aria-busy', String(on));
  }

  updateSend(): void {
    this.send.disabled = this.sending || !this.fits || this.spent !== undefined || this.attachments.busy;
  }

  setSending(on: boolean): void {
    this.sending = on;
    this.updateSend();
  }

  /** Nothing can be sent today: says why, next to the box, before anyone types. */
  showSpent(why: string): void {
    this.spent = why;
    this.error.textContent = why;
    this.updateSend();
  }

  /**
   * A guest who used today's messages, or anyone whose model budget is spent, sees why before
   * typing, not after: checked now and whenever the account's counts are read again.
   */
  watchSpent(): void {
    const check = () =>
      void accountInfo().then(
        ({ guest, usage }) => {
          const budget = budgetSummary(usage.model_tokens);
          if (guest && usage.messages_left_today === 0)
            this.showSpent(
              `You have sent today's ${usage.messages_per_day} guest messages. Link a sign-in method on the Account page to keep chatting, or come back tomorrow.`,
            );
          else if (budget?.spent) this.showSpent(`Your agent has used today's model budget. ${budget.detail}`);
        },
        () => undefined,
      );
    check();
    onAccountRefresh(check, () => this.form.isConnected);
  }

  /** A message that was not sent goes back into the box, unless something new was typed meanwhile. */
  restore(message: string): void {
    if (!this.input.value) this.input.value = message;
  }

  /** Whether the message fits; if not, says by how much, next to the field. */
  private checkLength(message: string): boolean {
    const over = message.length - MESSAGE_MAX_CHARS;
    this.fits = over <= 0;
    this.input.setAttribute('aria-invalid', String(!this.fits));
    this.updateSend();
    this.error.textContent = this.fits
      ? ''
      : `Your message is ${message.length.toLocaleString('en')} characters; the limit is ${MESSAGE_MAX_CHARS.toLocaleString('en')}. Remove ${over.toLocaleString('en')} to send it.`;
    return this.fits;
  }

  private async submit(): Promise<void> {
    const { input, attachments } = this;
    const typed = input.value.trim();
    if (!typed && attachments.count === 0) return;
    if (!this.checkLength(typed)) {
      input.focus();
      return;
    }
    // The message stays in the composer until it can go.
    if (this.send.disabled) return;
    // Not over a running reply (the agent would cut it): it waits for the reply to end, or Stop.
    if (this.replying) {
      this.opts.say('The agent is still replying: your message waits in the box. Stop the reply (Escape) to send it now.');
      return;
    }
    if (this.opts.loading()) {
      // Typing never waits for the agent: this goes (its files uploaded first) as soon as the chat has loaded.
      if (typed) this.queued = this.queued ? `${this.queued}\n\n${typed}` : typed;
      else this.queued ??= '';
      input.value = '';
      this.queuedNote.textContent =
        attachments.count > 0
          ? 'Your message and its files will be sent as soon as your agent is ready.'
          : 'Your message will be sent as soon as your agent is ready.';
      return;
    }
    const message = await this.withAttachments(typed);
    if (message === undefined) return;
    input.value = '';
    await this.opts.send(message);
  }

  /**
   * Files first (into uploads/), then the message naming them under `typed`; undefined when an
   * upload failed or the whole is too long (the files stay attached, the caller keeps the text).
   */
  private async withAttachments(typed: string): Promise<string | undefined> {
    const { attachments } = this;
    if (attachments.count === 0) return typed;
    this.opts.say('Uploading the attached files…');
    const uploading = attachments.upload();
    this.updateSend();
    const lines = await uploading.catch(() => undefined);
    this.updateSend();
    this.opts.say('');
    if (!lines) return undefined;
    const message = typed ? `${typed}\n\n${lines.join('\n')}` : lines.join('\n');
    if (!this.checkLength(message)) return undefined;
    attachments.clear();
    return message;
  }

  /** Once the chat has loaded: the message that waited for it goes. */
  sendQueued(): void {
    if (this.opts.loading() || this.sending || this.queued === undefined) return;
    const typed = this.queued;
    this.queued = undefined;
    this.queuedNote.textContent = '';
    void this.withAttachments(typed).then((message) => {
      if (message === undefined) this.restore(typed);
      else if (message) return this.opts.send(message);
    });
  }
}
