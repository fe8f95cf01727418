/**
 * A subagent's result as a card in the chat whose run started it: its label and how it ended as
 * the headline, the result rendered as Markdown (through the sanitizer), folded by the reader,
 * and the run's id in a details line (with the Subagents page, where the whole run is).
 *
 * The card reads the agent's announcement (server/agent/subagents/registry.ts, `announcement`):
 * `Subagent "<label>" (<id>) completed:\n\n<result>`, `… timed out: <why>`, `… failed: <why>`,
 * `… was stopped.`, `… was interrupted (…)`. Anything else is shown whole, as Markdown.
 */
import { h } from '../dom.js';
import { go } from '../router.js';
import { renderMarkdown } from './markdown.js';
import type { PendingMessage } from './types.js';

const HEADLINE = /^Subagent "([\s\S]*?)" \(([\w-]+)\) (completed:|timed out:|failed:|was stopped\.|was interrupted)\s*/;

export interface SubagentOutcome {
  label: string;
  runId: string;
  status: 'completed' | 'timed out' | 'failed' | 'stopped' | 'interrupted';
  /** The result (completed) or the reason (the others), as Markdown. */
  text: string;
}

export function parseAnnouncement(content: string): SubagentOutcome | undefined {
  const match = HEADLINE.exec(content);
  if (!match) return undefined;
  const [whole, label = '', runId = '', verb = ''] = match;
  const status = verb.startsWith('completed')
    ? 'completed'
    : verb.startsWith('timed')
      ? 'timed out'
      : verb.startsWith('failed')
        ? 'failed'
        : verb.includes('stopped')
          ? 'stopped'
          : 'interrupted';
  const rest = content.slice(whole.length);
  return { label, runId, status, text: status === 'interrupted' ? rest.replace(/^\(|\)\.?$/g, '') : rest };
}

export function subagentCard(message: PendingMessage): HTMLElement {
  const outcome = parseAnnouncement(message.content);
  const title = outcome ? `Subagent “${outcome.label}” ${outcome.status}` : 'From a subagent';
  const body = h('div', { class: 'body markdown' }, renderMarkdown(outcome ? outcome.text || '(no result)' : message.content));
  const when = new Date(`${message.created_at}Z`);
  const runs = h('a', { href: '/subagents' }, 'All subagent runs');
  runs.onclick = (e) => {
    e.preventDefault();
    go('/subagents');
  };
  const details = h(
    'p',
    { class: 'card-details' },
    outcome ? `Run ${outcome.runId}` : '',
    Number.isNaN(when.getTime()) ? '' : `${outcome ? ' · ' : ''}${when.toLocaleString()}`,
    ' · ',
    runs,
  );
  return h(
    'li',
    { class: 'msg subagent-card', 'data-role': 'subagent', 'data-status': outcome?.status ?? 'unknown' },
    h('details', { open: true }, h('summary', {}, h('span', { class: 'card-title' }, title)), body, details),
  );
}
