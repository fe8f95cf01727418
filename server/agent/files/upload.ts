/**
 * Receiving a file into the workspace (`POST /files/upload`, `files.upload`).
 *
 * - The bytes are streamed into a temporary file `.upload-<random>.part` (created with O_EXCL,
 *   hidden from the tree) in the target directory and moved into place only when complete:
 *   a failed, aborted or oversized upload leaves nothing behind.
 *   Multipart fields arrive in the client's order, so the target directory may only be known
 *   after the file (`path` sent after `file`, or not at all): the file is then staged at the
 *   workspace root and renamed into the target at the end (same filesystem, atomic).
 * - The size cap (MAX_UPLOAD_BYTES) is checked on every chunk: 413 as soon as it is crossed.
 * - File names are sanitized (sanitizeFileName). An existing file is never overwritten: the
 *   new file gets the first free name of `name (1).ext`, `name (2).ext`, … (hard link into place,
 *   which fails atomically when the name is taken, so concurrent uploads never mix).
 */
import { randomBytes } from 'node:crypto';
import { constants, type Dirent } from 'node:fs';
import { copyFile, link, mkdir, open, readdir, rename, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { OctetInput } from '@trpc/server/http';
import { AppError, badRequest, conflict } from '../../common/errors.js';
import { forbiddenPath, isSensitiveName, resolveWorkspacePath, type ResolvedPath } from './guard.js';
import { quotaExceeded, type WorkspaceQuota } from './quota.js';
import type { UploadResult } from '@contracts/agent/files.js';

export const MAX_UPLOAD_BYTES = 50 * 1024 * 1024;
export const DEFAULT_UPLOAD_DIR = 'uploads';
/** Bytes of UTF-8 kept of a file name (filesystems allow 255; room is left for ` (n)`). */
export const MAX_FILE_NAME_BYTES = 200;
const MAX_NAME_SUFFIX = 999;
const FALLBACK_NAME = 'upload';

/** Temporary names of uploads in progress; the tree hides them. */
export const UPLOAD_TEMP_NAME = /^\.upload-[0-9a-f]{16}\.part$/;

/**
 * One part of a multipart body, in arrival order (rest-bridge/multipart.ts produces these).
 * A file part's `stream` must be consumed (or abandoned) before the next part arrives.
 */
export type FormPart =
  | { kind: 'field'; name: string; value: string }
  | { kind: 'file'; name: string; filename: string; mimeType: string; stream: AsyncIterable<Uint8Array> };

/** Where an upload's bytes come from: a multipart body (REST bridge) or a raw body (tRPC octet-stream). */
export type UploadSource = { kind: 'form'; parts: AsyncIterable<FormPart> } | { kind: 'octet'; stream: ReadableStream<Uint8Array> };

/**
 * Input parser of `files.upload`. Over tRPC HTTP the body is `application/octet-stream` (tRPC v11
 * hands the procedure a ReadableStream, never a buffered body); over the REST bridge it is the
 * multipart parts. FormData is not accepted: tRPC would buffer it whole.
 */
export const UploadInput = {
  _input: null as unknown as OctetInput | AsyncIterable<FormPart>,
  _output: null as unknown as UploadSource,
  parse(raw: unknown): UploadSource {
    if (raw instanceof ReadableStream) return { kind: 'octet', stream: raw as ReadableStream<Uint8Array> };
    if (typeof raw === 'object' && raw !== null && Symbol.asyncIterator in raw) return { kind: 'form', parts: raw as AsyncIterable<FormPart> };
    throw badRequest('Upload body must be multipart/form-data (REST) or application/octet-stream (tRPC)', 'UNSUPPORTED_UPLOAD_BODY');
  },
};

export const uploadTooLarge = () => new AppError(413, 'PAYLOAD_TOO_LARGE', `Upload exceeds the ${MAX_UPLOAD_BYTES / (1024 * 1024)} MB limit`);

/**
 * A name that is safe as one path component: the last component of what the client sent, NFC,
 * without control or bidi-override characters, without leading/trailing spaces and trailing dots,
 * at most MAX_FILE_NAME_BYTES of UTF-8 (the extension is kept when the stem is cut).
 * Empty results become `upload`. Sensitive names are not changed here: the guard refuses them.
 */
export function sanitizeFileName(raw: string): string {
  let name = raw.normalize('NFC');
  name = name.split(/[\\/]/).pop() ?? '';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
  name = name.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '');
  name = name.trim().replace(/[. ]+$/, '');
  if (name === '' || /^\.+$/.test(name)) return FALLBACK_NAME;
  if (Buffer.byteLength(name) <= MAX_FILE_NAME_BYTES) return name;
  const ext = path.extname(name);
  const keepExt = ext.length > 1 && Buffer.byteLength(ext) <= 24 ? ext : '';
  return truncateUtf8(name.slice(0, name.length - keepExt.length), MAX_FILE_NAME_BYTES - Buffer.byteLength(keepExt)) + keepExt;
}

