/**
 * A compaction in a chat's history: older messages the model summarised in a long chat, shown as
 * one collapsed entry, "Earlier messages summarised", that expands to the summary the agent now
 * works from and the stored original messages (as text only; a reply's Markdown through the
 * sanitizer).
 */
import { h } from '../dom.js';
import { renderMarkdown } from './markdown.js';
import type { ChatEvent } from './types.js';

/** A compaction: the summary the agent now works from, and the stored messages it replaced, collapsed. */
export function compactionEntry(event: Extract<ChatEvent, { type: 'compaction' }>): HTMLElement {
  const originals = event.messages.map((message) => {
    switch (message.type) {
      case 'text':
        return message.name === 'user'
          ? h('li', { class: 'msg user', 'data-role': 'user' }, h('span', { class: 'who' }, 'You'), h('p', { class: 'body' }, message.content))
          : h(
              'li',
              { class: 'msg assistant', 'data-role': 'assistant' },
              h('span', { class: 'who' }, 'Agent'),
              h('div', { class: 'body markdown' }, renderMarkdown(message.content)),
            );
      case 'tool_use':
        return h('li', { class: 'msg tool', 'data-role': 'tool' }, `Tool: ${message.name}`);
      case 'file':
        return h('li', { class: 'msg tool', 'data-role': 'file' }, `File: ${message.path}`);
      default:
        return h('li', { class: 'msg error', 'data-role': 'error' }, `Error: ${message.content}`);
    }
  });
  return h(
    'li',
    { class: 'msg compaction', 'data-role': 'compaction', 'data-testid': 'compaction' },
    h(
      'details',
      {},
      h('summary', {}, `Earlier messages summarised (${event.messages.length})`),
      h('div', { class: 'body markdown', 'aria-label': 'Summary' }, renderMarkdown(event.content)),
      h('ol', { class: 'messages originals', 'aria-label': 'The original messages' }, ...originals),
    ),
  );
}
