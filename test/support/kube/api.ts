/**
 * A small Kubernetes API client for the test support code (the control plane's own checks and the
 * test kubelet): JSON over HTTPS with a bearer token and the cluster's CA, and watches read as
 * newline-delimited JSON. Code under test uses @kubernetes/client-node (with the kubeconfig that
 * startControlPlane writes); this stays independent of it so the harness does not test the client
 * with itself.
 */
import { request as httpsRequest, Agent } from 'node:https';
import type { IncomingMessage } from 'node:http';

export interface KubeTarget {
  /** https://10.244.0.1:<port> */
  server: string;
  /** The CA that signed the API server's certificate (PEM). */
  ca: string;
  token: string;
}

export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    readonly body: string,
  ) {
    super(`${method} ${path}: ${status} ${body.slice(0, 500)}`);
  }
}

export type KubeObject = Record<string, any>;

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject;
}

export interface KubeWatch {
  stop(): void;
}

export class KubeApi {
  private readonly agent: Agent;
  private readonly base: URL;

  constructor(readonly target: KubeTarget) {
    this.base = new URL(target.server);
    this.agent = new Agent({ ca: target.ca, keepAlive: true, maxSockets: 16 });
  }

  /** Closes idle keep-alive connections (watches are stopped by their own stop()). */
  close(): void {
    this.agent.destroy();
  }

  private open(method: string, path: string, body: unknown, contentType: string | undefined, timeoutMs: number): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      const req = httpsRequest(
        {
          host: this.base.hostname,
          port: this.base.port,
          path,
          method,
          agent: this.agent,
          timeout: timeoutMs,
          headers: {
            authorization: `Bearer ${this.target.token}`,
            accept: 'application/json',
            ...(payload === undefined ? {} : { 'content-type': contentType ?? 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
        },
        resolve,
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** One request; the parsed JSON answer, or a KubeApiError for a status ≥ 400. */
  async request<T = KubeObject>(method: string, path: string, body?: unknown, opts: { contentType?: string; timeoutMs?: number } = {}): Promise<T> {
    const text = await this.requestText(method, path, body, opts);
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** One request; the answer's text (e.g. /readyz's `ok`), or a KubeApiError for a status ≥ 400. */
  async requestText(method: string, path: string, body?: unknown, opts: { contentType?: string; timeoutMs?: number } = {}): Promise<string> {
    const res = await this.open(method, path, body, opts.contentType, opts.timeoutMs ?? 30_000);
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if ((res.statusCode ?? 0) >= 400) throw new KubeApiError(res.statusCode ?? 0, method, path, text);
    return text;
  }

  get<T = KubeObject>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }
  post<T = KubeObject>(path: string, body: unknown): Promise<T> {
    return this.request<T>('POST', path, body);
  }
  put<T = KubeObject>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PUT', path, body);
  }
  delete<T = KubeObject>(path: string, body?: unknown): Promise<T> {
    return this.request<T>('DELETE', path, body);
  }
  /** A JSON merge patch (or a strategic merge patch with `strategic`). */
  patch<T = KubeObject>(path: string, body: unknown, kind: 'merge' | 'strategic' = 'merge'): Promise<T> {
    return this.request<T>('PATCH', path, body, {
      contentType: kind === 'merge' ? 'application/merge-patch+json' : 'application/strategic-merge-patch+json',
    });
  }

  /** GET that answers undefined for 404. */
  async getOrUndefined<T = KubeObject>(path: string): Promise<T | undefined> {
    try {
      return await this.get<T>(path);
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  /**
   * Lists `listPath` (e.g. /api/v1/pods?fieldSelector=…), hands each item to `onEvent` as ADDED,
   * then watches from the list's resourceVersion; reconnects (re-listing after a 410 Gone) until
   * stop(). A re-list reports items that vanished meanwhile as DELETED. `onError` hears about
   * failed connections (the watch keeps trying, 200 ms apart at first, up to 2 s).
   */
  watchList(listPath: string, onEvent: (event: WatchEvent) => void, onError?: (err: unknown) => void): KubeWatch {
    let stopped = false;
    let current: IncomingMessage | undefined;
    const known = new Map<string, KubeObject>();
    const keyOf = (o: KubeObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;
    const sep = listPath.includes('?') ? '&' : '?';
    let backoff = 200;

    const relist = async (): Promise<string> => {
      const list = await this.get(listPath);
      const seen = new Set<string>();
      for (const item of list.items ?? []) {
        const key = keyOf(item);
        seen.add(key);
        const prev = known.get(key);
        known.set(key, item);
        if (!prev) onEvent({ type: 'ADDED', object: item });
        else if (prev.metadata?.resourceVersion !== item.metadata?.resourceVersion) onEvent({ type: 'MODIFIED', object: item });
      }
      for (const [key, obj] of known) {
        if (!seen.has(key)) {
          known.delete(key);
          onEvent({ type: 'DELETED', object: obj });
        }
      }
      return list.metadata?.resourceVersion as string;
    };

    const stream = async (resourceVersion: string): Promise<'gone' | 'ended'> => {
      const res = await this.open(
        'GET',
        `${listPath}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}&timeoutSeconds=300`,
        undefined,
        undefined,
        330_000,
      );
      current = res;
      if ((res.statusCode ?? 0) >= 400) {
        res.resume();
        if (res.statusCode === 410) return 'gone';
        throw new KubeApiError(res.statusCode ?? 0, 'GET', listPath, 'watch refused');
      }
      backoff = 200;
      let buffered = '';
      for await (const chunk of res) {
        if (stopped) break;
        buffered += (chunk as Buffer).toString('utf8');
        let nl = buffered.indexOf('\n');
        while (nl >= 0) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          nl = buffered.indexOf('\n');
          if (!line) continue;
          const event = JSON.parse(line) as WatchEvent;
          if (event.type === 'ERROR') {
            if (event.object?.code === 410) return 'gone';
            throw new KubeApiError(event.object?.code ?? 0, 'WATCH', listPath, JSON.stringify(event.object));
          }
          const rv = event.object?.metadata?.resourceVersion as string | undefined;
          if (rv) resourceVersion = rv;
          lastRv = resourceVersion;
          if (event.type === 'BOOKMARK') continue;
          if (event.type === 'DELETED') known.delete(keyOf(event.object));
          else known.set(keyOf(event.object), event.object);
          if (!stopped) onEvent(event);
        }
      }
      return 'ended';
    };

    let lastRv: string | undefined;
    void (async () => {
      while (!stopped) {
        try {
          if (lastRv === undefined) lastRv = await relist();
          if (stopped) break;
          const how = await stream(lastRv);
          if (how === 'gone') lastRv = undefined;
        } catch (err) {
          if (stopped) break;
          onError?.(err);
          lastRv = undefined;
          await new Promise((r) => setTimeout(r, backoff));
          backoff = Math.min(backoff * 2, 2_000);
        }
      }
    })();

    return {
      stop() {
        stopped = true;
        current?.destroy();
      },
    };
  }
}

/** Path helpers: `ns('default', 'pods', 'x')` → /api/v1/namespaces/default/pods/x. */
export function corePath(namespace: string | undefined, resource: string, name?: string, sub?: string): string {
  let p = namespace ? `/api/v1/namespaces/${namespace}/${resource}` : `/api/v1/${resource}`;
  if (name) p += `/${encodeURIComponent(name)}`;
  if (sub) p += `/${sub}`;
  return p;
}