function truncateUtf8(text: string, maxBytes: number): string {
  let out = '';
  let bytes = 0;
  for (const char of text) {
    const size = Buffer.byteLength(char);
    if (bytes + size > maxBytes) break;
    out += char;
    bytes += size;
  }
  return out;
}

function withSuffix(name: string, n: number): string {
  const ext = path.extname(name);
  const stem = ext && ext !== name ? name.slice(0, -ext.length) : name;
  const suffixed = `${stem} (${n})${stem === name ? '' : ext}`;
  return suffixed;
}

/** The raw-body form of an upload (tRPC octet-stream): metadata from headers, then the bytes. */
export async function* partsFromOctet(stream: ReadableStream<Uint8Array>, meta: { filename?: string; path?: string }): AsyncGenerator<FormPart> {
  if (!meta.filename) throw badRequest('The file name is required (header X-File-Name)', 'MISSING_FILE_NAME');
  if (meta.path !== undefined) yield { kind: 'field', name: 'path', value: meta.path };
  yield { kind: 'file', name: 'file', filename: meta.filename, mimeType: 'application/octet-stream', stream: chunksOf(stream) };
}

async function* chunksOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield value;
    }
    finished = true;
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

interface Staged {
  temp: string;
  dir: ResolvedPath;
  filename: string;
  size: number;
}

/** The parts of an upload: multipart as it came, or a raw body with its metadata (tRPC: headers). */
export function uploadParts(source: UploadSource, octetMeta: { filename?: string; path?: string }): AsyncIterable<FormPart> {
  return source.kind === 'form' ? source.parts : partsFromOctet(source.stream, octetMeta);
}

export async function uploadFile(
  workspace: string,
  parts: AsyncIterable<FormPart>,
  opts: { signal?: AbortSignal; maxBytes?: number; quota?: WorkspaceQuota } = {},
): Promise<UploadResult> {
  const maxBytes = opts.maxBytes ?? MAX_UPLOAD_BYTES;
  // Refused before a byte is read when the workspace is full already.
  if (opts.quota && (await opts.quota.remaining()) === 0) throw quotaExceeded(opts.quota.limitBytes);
  // The upload holds its bytes in the quota as they arrive, so parallel uploads share what is left:
  // crossing the quota is 507, crossing the size cap 413.
  const reservation = opts.quota?.reservation();
  const limit: StageLimit = { maxBytes, take: async (bytes) => reservation?.take(bytes), stagedAt: (file) => reservation?.stagedAt(file) };
  let dirField: string | undefined;
  let staged: Staged | undefined;
  try {
    for await (const part of parts) {
      if (part.kind === 'field') {
        if (part.name === 'path') dirField = part.value;
        continue;
      }
      // Only the first `file` part counts; the bridge drains any other file part.
      if (part.name !== 'file' || staged) continue;
      const filename = sanitizeFileName(part.filename);
      // Target known (`path` came first): stage there. Otherwise stage at the workspace root.
      const dir = dirField === undefined ? await resolveWorkspacePath(workspace, '.') : await prepareDirectory(workspace, dirField);
      // Refuse a protected name before reading a byte (the full guard runs again at commit).
      if (isSensitiveName(filename)) throw forbiddenPath('The file name is protected');
      staged = await stage(part.stream, dir, filename, limit, opts.signal);
    }
    if (!staged) throw badRequest('The multipart field `file` is required', 'MISSING_FILE');
    const target = await prepareDirectory(workspace, dirField);
    if (target.absolute !== staged.dir.absolute) {
      const moved = path.join(target.absolute, path.basename(staged.temp));
      limit.stagedAt(moved);
      await rename(staged.temp, moved);
      staged = { ...staged, temp: moved, dir: target };
    }
    const result = await commit(workspace, staged);
    reservation?.commit();
    return result;
  } catch (error) {
    if (staged) await unlink(staged.temp).catch(() => undefined);
    reservation?.release();
    throw error;
  }
}

/** How much one upload may write: the size cap, and the quota reservation its bytes go into. */
interface StageLimit {
  maxBytes: number;
  /** Holds `bytes` more in the quota, or throws 507. */
  take(bytes: number): Promise<void>;
  /** Where the upload is staged, which walks of the quota skip while its bytes are held. */
  stagedAt(file: string): void;
}

function joinRel(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}

