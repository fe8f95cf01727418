/**
 * A fetched page as the model reads it: HTML through Mozilla's Readability (the reader view's
 * main-content extraction) on a linkedom DOM, then turndown to Markdown; text, JSON, XML and
 * other textual types as they are; a PDF's text through pdf.js (unpdf's build of it, without its
 * worker: the parsing runs here, in the agent's sandbox); anything else named by its type and
 * size. Scripts, styles and the like never reach the model: Readability drops them, and the
 * fallback (a page Readability finds no article in) converts the body with them removed. Loaded on
 * the first `web_fetch` (tools/web.ts), pdf.js only at the first PDF: the libraries are large
 * and most runs never read a page (docs/agent.md, "Web tools").
 */
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';

export interface Page {
  title: string;
  text: string;
  /** What the reader left out (a PDF's pages past the cap or the time limit), for the answer's notes. */
  notes?: string[];
}

/** A PDF's pages read at most, and the time its text may take; what is left is named in a note. */
export const PDF_MAX_PAGES = 50;
export const PDF_READ_MS = 10_000;

export interface ReadOptions {
  /** The tool call's signal: a stopped run stops the reading too. */
  signal: AbortSignal;
  pdfReadMs?: number;
}

const TEXTUAL = /^(text\/|application\/([\w.+-]*\+)?(json|xml|javascript|x-ndjson|yaml|x-yaml|csv))/i;

export async function readPage(bytes: Buffer, contentType: string, url: string, options: ReadOptions): Promise<Page> {
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

/**
 * pdf.js with everything a hostile file could turn against the reader off: no `eval` of font
 * programs (CVE-2024-4367: a crafted font ran script in pdf.js), no fonts of the system or from a
 * URL, no fetching, no canvas. Text extraction decodes no image. pdf.js does its work in promise
 * jobs, so the time limit is checked between pages (a turn of the event loop after each lets its
 * timer fire); one page is bounded by the 5 MB the gateway passes and the sandbox's CPU and memory.
 */
async function pdfPage(bytes: Buffer, { signal, pdfReadMs = PDF_READ_MS }: ReadOptions): Promise<Page> {
  const { getResolvedPDFJS } = await import('unpdf');
  const { getDocument } = await getResolvedPDFJS();
  const stop = AbortSignal.any([signal, AbortSignal.timeout(pdfReadMs)]);
  const task = getDocument({
    // A copy: pdf.js may take the buffer over, and a small Buffer shares Node's pool with others.
    data: new Uint8Array(bytes),
    isEvalSupported: false,
    useSystemFonts: false,
    disableFontFace: true,
    useWorkerFetch: false,
    isOffscreenCanvasSupported: false,
    stopAtErrors: false,
    verbosity: 0,
  });
  const destroy = () => void task.destroy();
  stop.addEventListener('abort', destroy, { once: true });
  try {
    const pdf = await task.promise.catch((error: unknown) => ({ error }));
    if (signal.aborted) throw signal.reason;
    if ('error' in pdf) return { title: '', text: `(PDF, ${bytes.length} bytes: ${unreadable(pdf.error, stop.aborted, pdfReadMs)}, so its text is not shown)` };
    const info = (await pdf.getMetadata().catch(() => undefined))?.info as { Title?: unknown } | undefined;
    const title = typeof info?.Title === 'string' ? info.Title.trim() : '';
    const pages = Math.min(pdf.numPages, PDF_MAX_PAGES);
    const texts: string[] = [];
    let failed = 0;
    for (let number = 1; number <= pages && !stop.aborted; number++) {
      // A page pdf.js cannot read is left out, not the whole file.
      const content = await pdf
        .getPage(number)
        .then((page) => page.getTextContent())
        .catch(() => undefined);
      if (stop.aborted) break;
      if (content)
        texts.push(
          content.items
            .map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : ''))
            .join('')
            .trim(),
        );
      else failed++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (signal.aborted) throw signal.reason;
    const notes = [
      stop.aborted ? `reading the PDF stopped at the time limit of ${pdfReadMs / 1000} s after ${texts.length + failed} of its ${pdf.numPages} pages` : '',
      !stop.aborted && pdf.numPages > pages ? `the first ${pages} of the PDF's ${pdf.numPages} pages` : '',
      failed ? `${failed} of its pages could not be read` : '',
    ].filter(Boolean);
    const text = texts.filter(Boolean).join('\n\n');
    if (!text && !stop.aborted && !failed)
      return { title, text: `(PDF, ${pdf.numPages === 1 ? '1 page' : `${pdf.numPages} pages`} without text, as a scan is: nothing to show)` };
    return { title, text, notes };
  } finally {
    stop.removeEventListener('abort', destroy);
    await task.destroy();
  }
}

function unreadable(error: unknown, timedOut: boolean, readMs: number): string {
  if (timedOut) return `not opened within the time limit of ${readMs / 1000} s`;
  const { name, message } = error as Error;
  if (name === 'PasswordException') return 'encrypted with a password';
  if (name === 'InvalidPDFException') return `damaged or not a PDF (${message})`;
  return `not readable (${message})`;
}
