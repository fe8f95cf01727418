/**
 * A raw file body from a procedure: the HTTP side of serving a file, nothing else.
 * - `ETag`, `Last-Modified`, conditional GET (`If-None-Match`, then `If-Modified-Since`) → 304;
 * - one `Range: bytes=a-b | a- | -n` → 206 with `Content-Range` (`If-Range` honoured); a range
 *   past the end → 416 with `Content-Range: bytes * /size`; several ranges or a malformed header
 *   → the whole file (200), as RFC 9110 allows;
 * - `Content-Type`, `Content-Length`, `Content-Disposition: inline` with the file name
 *   (RFC 6266/8187), `Accept-Ranges: bytes`; types a browser opens as an active document
 *   (HTML, any XML, PDF) get `CSP: sandbox`;
 * - HEAD: headers only; the body is streamed with backpressure, and a client that goes away
 *   stops the read (the iterator is returned, which closes the file).
 * The bytes come from `open(range)`, which the route makes call a procedure.
 */
import type { Request, Response } from 'express';
import { AppError } from '../server/common/errors.js';

export interface FileBody {
  name: string;
  size: number;
  contentType: string;
  /** Strong, quoted. */
  etag: string;
  modified: Date;
  /** The bytes `start..end` (inclusive), or the whole file. */
  open(range?: { start: number; end: number }): Promise<AsyncIterable<Uint8Array>>;
}

/**
 * Types a browser opens as an active document: HTML, every XML type (an XML document can name an
 * XSLT stylesheet that turns it into HTML with script; SVG, XHTML, RSS, Atom, RDF, MathML, XSLT
 * are all `+xml`), PDF (its viewer runs the file's script and forms) and MHTML. Opened from our
 * origin they would run there, so they are sandboxed (docs/security.md, Downloads).
 */
const ACTIVE_DOCUMENT = /^(?:text\/html|text\/xml|text\/xsl|application\/xml(?:-dtd)?|application\/pdf|message\/rfc822|[\w.+-]+\/[\w.-]+\+xml)\s*(?:;|$)/i;

export async function sendFileBody(req: Request, res: Response, file: FileBody): Promise<void> {
  const lastModified = file.modified.toUTCString();
  const validators = { ETag: file.etag, 'Last-Modified': lastModified, 'Cache-Control': 'private, no-cache' };

  if (notModified(req, file)) {
    res.status(304);
    for (const [name, value] of Object.entries(validators)) res.setHeader(name, value);
    res.end();
    return;
  }

  const range = wantedRange(req, file, lastModified);
  if (range === 'unsatisfiable') {
    res.setHeader('Content-Range', `bytes */${file.size}`);
    throw new AppError(416, 'RANGE_NOT_SATISFIABLE', `Range not satisfiable for a file of ${file.size} bytes`);
  }
  const head = req.method === 'HEAD';
  // Open before any header is set: a failure here is an ordinary error answer.
  const body = head ? undefined : await file.open(range);

  res.status(range ? 206 : 200);
  for (const [name, value] of Object.entries(validators)) res.setHeader(name, value);
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Content-Type', file.contentType);
  res.setHeader('Content-Disposition', contentDisposition(file.name));
  if (ACTIVE_DOCUMENT.test(file.contentType)) res.setHeader('Content-Security-Policy', "sandbox; default-src 'none'");
  res.setHeader('Content-Length', String(range ? range.end - range.start + 1 : file.size));
  if (range) res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${file.size}`);
  if (!body) {
    res.end();
    return;
  }
  await writeBody(res, body);
}

/**
 * Writes `body` with backpressure and ends the answer; a client that goes away stops the read
 * (leaving the loop returns the iterator, which closes the file). A read that fails is thrown
 * with the answer unended, so the error handler cuts the connection. Written by hand rather than
 * with `stream.pipeline`, which hangs seven 'close' listeners on the response: with the shell's
 * own that passed Node's limit of ten on every download (MaxListenersExceededWarning).
 */
async function writeBody(res: Response, body: AsyncIterable<Uint8Array>): Promise<void> {
  for await (const chunk of body) {
    if (res.destroyed) return;
    if (!res.write(chunk)) await drainedOrClosed(res);
  }
  if (!res.destroyed) res.end();
}

function drainedOrClosed(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function notModified(req: Request, file: FileBody): boolean {
  const ifNoneMatch = req.headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
    return ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((tag) => opaque(tag) === opaque(file.etag));
  }
  const since = Date.parse(req.headers['if-modified-since'] ?? '');
  return !Number.isNaN(since) && Math.floor(file.modified.getTime() / 1000) * 1000 <= since;
}

function wantedRange(req: Request, file: FileBody, lastModified: string): { start: number; end: number } | 'unsatisfiable' | undefined {
  const header = req.headers.range;
  if (!header || (req.method !== 'GET' && req.method !== 'HEAD')) return undefined;
  const ifRange = req.headers['if-range'];
  if (ifRange !== undefined && ifRange !== file.etag && ifRange !== lastModified) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  const [first, last] = [match[1] ?? '', match[2] ?? ''];
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || file.size === 0) return 'unsatisfiable';
    return { start: Math.max(0, file.size - suffix), end: file.size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? file.size - 1 : Math.min(Number(last), file.size - 1);
  if (last !== '' && Number(last) < start) return undefined; // invalid: ignore
  if (start >= file.size) return 'unsatisfiable';
  return { start, end };
}

/** `inline; filename="ascii"; filename*=UTF-8''percent-encoded` */
export function contentDisposition(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `inline; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
