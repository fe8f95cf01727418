/**
 * A fetched PDF as the model reads it: the title from its metadata and its pages' text, through
 * pdf.js (the unpdf package's build, which needs no worker file) in a worker thread started for
 * each PDF (docs/agent.md, "Web tools"; docs/security.md, "The web tools").
 *
 * Why a thread: pdf.js does its work in promise jobs, so one crafted page (a compressed content
 * stream of millions of operators: 200 KB took 28 s) would hold the agent's event loop, its chat
 * stream and the tool call with it, beyond any timer. The thread is ended at the time limit
 * whatever it is doing, a stopped run ends it too, and its heap has a cap of its own. pdf.js is
 * never loaded into the agent's own thread: an agent's start and its memory between PDFs stay as
 * they were, and the parsing stays in the agent's sandbox, not in the account service.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface Page {
  title: string;
  text: string;
  /** What the reader left out (a PDF's pages past the cap or the time limit), for the answer's notes. */
  notes?: string[];
}

/** A PDF's pages read at most, and the time its text may take; what is left is named in a note. */
export const PDF_MAX_PAGES = 50;
export const PDF_READ_MS = 10_000;
/** The reading thread's heap (not the buffers it inflates: `pdfPage`); past it the thread dies and the answer says so. */
const PDF_HEAP_MB = 256;

/**
 * How pdf.js opens every PDF: no `eval` of font programs (CVE-2024-4367: a crafted font ran
 * script through it), no fonts of the system, no fetching (no URL is given for fonts, character
 * maps or a worker, so none is read), no canvas. Text extraction decodes no image and pdf.js's
 * core runs no PDF JavaScript.
 */
export const PDF_OPTIONS = {
  isEvalSupported: false,
  useSystemFonts: false,
  disableFontFace: true,
  useWorkerFetch: false,
  isOffscreenCanvasSupported: false,
  stopAtErrors: false,
  verbosity: 0,
} as const;

export interface PdfReadOptions {
  /** The tool call's signal: a stopped run stops the reading too. */
  signal: AbortSignal;
  pdfReadMs?: number;
}

type FromReader =
  | { kind: 'failed'; name: string; message: string }
  | { kind: 'opened'; title: unknown; pages: number }
  /** One page's text, null when pdf.js could not read that page. */
  | { kind: 'page'; text: string | null }
  | { kind: 'done' };

// One CommonJS script, not a module file: the agent runs from a bundle, which has no file of its
// own for a worker. It loads unpdf from node_modules by the path the agent resolved.
const READER = `
const { parentPort, workerData } = require('node:worker_threads');
const { unpdf, bytes, options, maxPages } = workerData;
require(unpdf).getResolvedPDFJS().then(async ({ getDocument }) => {
  const pdf = await getDocument({ ...options, data: bytes }).promise.catch((error) => {
    parentPort.postMessage({ kind: 'failed', name: String(error && error.name), message: String(error && error.message) });
  });
  if (!pdf) return;
  const metadata = await pdf.getMetadata().catch(() => undefined);
  parentPort.postMessage({ kind: 'opened', title: metadata && metadata.info && metadata.info.Title, pages: pdf.numPages });
  for (let number = 1; number <= Math.min(pdf.numPages, maxPages); number++) {
    const text = await pdf.getPage(number).then((page) => page.getTextContent()).then(
      ({ items }) => items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\\n' : '') : '')).join('').trim(),
      () => null,
    );
    parentPort.postMessage({ kind: 'page', text });
  }
  parentPort.postMessage({ kind: 'done' });
});
`;

type Ending = { kind: 'done' | 'time' | 'stopped' } | { kind: 'failed'; name: string; message: string } | { kind: 'crashed'; error: Error };

/**
 * One PDF at a time per agent. The heap cap does not bound a reading's memory: the streams pdf.js
 * inflates are buffers outside that heap (a 0.8 MB PDF inflating to 800 MB took a reader to 1.7 GB),
 * so a page asking the model to fetch five PDFs at once gets them read one after another, each
 * within its time limit, and the agent's own memory limit is what ends a bomb.
 */
