/**
 * What each message of the transcript offers besides its text: Copy (its Markdown source, with a
 * visible "Copied"), and collapsing a long message behind "Show more" / "Show less".
 *
 * The buttons' visible words come from CSS (`data-label`, style.css) and their names from
 * `aria-label`, so a message's text (what `textContent` reads, and what is copied) is the
 * message alone, never "Copy" or "Show more".
 */
import { h } from '../dom.js';

/** Over this many characters a message is collapsed… */
export const COLLAPSE_CHARS = 3_000;
/** …and over this height (px) too, whatever its length (a long table, a tall code block). */
export const COLLAPSE_HEIGHT_PX = 1_200;
/** How long "Copied" stays. */
const COPIED_MS = 2_000;

/** A small button whose visible label is CSS (`data-label`), its name `aria-label`. */
export function toolButton(label: string, name: string, testid: string): HTMLButtonElement {
  return h('button', { type: 'button', class: 'msg-tool', 'data-label': label, 'aria-label': name, title: name, 'data-testid': testid });
}

/** Writes text to the clipboard; falls back to a selected textarea where the API is missing. */
async function copyText(text: string): Promise<void> {
  if (navigator.clipboard?.writeText) return navigator.clipboard.writeText(text);
  const area = h('textarea', { value: text, 'aria-hidden': 'true', class: 'visually-hidden' });
  document.body.append(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error('copy refused');
}

/** Copy: the source (`source()`, read at click time, so a streamed reply copies all it has). */
export function copyButton(name: string, source: () => string): HTMLElement {
  const button = toolButton('Copy', name, 'copy');
  // The confirmation is text in a status region: seen, and heard by screen readers.
  const said = h('span', { class: 'msg-tool-status', role: 'status', 'data-testid': 'copy-status' });
  let timer: ReturnType<typeof setTimeout> | undefined;
  button.onclick = async () => {
    clearTimeout(timer);
    try {
      await copyText(source());
      said.textContent = 'Copied';
    } catch {
      said.textContent = 'Could not copy: select the text and copy it yourself.';
    }
    timer = setTimeout(() => (said.textContent = ''), COPIED_MS);
  };
  return h('span', { class: 'msg-tool-group' }, button, said);
}

let collapsibleIds = 0;

/**
 * Collapses `body` (already in the page, so its height is known) when it is long, and adds a
 * "Show more" / "Show less" toggle to `bar`. Called again after the body changed: a toggle that
 * is there already stays, and one no longer needed goes.
 */
export function collapseIfLong(body: HTMLElement, bar: HTMLElement, chars: number): void {
  let toggle = bar.querySelector<HTMLButtonElement>('[data-testid="show-more"]');
  const expanded = toggle?.getAttribute('aria-expanded') === 'true';
  // Measured uncollapsed: the full height decides.
  if (!expanded) body.classList.remove('collapsed');
  const long = chars > COLLAPSE_CHARS || body.scrollHeight > COLLAPSE_HEIGHT_PX;
  if (!long) {
    toggle?.remove();
    return;
  }
  if (!body.id) body.id = `msg-body-${++collapsibleIds}`;
  if (!toggle) {
    toggle = toolButton('Show more', 'Show more', 'show-more');
    toggle.setAttribute('aria-controls', body.id);
    toggle.setAttribute('aria-expanded', 'false');
    const button = toggle;
    button.onclick = () => {
      const open = button.getAttribute('aria-expanded') !== 'true';
      button.setAttribute('aria-expanded', String(open));
      button.dataset.label = open ? 'Show less' : 'Show more';
      button.setAttribute('aria-label', open ? 'Show less' : 'Show more');
      button.title = open ? 'Show less' : 'Show more';
      body.classList.toggle('collapsed', !open);
      // Folding a long message back keeps its start in view, not the page far below it.
      if (!open) body.closest('li')?.scrollIntoView({ block: 'nearest' });
    };
    bar.prepend(toggle);
  }
  if (!expanded) body.classList.add('collapsed');
}
