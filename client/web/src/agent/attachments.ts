/**
 * Files attached from the message box: the paperclip (a file picker), dropping files on the
 * composer, and pasting a file (a screenshot). Each file is a chip, with its size and a Remove
 * button, until the message is sent.
 *
 * Sending uploads them first, into the workspace's `uploads/` folder through the same upload as
 * the Files page (`POST /files/upload`, agent/files.ts; a taken name gets a ` (n)` suffix), then
 * sends the message with one line per file: `Attached: uploads/report.pdf` (the path the upload
 * answered), so the agent can read them with its file tools and the transcript shows what went.
 * A file over the size limit is refused when it is added; an upload that fails (quota, size, the
 * connection) says why on its chip and in the box's error line, the message stays in the box
 * (nothing is sent), and files already uploaded are not uploaded twice on the next try.
 */
import { errorMessage } from '../api.js';
import { formatBytes, h } from '../dom.js';
import { icon } from '../icons.js';
import { isGuest } from '../who.js';
import { uploadFile } from './files.js';

/** Where attachments land in the workspace. */
export const ATTACH_DIR = 'uploads';
/** The proxy's limits (guests 5 MB, everyone else the agent's 50 MB): said before any byte goes. */
const GUEST_UPLOAD_BYTES = 5 * 1024 * 1024;
const UPLOAD_BYTES = 50 * 1024 * 1024;
/** At most this many files on one message. */
const MAX_FILES = 10;

interface Attached {
  file: File;
  chip: HTMLElement;
  status: HTMLElement;
  /** Set once uploaded: the workspace path. */
  path?: string;
}

/** The line the message carries for an attached file. */
export const attachedLine = (path: string) => `Attached: ${path}`;

export class Attachments {
  private readonly items: Attached[] = [];
  /** The chips, above the box; empty when nothing is attached. */
  readonly list = h('ul', { class: 'attachments', 'aria-label': 'Attached files', 'data-testid': 'attachments', hidden: true });
  private readonly picker = h('input', { type: 'file', multiple: true, hidden: true, 'data-testid': 'attach-input' });
  /** The paperclip. */
  readonly button = h(
    'button',
    { type: 'button', class: 'attach', 'aria-label': 'Attach files', title: 'Attach files', 'data-testid': 'attach' },
    icon('attach'),
  );
  private uploading = false;

  constructor(
    /** Where errors are said (the box's error line). */
    private readonly say: (message: string) => void,
    /** Called when the attachments change (Send may now go with no text). */
    private readonly changed: () => void,
  ) {
    this.button.onclick = () => this.picker.click();
    this.picker.onchange = () => {
      this.add([...(this.picker.files ?? [])]);
      this.picker.value = '';
    };
  }

  /** The picker's input, to be placed in the form. */
  get input(): HTMLInputElement {
    return this.picker;
  }

  /** Drop and paste on `target` (the composer) and `box` (the message box) attach files. */
  wire(target: HTMLElement, box: HTMLTextAreaElement): void {
    const hasFiles = (e: DragEvent) => [...(e.dataTransfer?.types ?? [])].includes('Files');
    target.addEventListener('dragover', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      target.dataset.drop = 'true';
    });
    target.addEventListener('dragleave', (e) => {
      if (!target.contains(e.relatedTarget as Node | null)) delete target.dataset.drop;
    });
    target.addEventListener('drop', (e) => {
      delete target.dataset.drop;
      if (!hasFiles(e)) return;
      e.preventDefault();
      this.add([...(e.dataTransfer?.files ?? [])]);
      box.focus();
    });
    box.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData?.files ?? [])];
      // Text pastes as text; only a pasted file becomes an attachment.
      if (files.length === 0) return;
      e.preventDefault();
      this.add(files);
    });
  }

  get count(): number {
    return this.items.length;
  }

  get busy(): boolean {
    return this.uploading;
  }

  add(files: File[]): void {
    const cap = isGuest() ? GUEST_UPLOAD_BYTES : UPLOAD_BYTES;
    const refused: string[] = [];
    for (const file of files) {
      if (this.items.length >= MAX_FILES) {
        refused.push(`At most ${MAX_FILES} files go with one message.`);
        break;
      }
      if (file.size > cap) {
        refused.push(
          `${file.name} is ${formatBytes(file.size)}; the limit is ${formatBytes(cap)}${isGuest() ? ' for guests (sign in to upload up to 50 MB)' : ''}.`,
        );
        continue;
      }
      this.items.push(this.chip(file));
    }
    this.say(refused.join(' '));
    this.render();
  }

  private chip(file: File): Attached {
    const status = h('span', { class: 'chip-status', 'aria-live': 'polite' });
    const remove = h('button', { type: 'button', class: 'small chip-remove', 'aria-label': `Remove ${file.name}`, 'data-testid': 'remove-attachment' }, '×');
    const chip = h(
      'li',
      { class: 'chip', 'data-testid': 'attachment' },
      h('span', { class: 'chip-name' }, file.name),
      h('span', { class: 'chip-size' }, formatBytes(file.size)),
      status,
      remove,
    );
    const item: Attached = { file, chip, status };
    remove.onclick = () => {
      if (this.uploading) return;
      const at = this.items.indexOf(item);
      if (at >= 0) this.items.splice(at, 1);
      this.render();
      // Focus stays in the composer: the next chip's Remove, else the paperclip.
      (this.list.querySelector<HTMLElement>('.chip-remove') ?? this.button).focus();
    };
    return item;
  }

  private render(): void {
    this.list.replaceChildren(...this.items.map((i) => i.chip));
    this.list.hidden = this.items.length === 0;
    this.changed();
  }

  /**
   * Uploads what is not uploaded yet and returns the message's lines for all of them; throws
   * (after saying why) when one fails, keeping every chip so that Send can try again.
   */
  async upload(): Promise<string[]> {
    this.uploading = true;
    this.button.disabled = true;
    try {
      for (const item of this.items) {
        if (item.path) continue;
        item.chip.dataset.state = 'uploading';
        item.status.textContent = 'Uploading…';
        try {
          const result = await uploadFile(item.file, ATTACH_DIR, (fraction) => (item.status.textContent = `Uploading… ${Math.round(fraction * 100)} %`));
          item.path = result.path;
          item.chip.dataset.state = 'uploaded';
          item.status.textContent = 'Uploaded';
        } catch (error) {
          item.chip.dataset.state = 'failed';
          const why = errorMessage(error);
          item.status.textContent = `Not uploaded: ${why}`;
          this.say(`${item.file.name} could not be uploaded: ${why} Your message is still in the box; remove the file or try again.`);
          throw error;
        }
      }
      return this.items.map((i) => attachedLine(i.path ?? ''));
    } finally {
      this.uploading = false;
      this.button.disabled = false;
    }
  }

  clear(): void {
    this.items.length = 0;
    this.render();
  }
}
