/**
 * Scheduled tasks (`agent.tasks.*` over tRPC, docs/web-client.md "Tasks"): each task with what it
 * does, its schedule and its next run in the user's own time zone (the browser's, which the layout
 * keeps on the account for the agent: who.ts `keepTimezone`), and buttons to pause, resume and delete.
 * Tasks are made in a chat ("remind me at 9 tomorrow"): the page says so when there are none.
 * Icons are inline SVG (no icon font, no image requests).
 */
import type { Task } from '@contracts/agent/tasks.js';
import { api } from '../api.js';
import { alertBox, h, pageHeading } from '../dom.js';
import { icon } from '../icons.js';
import { browserTimezone } from '../who.js';

function inZone(iso: string, zone: string): string {
  return new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone: zone }).format(new Date(iso));
}

function schedule(task: Task, zone: string): string {
  if (task.at) return `Once, ${inZone(task.at, zone)}`;
  return `Repeats: cron ${task.cron} (${task.timezone})`;
}

export function tasksPage(): HTMLElement {
  const alert = alertBox();
  const zone = browserTimezone();
  const listBox = h('div', { 'data-testid': 'tasks' }, h('p', {}, 'Loading…'));

  async function act(button: HTMLButtonElement, action: () => Promise<unknown>, done: string): Promise<void> {
    button.disabled = true;
    try {
      await action();
      alert.show(done);
      await load();
    } catch (error) {
      button.disabled = false;
      alert.fail(error);
    }
  }

  function row(task: Task): HTMLElement {
    const paused = task.status === 'paused';
    const toggle = h(
      'button',
      { type: 'button', class: 'small', 'aria-label': `${paused ? 'Resume' : 'Pause'}: ${task.prompt}` },
      icon(paused ? 'play' : 'pause', 16),
      paused ? ' Resume' : ' Pause',
    );
    toggle.onclick = () =>
      act(toggle, () => api.agent.tasks.update.mutate({ id: task.id, status: paused ? 'active' : 'paused' }), paused ? 'Task resumed.' : 'Task paused.');
    const remove = h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete: ${task.prompt}` }, icon('trash', 16), ' Delete');
    remove.onclick = () => act(remove, () => api.agent.tasks.delete.mutate({ id: task.id }), 'Task deleted.');
    const next = task.next_run_at ? `Next run: ${inZone(task.next_run_at, zone)}` : task.status === 'done' ? 'Ran' : 'Paused';
    return h(
      'li',
      { 'data-status': task.status, 'data-task': task.id },
      h('span', { class: `badge ${task.status}` }, task.status),
      ' ',
      h('strong', { class: 'task-prompt' }, task.prompt),
      h('p', { class: 'muted' }, schedule(task, zone)),
      h('p', { class: 'task-next', 'data-testid': 'next-run' }, next),
      h('div', { class: 'task-actions' }, task.status === 'done' ? '' : toggle, remove),
    );
  }

  async function load(): Promise<void> {
    try {
      const { tasks } = await api.agent.tasks.list.query();
      listBox.replaceChildren(
        tasks.length === 0
          ? h('p', {}, 'No scheduled tasks. Ask your agent in a chat, for example “remind me at 9 tomorrow to call the dentist”.')
          : h('ul', { class: 'runs tasks' }, ...tasks.map(row)),
      );
    } catch (error) {
      listBox.replaceChildren();
      alert.fail(error);
    }
  }

  void load();
  return h(
    'div',
    {},
    pageHeading('Tasks'),
    h('p', { class: 'muted' }, `Times are shown in your time zone, ${zone}.`),
    alert.el,
    h('section', { 'aria-label': 'Scheduled tasks' }, listBox),
  );
}
