/**
 * A fetched page as the model reads it: HTML through Mozilla's Readability (the reader view's
 * main-content extraction) on a linkedom DOM, then turndown to Markdown; text, JSON, XML and
 * other textual types as they are; a PDF's text (web-pdf.ts); anything else named by its type
 * and size. Scripts, styles and the like never reach the model: Readability drops them, and the
 * fallback (a page Readability finds no article in) converts the body with them removed. Loaded on
 * the first `web_fetch` (tools/web.ts): the libraries are large and most runs never read a page
 * (docs/agent.md, "Web tools").
 */
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';
import { pdfPage, type Page, type PdfReadOptions } from './web-pdf.js';

export type { Page };

const TEXTUAL = /^(text\/|application\/([\w.+-]*\+)?(json|xml|javascript|x-ndjson|yaml|x-yaml|csv))/i;

export async function readPage(bytes: Buffer, contentType: string, url: string, options: PdfReadOptions): Promise<Page> {
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  // Servers that do not name the type send a PDF as a download: its first bytes say what it is.
  if (
    type === 'application/pdf' ||
    type === 'application/x-pdf' ||
    ((!type || type === 'application/octet-stream') && bytes.subarray(0, 5).toString('latin1') === '%PDF-')
  )
    return pdfPage(bytes, options);
  const charset = /charset=["']?([\w-]+)/i.exec(contentType)?.[1];
  const text = decode(bytes, charset);
  if (type === 'text/html' || type === 'application/xhtml+xml' || (!type && /^\s*<(!doctype html|html)/i.test(text))) return htmlPage(text, url);
  if (TEXTUAL.test(type) || (!type && !bytes.includes(0))) return { title: '', text };
  return { title: '', text: `(${type || 'unknown type'}, ${bytes.length} bytes: not text, so not shown)` };
}

function decode(bytes: Buffer, charset: string | undefined): string {
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}

function htmlPage(html: string, url: string): Page {
  const { document } = parseHTML(html);
  // Relative links become absolute, so the model can follow them with web_fetch.
  for (const link of document.querySelectorAll('a[href]')) {
    const href = URL.parse(link.getAttribute('href') ?? '', url);
    if (href) link.setAttribute('href', href.href);
  }
  const title = (document.querySelector('title')?.textContent ?? '').trim();
  const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced' });
  turndown.remove(['svg' as keyof HTMLElementTagNameMap, 'script', 'style', 'noscript', 'iframe', 'object', 'embed', 'template', 'canvas', 'form']);
  const article = new Readability(document as unknown as Document).parse();
  if (article?.content) return { title: article.title?.trim() || title, text: turndown.turndown(article.content).trim() };
  // No article found; Readability has taken the document apart, so the page is read again whole.
  const body = parseHTML(html).document.querySelector('body');
  return { title, text: body ? turndown.turndown(body.innerHTML).trim() : '' };
}