let reading: Promise<unknown> = Promise.resolve();

export function pdfPage(bytes: Buffer, options: PdfReadOptions): Promise<Page> {
  const turn = reading.then(() => readPdf(bytes, options));
  reading = turn.catch(() => undefined);
  return turn;
}

async function readPdf(bytes: Buffer, { signal, pdfReadMs = PDF_READ_MS }: PdfReadOptions): Promise<Page> {
  signal.throwIfAborted();
  const reader = new Worker(READER, {
    eval: true,
    // A copy of the bytes, so the reader owns its own.
    workerData: { unpdf: createRequire(import.meta.url).resolve('unpdf'), bytes: new Uint8Array(bytes), options: PDF_OPTIONS, maxPages: PDF_MAX_PAGES },
    resourceLimits: { maxOldGenerationSizeMb: PDF_HEAP_MB },
    // What pdf.js prints is not the agent's log.
    stdout: true,
    stderr: true,
  });
  reader.stdout.resume();
  reader.stderr.resume();
  let opened: { title: string; pages: number } | undefined;
  const texts: Array<string | null> = [];
  const ending = await new Promise<Ending>((resolve) => {
    const end = (how: Ending) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', stopped);
      resolve(how);
    };
    const timer = setTimeout(() => end({ kind: 'time' }), pdfReadMs);
    const stopped = () => end({ kind: 'stopped' });
    signal.addEventListener('abort', stopped, { once: true });
    reader.on('message', (message: FromReader) => {
      if (message.kind === 'opened') opened = { title: typeof message.title === 'string' ? message.title.trim() : '', pages: message.pages };
      else if (message.kind === 'page') texts.push(message.text);
      else end(message);
    });
    reader.on('error', (error) => end({ kind: 'crashed', error }));
    // Node delivers every message a thread sent before its exit, so this is a thread that stopped short.
    reader.on('exit', () => end({ kind: 'crashed', error: new Error('the reader ended early') }));
  });
  await reader.terminate();
  if (ending.kind === 'stopped') throw signal.reason;
  if (!opened) return { title: '', text: `(PDF, ${bytes.length} bytes: ${unreadable(ending, pdfReadMs)}, so its text is not shown)` };
  const failed = texts.filter((text) => text === null).length;
  const after = `after ${texts.length} of its ${opened.pages} pages`;
  const notes = [
    ending.kind === 'time' ? `reading the PDF stopped at the time limit of ${pdfReadMs / 1000} s ${after}` : '',
    ending.kind === 'crashed' ? `reading the PDF stopped ${after}: ${ending.error.message}` : '',
    ending.kind === 'done' && opened.pages > PDF_MAX_PAGES ? `the first ${PDF_MAX_PAGES} of the PDF's ${opened.pages} pages` : '',
    failed ? `${failed} of its pages could not be read` : '',
  ].filter(Boolean);
  const text = texts.filter(Boolean).join('\n\n');
  if (!text && !notes.length)
    return { title: opened.title, text: `(PDF, ${opened.pages === 1 ? '1 page' : `${opened.pages} pages`} without text, as a scan is: nothing to show)` };
  return { title: opened.title, text, notes };
}

function unreadable(ending: Exclude<Ending, { kind: 'stopped' }>, readMs: number): string {
  if (ending.kind === 'time') return `not opened within the time limit of ${readMs / 1000} s`;
  if (ending.kind === 'crashed') return `not readable (${ending.error.message})`;
  if (ending.kind === 'failed' && ending.name === 'PasswordException') return 'encrypted with a password';
  if (ending.kind === 'failed' && ending.name === 'InvalidPDFException') return `damaged or not a PDF (${ending.message})`;
  return `not readable (${ending.kind === 'failed' ? ending.message : 'no answer'})`;
}
