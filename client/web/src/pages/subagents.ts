/**
 * Subagents: `GET /subagents` through the REST proxy, refreshed every 3 s while one is running
 * (live status); a run's detail (`GET /subagents/{id}`) and stop (`POST …/stop`). An agent
 * without subagents answers 404: the page says the feature is not available on this agent.
 */
import { agentJson, ApiError } from '../api.js';
import type { SubagentDetail, SubagentSummary } from '../agent/types.js';
import { alertBox, h, pageHeading } from '../dom.js';
import { onLeave } from '../router.js';

const LIVE_MS = 3_000;
const IDLE_MS = 15_000;

export const notAvailable = (what: string) =>
  h('p', { class: 'unavailable', 'data-testid': 'not-available', role: 'status' }, `${what} are not available on this agent yet.`);

const when = (epochSeconds: number | null) => (epochSeconds ? new Date(epochSeconds * 1000).toLocaleString() : '—');

export function subagentsPage(): HTMLElement {
  const alert = alertBox();
  const listBox = h('div', { 'data-testid': 'subagents' }, h('p', {}, 'Loading…'));
  const detailTitle = h('h2', { id: 'subagent-detail-title' }, 'Details');
  const detailBody = h('div', {}, h('p', {}, 'Choose a run to see its task and result.'));
  const detail = h('section', { 'aria-labelledby': 'subagent-detail-title' }, detailTitle, detailBody);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let left = false;
  onLeave(() => {
    left = true;
    clearTimeout(timer);
  });

  async function stop(run: SubagentSummary | SubagentDetail, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    try {
      const answer = await agentJson<{ status: string; message: string }>(`/subagents/${encodeURIComponent(run.id)}/stop`, { method: 'POST' });
      alert.show(answer.message);
      await load();
    } catch (error) {
      button.disabled = false;
      alert.fail(error);
    }
  }

  async function showDetail(id: string): Promise<void> {
    try {
      const run = await agentJson<SubagentDetail>(`/subagents/${encodeURIComponent(id)}`);
      detailTitle.textContent = `Details: ${run.label}`;
      const stopButton = h('button', { type: 'button', class: 'danger' }, 'Stop');
      stopButton.onclick = () => stop(run, stopButton);
      detailBody.replaceChildren(
        h(
          'dl',
          {},
          h('dt', {}, 'Status'),
          h('dd', {}, h('span', { class: `badge ${run.status}` }, run.status)),
          h('dt', {}, 'Task'),
          h('dd', {}, run.task),
          h('dt', {}, 'Persona'),
          h('dd', {}, run.persona || '—'),
          h('dt', {}, 'Chat'),
          h('dd', {}, run.chat_id),
          h('dt', {}, 'Started'),
          h('dd', {}, when(run.started_at)),
          h('dt', {}, 'Completed'),
          h('dd', {}, when(run.completed_at)),
          h('dt', {}, 'Duration'),
          h('dd', {}, `${Math.round(run.duration)} s`),
        ),
        run.error ? h('p', { role: 'alert' }, `Error: ${run.error}`) : '',
        run.result ? h('pre', { class: 'preview-text', tabIndex: 0 }, run.result) : '',
        run.status === 'running' ? stopButton : '',
      );
    } catch (error) {
      alert.fail(error);
    }
  }

  async function load(): Promise<void> {
    clearTimeout(timer);
    try {
      const { subagents } = await agentJson<{ subagents: SubagentSummary[] }>('/subagents');
      listBox.replaceChildren(
        subagents.length === 0
          ? h('p', {}, 'No subagent runs in the last hour. Your agent starts them for longer tasks.')
          : h(
              'ul',
              { class: 'runs' },
              ...subagents.map((run) => {
                const open = h('button', { type: 'button', class: 'link' }, run.label || run.id);
                open.onclick = () => showDetail(run.id);
                const stopButton = h('button', { type: 'button', class: 'small danger' }, 'Stop');
                stopButton.onclick = () => stop(run, stopButton);
                return h(
                  'li',
                  { 'data-status': run.status },
                  h('span', { class: `badge ${run.status}` }, run.status),
                  ' ',
                  open,
                  h('p', { class: 'muted' }, run.result_preview ?? run.error ?? run.task),
                  run.status === 'running' ? stopButton : '',
                );
              }),
            ),
      );
      if (!left) timer = setTimeout(() => void load(), subagents.some((r) => r.status === 'running') ? LIVE_MS : IDLE_MS);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return void listBox.replaceChildren(notAvailable('Subagents'));
      listBox.replaceChildren();
      alert.fail(error);
    }
  }

  void load();
  return h('div', {}, pageHeading('Subagents'), alert.el, h('section', { 'aria-label': 'Runs' }, listBox), detail);
}
