/**
 * multipart/form-data → the parts a procedure iterates, in arrival order, streamed (busboy):
 *   { kind: 'field', name, value } | { kind: 'file', name, filename, mimeType, stream }
 * Nothing is buffered beyond busboy's own chunks: a file part's stream is the request body, with
 * backpressure. A file part the consumer does not read is drained when it asks for the next part.
 *
 * Reading starts on the first `next()`, so a procedure that refuses the call (401, 403 …) before
 * reading never makes the bridge read the body. Call `close()` when the procedure is done: it stops
 * parsing and, if the body was not read to the end, drains the rest and marks the connection
 * `Connection: close` so that an early answer (413, 403) reaches the client.
 *
 * The adapter is generic (no knowledge of the procedure); limits are parameters.
 */
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type { Request, Response } from 'express';
import { AppError, badRequest } from '../server/common/errors.js';

export type MultipartPart =
  | { kind: 'field'; name: string; value: string }
  | { kind: 'file'; name: string; filename: string; mimeType: string; stream: AsyncIterable<Uint8Array> };

export interface MultipartLimits {
  /** A declared Content-Length above this is refused with 413 before anything is read. */
  maxBodyBytes?: number;
  /** File parts delivered (later ones are drained and dropped). Default 1. */
  files?: number;
  /** Non-file fields. Default 20. */
  fields?: number;
  /** Bytes of one field value. Default 64 KiB. */
  fieldSize?: number;
}

export interface MultipartBody extends AsyncIterable<MultipartPart> {
  close(): void;
}

export function readMultipart(req: Request, res: Response, limits: MultipartLimits = {}): MultipartBody {
  if (!req.is('multipart/form-data')) throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Request body must be multipart/form-data');
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (limits.maxBodyBytes !== undefined && declared > limits.maxBodyBytes) {
    res.setHeader('Connection', 'close');
    throw new AppError(413, 'PAYLOAD_TOO_LARGE', 'Request body is too large');
  }
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      defParamCharset: 'utf8',
      limits: { files: limits.files ?? 1, fields: limits.fields ?? 20, fieldSize: limits.fieldSize ?? 64 * 1024 },
    });
  } catch {
    throw badRequest('Malformed multipart/form-data header (boundary missing?)', 'MALFORMED_MULTIPART');
  }

  const queue: Array<{ part: MultipartPart; raw?: Readable }> = [];
  let failure: unknown;
  let ended = false;
  let started = false;
  let closed = false;
  /** The file stream last handed to the consumer. */
  let current: Readable | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const fail = (error: unknown) => {
    failure ??= error;
    current?.destroy(error as Error);
    notify();
  };

  parser.on('field', (name, value, info) => {
    if (info.valueTruncated || info.nameTruncated) return fail(new AppError(413, 'FIELD_TOO_LARGE', `Field ${name} is too large`));
    queue.push({ part: { kind: 'field', name, value } });
    notify();
  });
  parser.on('file', (name, stream, info) => {
    // Errors reach the consumer through the iteration; this listener only keeps an error on a
    // stream nobody reads yet from becoming an uncaught exception.
    stream.on('error', () => undefined);
    queue.push({ part: { kind: 'file', name, filename: info.filename ?? '', mimeType: info.mimeType, stream: fileChunks(stream) }, raw: stream });
    notify();
  });
  parser.on('fieldsLimit', () => fail(badRequest('Too many fields in the form', 'TOO_MANY_PARTS')));
  parser.on('error', () => fail(badRequest('Malformed multipart/form-data body', 'MALFORMED_MULTIPART')));
  parser.on('close', () => {
    ended = true;
    notify();
  });
  const onClose = () => {
    if (!req.complete) fail(new AppError(499, 'REQUEST_ABORTED', 'The client closed the request'));
  };
  req.on('close', onClose);

  const start = () => {
    if (started) return;
    started = true;
    req.pipe(parser);
  };

  async function* parts(): AsyncGenerator<MultipartPart> {
    start();
    for (;;) {
      // A file stream the consumer left unread would stall the parser: drain it.
      if (current && !current.readableEnded) current.resume();
      if (failure) throw failure;
      const next = queue.shift();
      if (next) {
        current = next.raw;
        yield next.part;
        continue;
      }
      if (ended) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  }

  /** A file part's bytes; a parser failure surfaces as the adapter's error, never a raw one. */
  async function* fileChunks(stream: Readable): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of stream) yield chunk as Uint8Array;
    } catch (error) {
      throw failure ?? (error instanceof AppError ? error : badRequest('Malformed multipart/form-data body', 'MALFORMED_MULTIPART'));
    }
    if (failure) throw failure;
  }

  return {
    [Symbol.asyncIterator]: parts,
    close() {
      if (closed) return;
      closed = true;
      req.off('close', onClose);
      if (req.complete) return;
      // The answer comes before the body ended: read and drop the rest, then close the connection.
      req.unpipe(parser);
      current?.resume();
      if (!res.headersSent) res.setHeader('Connection', 'close');
      req.resume();
    },
  };
}
