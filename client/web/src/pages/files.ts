/**
 * Files: the workspace tree (`agent.files.tree`), upload with a progress bar (XMLHttpRequest to
 * the REST proxy), download and preview (fetch → blob through the proxy).
 */
import { api, isSessionError } from '../api.js';
import { downloadFile, previewFile, uploadFile } from '../agent/files.js';
import type { TreeNode } from '../agent/types.js';
import { alertBox, formatBytes, h, pageHeading } from '../dom.js';
import { onLeave } from '../router.js';
import { isGuest } from '../who.js';

const GUEST_UPLOAD_BYTES = 5 * 1024 * 1024;
const UPLOAD_BYTES = 50 * 1024 * 1024;

export function filesPage(): HTMLElement {
  const alert = alertBox();
  const treeBox = h('div', { class: 'tree', 'data-testid': 'file-tree' }, h('p', {}, 'Loading…'));
  const previewTitle = h('h2', { id: 'preview-title' }, 'Preview');
  const previewBody = h('div', { class: 'preview-body' }, h('p', {}, 'Choose a file to preview it.'));
  const preview = h('section', { class: 'preview', 'aria-labelledby': 'preview-title' }, previewTitle, previewBody);
  const controller = new AbortController();
  onLeave(() => controller.abort());

  async function show(path: string): Promise<void> {
    previewTitle.textContent = `Preview: ${path}`;
    const download = h('button', { type: 'button' }, 'Download');
    download.onclick = () => downloadFile(path).catch((error: unknown) => alert.fail(error));
    previewBody.replaceChildren(h('p', {}, 'Loading…'));
    try {
      previewBody.replaceChildren(h('div', { class: 'row' }, download), await previewFile(path));
    } catch (error) {
      previewBody.replaceChildren(h('div', { class: 'row' }, download));
      alert.fail(error);
    }
  }

  const nodeList = (nodes: TreeNode[]): HTMLElement =>
    h(
      'ul',
      {},
      ...nodes.map((node) => {
        if (node.type === 'dir') {
          const details = h(
            'details',
            { open: true },
            h('summary', {}, `${node.name}/`),
            node.children?.length ? nodeList(node.children) : h('p', { class: 'muted' }, 'empty'),
          );
          return h('li', { 'data-path': node.path }, details);
        }
        const button = h('button', { type: 'button', class: 'file-link', 'data-path': node.path }, node.name);
        button.onclick = () => show(node.path);
        return h('li', {}, button, h('span', { class: 'muted' }, ` ${formatBytes(node.size ?? 0)}`));
      }),
    );

  async function loadTree(): Promise<void> {
    try {
      const { tree } = await api.agent.files.tree.query({});
      treeBox.replaceChildren(tree.length ? nodeList(tree) : h('p', {}, 'Your workspace is empty. Upload a file, or ask your agent to write one.'));
    } catch (error) {
      treeBox.replaceChildren();
      alert.fail(error);
    }
  }

  // ----- upload -----
  const fileInput = h('input', { type: 'file', id: 'upload-file', name: 'file', required: true });
  const dirInput = h('input', {
    type: 'text',
    id: 'upload-dir',
    name: 'path',
    value: 'uploads',
    defaultValue: 'uploads',
    autocomplete: 'off',
    spellcheck: false,
  });
  const progress = h('progress', { max: 1, value: 0, hidden: true, 'aria-label': 'Upload progress', id: 'upload-progress' });
  const uploadStatus = h('p', { role: 'status', 'data-testid': 'upload-status' });
  const submit = h('button', { type: 'submit' }, 'Upload');
  const form = h(
    'form',
    { class: 'upload', 'aria-label': 'Upload a file' },
    h('div', { class: 'field' }, h('label', { for: 'upload-file' }, 'File'), fileInput),
    h('div', { class: 'field' }, h('label', { for: 'upload-dir' }, 'Folder'), dirInput),
    h('div', { class: 'row' }, submit),
    progress,
    uploadStatus,
  );
  form.onsubmit = async (e) => {
    e.preventDefault();
    const file = fileInput.files?.[0];
    if (!file) return;
    alert.clear();
    const cap = isGuest() ? GUEST_UPLOAD_BYTES : UPLOAD_BYTES;
    if (file.size > cap) {
      alert.show(
        `${file.name} is ${formatBytes(file.size)}; the limit is ${formatBytes(cap)}${isGuest() ? ' for guests (sign in to upload up to 50 MB)' : ''}.`,
      );
      return;
    }
    submit.disabled = true;
    progress.hidden = false;
    progress.value = 0;
    uploadStatus.textContent = `Uploading ${file.name}…`;
    try {
      const result = await uploadFile(file, dirInput.value.trim(), (fraction) => (progress.value = fraction), controller.signal);
      progress.value = 1;
      uploadStatus.textContent = `Uploaded ${result.path} (${formatBytes(result.size)}).`;
      form.reset();
      await loadTree();
    } catch (error) {
      uploadStatus.textContent = '';
      if (!isSessionError(error)) alert.fail(error);
    } finally {
      submit.disabled = false;
      progress.hidden = true;
    }
  };

  const refresh = h('button', { type: 'button' }, 'Refresh');
  refresh.onclick = () => void loadTree();
  void loadTree();
  return h(
    'div',
    { class: 'files-page' },
    pageHeading('Files'),
    alert.el,
    h('section', { 'aria-labelledby': 'upload-title' }, h('h2', { id: 'upload-title' }, 'Upload'), form),
    h('section', { 'aria-labelledby': 'tree-title' }, h('div', { class: 'row spread' }, h('h2', { id: 'tree-title' }, 'Workspace'), refresh), treeBox),
    preview,
  );
}
