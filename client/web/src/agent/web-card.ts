/**
 * The agent's web tools in the transcript (`tool_use` events of `web_fetch` and `web_search`): a
 * card saying what it read or searched for, instead of the raw JSON of other tool calls. The URL
 * is a link only when it is http(s), opened in a new tab without the opener or the referrer; the
 * query and any other text only ever become text nodes.
 */
import { h } from '../dom.js';

/** The card for a web tool call, or null when `name` is another tool or its input is not what the tool takes. */
export function webCard(name: string, input: string): HTMLElement | null {
  if (name !== 'web_fetch' && name !== 'web_search') return null;
  let args: { url?: unknown; query?: unknown };
  try {
    args = JSON.parse(input) as typeof args;
  } catch {
    return null;
  }
  if (name === 'web_fetch' && typeof args.url === 'string') {
    const url = httpUrl(args.url);
    const target = url ? h('a', { href: url.href, target: '_blank', rel: 'noopener noreferrer nofollow' }, args.url) : h('code', {}, args.url);
    return card('web_fetch', 'Read a web page', h('p', { class: 'web-target' }, target));
  }
  if (name === 'web_search' && typeof args.query === 'string') {
    return card('web_search', 'Searched the web', h('p', { class: 'web-target' }, h('q', {}, args.query)));
  }
  return null;
}

function card(tool: string, title: string, target: HTMLElement): HTMLElement {
  return h('li', { class: 'msg tool web', 'data-role': 'tool', 'data-tool': tool }, h('span', { class: 'who' }, title), target);
}

function httpUrl(text: string): URL | null {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}
