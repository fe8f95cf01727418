/**
 * Memory (`agent.memory.*` over tRPC, docs/web-client.md "Memory"): what the agent keeps about
 * its user, in the two files it reads into every prompt. `MEMORY.md` is what the agent wrote
 * itself (and what the memory flush saves before a long chat is summarised); `USER.md` is what it
 * knows of its user. Each can be read, edited and saved, or deleted (asked first, inline). A file
 * larger than the API returns is shown in part and not offered for saving (that would cut it).
 */
import type { MemoryFile, MemoryFileName } from '@contracts/agent/memory.js';
import { api } from '../api.js';
import { alertBox, h, pageHeading } from '../dom.js';

const ABOUT: Record<MemoryFileName, string> = {
  'MEMORY.md': 'What your agent keeps: facts and decisions it wrote down, also before a long chat is summarised.',
  'USER.md': 'What your agent knows about you: your name, preferences, how you like answers.',
};

export function memoryPage(): HTMLElement {
  const alert = alertBox();
  const box = h('div', { 'data-testid': 'memory-files' }, h('p', {}, 'Loading…'));

  function section(file: MemoryFile): HTMLElement {
    const id = `memory-${file.name.replace(/\W/g, '-').toLowerCase()}`;
    const editor = h('textarea', { id, name: file.name, rows: 12, spellcheck: false, class: 'memory-text' });
    editor.value = file.content;
    const status = h('p', { role: 'status', class: 'muted', 'data-testid': `${id}-status` }, describe(file));
    const save = h('button', { type: 'button' }, 'Save');
    const remove = h('button', { type: 'button', class: 'danger' }, 'Delete');
    const confirm = h('div', { class: 'confirm-box', role: 'group', 'aria-label': `Delete ${file.name}?`, hidden: true });
    save.disabled = file.truncated;
    remove.disabled = !file.exists;
    save.onclick = async () => {
      save.disabled = true;
      try {
        const saved = await api.agent.memory.write.mutate({ name: file.name, content: editor.value });
        status.textContent = `Saved. ${describe(saved)}`;
        remove.disabled = false;
      } catch (error) {
        alert.fail(error);
      } finally {
        save.disabled = false;
      }
    };
    remove.onclick = () => {
      const yes = h('button', { type: 'button', class: 'danger' }, `Delete ${file.name}`);
      const no = h('button', { type: 'button' }, 'Cancel');
      confirm.replaceChildren(h('p', {}, `Delete ${file.name}? Your agent forgets what it holds.`), h('div', { class: 'row' }, yes, no));
      confirm.hidden = false;
      no.onclick = () => {
        confirm.hidden = true;
        remove.focus();
      };
      yes.onclick = async () => {
        yes.disabled = true;
        try {
          await api.agent.memory.delete.mutate({ name: file.name });
          editor.value = '';
          status.textContent = `Deleted ${file.name}.`;
          remove.disabled = true;
        } catch (error) {
          alert.fail(error);
        } finally {
          confirm.hidden = true;
          editor.focus();
        }
      };
      yes.focus();
    };
    return h(
      'section',
      { class: 'memory-file', 'aria-labelledby': `${id}-title`, 'data-file': file.name },
      h('h2', { id: `${id}-title` }, file.name),
      h('p', { class: 'muted' }, ABOUT[file.name]),
      h('label', { for: id }, `Contents of ${file.name}`),
      editor,
      status,
      h('div', { class: 'row' }, save, remove),
      confirm,
    );
  }

  async function load(): Promise<void> {
    try {
      const { files } = await api.agent.memory.get.query();
      box.replaceChildren(...files.map(section));
    } catch (error) {
      box.replaceChildren();
      alert.fail(error);
    }
  }

  void load();
  return h(
    'div',
    { class: 'memory-page' },
    pageHeading('Memory'),
    h(
      'p',
      { class: 'muted' },
      'Your agent reads these files at the start of every chat. Edit them to correct what it knows, or delete them to make it forget.',
    ),
    alert.el,
    box,
  );
}

function describe(file: MemoryFile): string {
  if (!file.exists) return 'No file yet: saving creates it.';
  const when = file.updated_at ? `, changed ${new Date(file.updated_at).toLocaleString()}` : '';
  const part = file.truncated ? ' Only its start is shown; edit it in Files.' : '';
  return `${file.size.toLocaleString()} bytes${when}.${part}`;
}
