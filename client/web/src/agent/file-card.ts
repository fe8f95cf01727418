/**
 * A file the agent sent in a chat (`file` events: `send_file`): its path and caption, and buttons
 * to preview it in the page or download it, both fetched through the REST proxy (files.ts).
 */
import { h } from '../dom.js';
import { downloadFile, previewFile } from './files.js';

export function fileCard(path: string, caption?: string): HTMLElement {
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