/** Guards the target directory, creates it, and checks again where it really landed. */
async function prepareDirectory(workspace: string, requested: string | undefined): Promise<ResolvedPath> {
  const rel = requested === undefined || requested.trim() === '' ? DEFAULT_UPLOAD_DIR : requested;
  const planned = await resolveWorkspacePath(workspace, rel, { forWrite: true });
  try {
    await mkdir(planned.absolute, { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR') throw conflict('The target path is a file, not a directory', 'NOT_A_DIRECTORY');
    throw error;
  }
  // A component swapped for a symlink between the check and mkdir would show here.
  const real = await resolveWorkspacePath(workspace, planned.relative || '.', { forWrite: true });
  if (real.absolute !== planned.absolute) throw forbiddenPath('The target directory moved while it was being created');
  return real;
}

async function stage(
  stream: AsyncIterable<Uint8Array>,
  dir: ResolvedPath,
  filename: string,
  limit: StageLimit,
  signal: AbortSignal | undefined,
): Promise<Staged> {
  const temp = path.join(dir.absolute, `.upload-${randomBytes(8).toString('hex')}.part`);
  limit.stagedAt(temp);
  // O_EXCL: never opens an existing file or follows a symlink planted under the name.
  const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  let size = 0;
  // Chunks are gathered into batches of WRITE_BATCH_BYTES and written with writev while the next
  // batch is read: one write in flight, so memory stays near two batches whatever the file size.
  let batch: Uint8Array[] = [];
  let batchBytes = 0;
  let inFlight: Promise<void> = Promise.resolve();
  const flush = async () => {
    await inFlight;
    const buffers = batch;
    batch = [];
    batchBytes = 0;
    const write = writeAll(handle, buffers);
    write.catch(() => undefined); // observed at the next flush
    inFlight = write;
  };
  try {
    for await (const chunk of stream) {
      signal?.throwIfAborted();
      size += chunk.byteLength;
      if (size > limit.maxBytes) throw uploadTooLarge();
      await limit.take(chunk.byteLength);
      batch.push(chunk);
      batchBytes += chunk.byteLength;
      if (batchBytes >= WRITE_BATCH_BYTES) await flush();
    }
    signal?.throwIfAborted();
    await flush();
    await inFlight;
  } catch (error) {
    await inFlight.catch(() => undefined);
    await handle.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await handle.close();
  return { temp, dir, filename, size };
}

const WRITE_BATCH_BYTES = 1024 * 1024;

async function writeAll(handle: FileHandle, buffers: Uint8Array[]): Promise<void> {
  if (buffers.length === 0) return;
  const total = buffers.reduce((sum, b) => sum + b.byteLength, 0);
  const { bytesWritten } = await handle.writev(buffers);
  if (bytesWritten === total) return;
  // A short write (rare for regular files): finish the rest from where it stopped.
  const rest = Buffer.concat(buffers).subarray(bytesWritten);
  let offset = 0;
  while (offset < rest.length) offset += (await handle.write(rest, offset, rest.length - offset)).bytesWritten;
}

/** Moves the staged file to the first free name; never replaces an existing file. */
async function commit(workspace: string, staged: Staged): Promise<UploadResult> {
  for (let n = 0; n <= MAX_NAME_SUFFIX; n++) {
    const name = n === 0 ? staged.filename : withSuffix(staged.filename, n);
    const target = await resolveWorkspacePath(workspace, joinRel(staged.dir.relative, name), { forWrite: true });
    try {
      await placeExclusive(staged.temp, target.absolute);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    }
    await unlink(staged.temp).catch(() => undefined);
    return { path: target.relative, size: staged.size, name };
  }
  throw conflict(`Too many files named like ${staged.filename} in ${staged.dir.relative || 'the workspace root'}`, 'NAME_TAKEN');
}

/** link() fails with EEXIST when the name is taken: an atomic "create if absent". */
async function placeExclusive(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
    // Filesystems without hard links: an exclusive copy is still never a mixed or replaced file.
    await copyFile(from, to, constants.COPYFILE_EXCL);
  }
}

/**
 * Removes the temporary files of uploads a crash (kill -9, power loss) left behind. Called once
 * at start, before the server listens, when no upload can be in progress. Symlinks are not
 * followed; `.git` and `node_modules` are skipped; the walk stops after 200,000 entries.
 */
export async function sweepPartialUploads(workspace: string): Promise<string[]> {
  const removed: string[] = [];
  const queue = [workspace];
  let seen = 0;
  while (queue.length && seen < 200_000) {
    const dir = queue.shift()!;
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      seen += 1;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== '.git' && entry.name !== 'node_modules') queue.push(full);
      else if (entry.isFile() && UPLOAD_TEMP_NAME.test(entry.name)) {
        await unlink(full).catch(() => undefined);
        removed.push(path.relative(workspace, full));
      }
    }
  }
  return removed;
}
