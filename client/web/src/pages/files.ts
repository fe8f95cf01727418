/**
 * Files: the workspace tree (`agent.files.tree`), upload with a progress bar (XMLHttpRequest to
 * the REST proxy), download and preview (fetch → blob through the proxy), rename and delete
 * (`agent.files.move`, `agent.files.delete`), each asking first inline. An upload whose name is
 * taken in its folder asks: replace the file, or keep both (the new one then gets `name (1).ext`,
 * and the page says so); a file is never renamed without a word.
 */
import { api, errorCode, isSessionError } from '../api.js';
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

  /** Every file path of the tree last shown: what an upload would collide with. */
  let known = new Set<string>();
  const collect = (nodes: TreeNode[]) => {
    for (const node of nodes) {
      if (node.type === 'file') known.add(node.path);
      else if (node.children) collect(node.children);
    }
  };

  /** Delete, after an inline question whose answer has focus (Enter twice deletes this one file). */
  function askDelete(row: HTMLElement, path: string, name: string): void {
    const yes = h('button', { type: 'button', class: 'small danger', 'data-testid': 'confirm-delete-file' }, 'Delete');
    const no = h('button', { type: 'button', class: 'small' }, 'Cancel');
    const box = h(
      'div',
      { class: 'confirm-box', role: 'group', 'aria-label': `Delete ${name}` },
      h('p', {}, `Delete ${path}? This cannot be undone.`),
      h('div', { class: 'row' }, yes, no),
    );
    no.onclick = () => {
      box.remove();
      row.querySelector<HTMLElement>('.file-link')?.focus();
    };
    yes.onclick = async () => {
      yes.disabled = true;
      try {
        await api.agent.files.delete.mutate({ path });
        uploadStatus.textContent = `Deleted ${path}.`;
        await loadTree();
        treeTitle.focus();
      } catch (error) {
        yes.disabled = false;
        alert.fail(error);
      }
    };
    row.querySelector('.confirm-box')?.remove();
    row.append(box);
    yes.focus();
  }

  /** Rename (or move: the field holds the whole path); a taken name asks before replacing. */
  function askRename(row: HTMLElement, path: string, name: string): void {
    const field = h('input', { type: 'text', name: 'new-path', value: path, autocomplete: 'off', spellcheck: false, 'aria-label': `New name for ${name}` });
    const save = h('button', { type: 'submit', class: 'small' }, 'Rename');
    const cancel = h('button', { type: 'button', class: 'small' }, 'Cancel');
    const note = h('p', { role: 'status' });
    const form = h('form', { class: 'confirm-box', 'aria-label': `Rename ${name}` }, field, h('div', { class: 'row' }, save, cancel), note);
    let overwrite = false;
    cancel.onclick = () => {
      form.remove();
      row.querySelector<HTMLElement>('.file-link')?.focus();
    };
    field.oninput = () => {
      overwrite = false;
      save.textContent = 'Rename';
      note.textContent = '';
    };
    form.onsubmit = async (e) => {
      e.preventDefault();
      const to = field.value.trim().replace(/^\/+/, '');
      if (!to || to === path) return cancel.click();
      save.disabled = true;
      try {
        const moved = await api.agent.files.move.mutate({ from: path, to, overwrite });
        uploadStatus.textContent = `Renamed ${path} to ${moved.path}.`;
        await loadTree();
        treeTitle.focus();
      } catch (error) {
        if (errorCode(error) === 'FILE_EXISTS' && !overwrite) {
          overwrite = true;
          save.textContent = 'Replace it';
          note.textContent = `${to} already exists. Replace it with ${name}, or choose another name.`;
        } else alert.fail(error);
      } finally {
        save.disabled = false;
      }
    };
    row.querySelector('.confirm-box')?.remove();
    row.append(form);
    field.focus();
    field.setSelectionRange(path.length - name.length, path.length);
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
        const rename = h('button', { type: 'button', class: 'small', 'aria-label': `Rename ${node.name}`, 'data-testid': 'rename-file' }, 'Rename');
        const remove = h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete ${node.name}`, 'data-testid': 'delete-file' }, 'Delete');
        const row = h(
          'li',
          { 'data-file': node.path },
          h('div', { class: 'row file-row' }, button, h('span', { class: 'muted' }, formatBytes(node.size ?? 0)), rename, remove),
        );
        rename.onclick = () => askRename(row, node.path, node.name);
        remove.onclick = () => askDelete(row, node.path, node.name);
        return row;
      }),
    );

  async function loadTree(): Promise<void> {
    try {
      const { tree } = await api.agent.files.tree.query({});
      known = new Set();
      collect(tree);
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
  const duplicateBox = h('div', { class: 'confirm-box', role: 'group', 'aria-label': 'The file exists', hidden: true, 'data-testid': 'upload-duplicate' });
  const form = h(
    'form',
    { class: 'upload', 'aria-label': 'Upload a file' },
    h('div', { class: 'field' }, h('label', { for: 'upload-file' }, 'File'), fileInput),
    h('div', { class: 'field' }, h('label', { for: 'upload-dir' }, 'Folder'), dirInput),
    h('div', { class: 'row' }, submit),
    duplicateBox,
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
    const dir = dirInput.value.trim().replace(/^\/+|\/+$/g, '') || 'uploads';
    const target = `${dir}/${file.name}`;
    if (known.has(target)) return askDuplicate(file, dir, target);
    await upload(file, dir, target, 'keep');
  };

  /** The name is taken in that folder: replace the file there, or keep both (the new one renamed, said so). */
  function askDuplicate(file: File, dir: string, target: string): void {
    const replace = h('button', { type: 'button', 'data-testid': 'upload-replace' }, 'Replace');
    const keep = h('button', { type: 'button', 'data-testid': 'upload-keep-both' }, 'Keep both');
    const cancel = h('button', { type: 'button' }, 'Cancel');
    duplicateBox.replaceChildren(
      h('p', {}, `${target} already exists. Replace it, or keep both (the new file gets a numbered name)?`),
      h('div', { class: 'row' }, replace, keep, cancel),
    );
    duplicateBox.hidden = false;
    const done = () => {
      duplicateBox.hidden = true;
      duplicateBox.replaceChildren();
    };
    replace.onclick = () => {
      done();
      void upload(file, dir, target, 'replace');
    };
    keep.onclick = () => {
      done();
      void upload(file, dir, target, 'keep');
    };
    cancel.onclick = () => {
      done();
      fileInput.focus();
    };
    replace.focus();
  }

  async function upload(file: File, dir: string, target: string, mode: 'replace' | 'keep'): Promise<void> {
    submit.disabled = true;
    progress.hidden = false;
    progress.value = 0;
    uploadStatus.textContent = `Uploading ${file.name}…`;
    try {
      const result = await uploadFile(file, dir, (fraction) => (progress.value = fraction), controller.signal);
      progress.value = 1;
      const size = formatBytes(result.size);
      if (result.path === target) uploadStatus.textContent = `Uploaded ${result.path} (${size}).`;
      else if (mode === 'replace') {
        // The upload never overwrites (it lands beside); the rename over the old file is one step.
        const moved = await api.agent.files.move.mutate({ from: result.path, to: target, overwrite: true });
        uploadStatus.textContent = `Replaced ${moved.path} (${size}).`;
      } else if (known.has(target)) uploadStatus.textContent = `Uploaded as ${result.path} (${size}): ${target} was already there and is unchanged.`;
      else uploadStatus.textContent = `Uploaded as ${result.path} (${size}): the name ${file.name} was taken or not allowed.`;
      form.reset();
      await loadTree();
    } catch (error) {
      uploadStatus.textContent = '';
      if (!isSessionError(error)) alert.fail(error);
    } finally {
      submit.disabled = false;
      progress.hidden = true;
    }
  }

  const refresh = h('button', { type: 'button' }, 'Refresh');
  // Focus lands here after a rename or delete (the row it was in is gone).
  const treeTitle = h('h2', { id: 'tree-title', tabIndex: -1 }, 'Workspace');
  refresh.onclick = () => void loadTree();
  void loadTree();
  return h(
    'div',
    { class: 'files-page' },
    pageHeading('Files'),
    alert.el,
    h('section', { 'aria-labelledby': 'upload-title' }, h('h2', { id: 'upload-title' }, 'Upload'), form),
    h('section', { 'aria-labelledby': 'tree-title' }, h('div', { class: 'row spread' }, treeTitle, refresh), treeBox),
    preview,
  );
}
