/**
 * Assistant text as Markdown: parsed by `marked`, then cleaned by DOMPurify before it touches the
 * page, so model output can never run script (no event handlers, no `javascript:` or `data:`
 * links, no forms, frames, styles or SVG). Code blocks are highlighted with highlight.js (only
 * a few common languages are bundled, to keep the page small) and get a copy button. Links
 * open in a new tab without handing it this page (`noopener noreferrer`).
 */
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { Marked } from 'marked';
import { h } from '../dom.js';

for (const [name, language] of Object.entries({ bash, css, javascript, json, python, sql, typescript, xml, yaml })) hljs.registerLanguage(name, language);
hljs.registerAliases(['sh', 'shell', 'zsh'], { languageName: 'bash' });
hljs.registerAliases(['js', 'jsx', 'mjs'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });

const marked = new Marked({ gfm: true, breaks: true, async: false });

/** What Markdown may produce, and nothing else. */
const ALLOWED_TAGS = [
  'p',
  'br',
  'hr',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'strong',
  'em',
  'del',
  's',
  'code',
  'pre',
  'blockquote',
  'ul',
  'ol',
  'li',
  'a',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
];
const ALLOWED_ATTR = ['href', 'title', 'start', 'align', 'class'];

const purify = DOMPurify(window);
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    const href = node.getAttribute('href') ?? '';
    // Web and mail links only; DOMPurify already drops `javascript:`, this drops the rest too.
    if (!/^(https?:|mailto:)/i.test(href)) node.removeAttribute('href');
    else {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer nofollow');
    }
  }
  // Classes only from the highlighter and marked's `language-*`, never chosen by the text.
  if (node.hasAttribute('class') && !/^(language-[\w+-]+|hljs[\w -]*)$/.test(node.getAttribute('class') ?? '')) node.removeAttribute('class');
});

/** Markdown → a sanitized fragment, code highlighted, each code block with a copy button. */
export function renderMarkdown(text: string): DocumentFragment {
  const html = marked.parse(text) as string;
  const fragment = purify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR, RETURN_DOM_FRAGMENT: true, ALLOW_DATA_ATTR: false, ALLOW_ARIA_ATTR: false });
  // The model's headings sit under the page's own (h1) and the message: h1 → h3 … h6.
  for (const heading of fragment.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
    const level = Math.min(6, Number(heading.tagName[1]) + 2);
    const lower = document.createElement(`h${level}`);
    lower.append(...heading.childNodes);
    heading.replaceWith(lower);
  }
  for (const code of fragment.querySelectorAll('pre > code')) {
    const language = /language-([\w+-]+)/.exec(code.className)?.[1];
    const source = code.textContent ?? '';
    if (language && hljs.getLanguage(language)) {
      // highlight.js escapes the source; its output is spans with `hljs-*` classes only.
      code.innerHTML = purify.sanitize(hljs.highlight(source, { language, ignoreIllegals: true }).value, { ALLOWED_TAGS: ['span'], ALLOWED_ATTR: ['class'] });
      code.classList.add('hljs');
    }
    const pre = code.parentElement as HTMLElement;
    const block = codeBlock(source, language);
    pre.before(block);
    pre.tabIndex = 0;
    block.append(pre);
  }
  return fragment;
}

/** The frame of a code block: its language and a copy button (the `pre` goes in after). */
function codeBlock(source: string, language: string | undefined): HTMLElement {
  const copy = h('button', { type: 'button', class: 'small copy', 'aria-label': `Copy ${language ?? 'code'}` }, 'Copy');
  copy.onclick = async () => {
    try {
      await navigator.clipboard.writeText(source);
      copy.textContent = 'Copied';
    } catch {
      copy.textContent = 'Copy failed';
    }
    setTimeout(() => (copy.textContent = 'Copy'), 2000);
  };
  return h('div', { class: 'code-block' }, h('div', { class: 'code-head' }, h('span', {}, language ?? 'code'), copy));
}
