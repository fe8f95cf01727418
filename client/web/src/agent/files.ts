/**
 * Workspace file bytes through the REST proxy: download (fetch → blob → a saved file) and
 * preview (text in <pre>, images as blob: URLs; the page's CSP allows img-src blob:). Uploads
 * go through XMLHttpRequest for its progress events.
 */
import { account, agentFetch, agentUrl, apiError, ApiError, bearer, filePath, sessionLost } from '../api.js';
import { currentSessionId } from '../session.js';
import { formatBytes, h } from '../dom.js';

const PREVIEW_TEXT_BYTES = 256 * 1024;

export async function fetchFile(path: string): Promise<Blob> {
  const res = await agentFetch(`/files/${filePath(path)}`);
  if (!res.ok) throw await apiError(res);
  return res.blob();
}

export async function downloadFile(path: string): Promise<void> {
  const blob = await fetchFile(path);
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: path.split('/').pop() ?? 'download' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const TEXTUAL = /^(text\/|application\/(json|xml|javascript|x-sh|x-yaml|yaml|toml|x-toml))/;
const TEXT_EXT = /\.(txt|md|json|csv|tsv|ts|js|py|sh|yaml|yml|toml|ini|log|html|css|xml|sql|rs|go|java|c|h|cpp)$/i;

/** A preview element for the file: image, text (first 256 kB) or a note. */
export async function previewFile(path: string): Promise<HTMLElement> {
  const blob = await fetchFile(path);
  const type = blob.type.split(';')[0] ?? '';
  if (/^image\/(png|jpeg|gif|webp|avif|bmp)$/.test(type)) {
    const url = URL.createObjectURL(blob);
    const img = h('img', { src: url, alt: `Preview of ${path}`, class: 'preview-image' });
    img.onload = () => setTimeout(() => URL.revokeObjectURL(url), 1000);
    return img;
  }
  if (TEXTUAL.test(type) || TEXT_EXT.test(path)) {
    const text = await blob.slice(0, PREVIEW_TEXT_BYTES).text();
    const pre = h('pre', { class: 'preview-text', tabIndex: 0, 'aria-label': `Contents of ${path}` }, text);
    return blob.size > PREVIEW_TEXT_BYTES
      ? h('div', {}, pre, h('p', {}, `Showing the first ${formatBytes(PREVIEW_TEXT_BYTES)} of ${formatBytes(blob.size)}.`))
      : pre;
  }
  return h('p', {}, `No preview for this kind of file (${type || 'unknown type'}, ${formatBytes(blob.size)}). Use Download.`);
}

export interface UploadResult {
  path: string;
  size: number;
  name: string;
}

/**
 * POST /files/upload (multipart) with progress. Refreshes the token once if the proxy says it
 * expired mid-way; a lost session goes to sign-in.
 */
export function uploadFile(file: File, dir: string, onProgress: (fraction: number) => void, signal?: AbortSignal): Promise<UploadResult> {
  const session = currentSessionId();
  const attempt = async (retried: boolean): Promise<UploadResult> => {
    const token = await bearer();
    if (!token) throw new ApiError(401, 'SESSION_LOST', 'Your session has ended. Please sign in again.');
    const res = await new Promise<Response>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', agentUrl('/files/upload'));
      xhr.setRequestHeader('authorization', `Bearer ${token}`);
      xhr.upload.onprogress = (e) => {
        if (e.lengthComputable) onProgress(e.loaded / e.total);
      };
      xhr.onload = () => {
        const headers = new Headers();
        const retry = xhr.getResponseHeader('retry-after');
        if (retry) headers.set('retry-after', retry);
        resolve(new Response(xhr.responseText || null, { status: xhr.status, headers }));
      };
      xhr.onerror = () => reject(new ApiError(0, 'NETWORK', 'The upload failed: the service could not be reached.'));
      xhr.onabort = () => reject(new ApiError(0, 'ABORTED', 'The upload was cancelled.'));
      signal?.addEventListener('abort', () => xhr.abort(), { once: true });
      const form = new FormData();
      if (dir) form.set('path', dir);
      form.set('file', file, file.name);
      xhr.send(form);
    });
    if (res.ok) return (await res.json()) as UploadResult;
    const error = await apiError(res);
    if (res.status === 401 && error.code === 'TOKEN_EXPIRED' && !retried) {
      await account.refresh().catch(() => null);
      return attempt(true);
    }
    if (res.status === 401) sessionLost(session);
    if (res.status === 413) throw new ApiError(413, error.code, `${file.name} is too large: ${error.message}`);
    throw error;
  };
  return attempt(false);
}
