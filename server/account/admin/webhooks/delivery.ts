/**
 * One delivery attempt: a POST of the signed body to the endpoint, never following a redirect
 * (a 3xx is a failure: the endpoint must name its final URL), bounded in time, and connecting
 * only to a public address unless private ones are allowed (address-guard.ts). What comes back
 * is kept for the delivery log: the status, the latency and the first KiB of the answer.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { RefusedAddress, isPublicAddress } from '../../../common/addresses.js';
import { guardedLookup } from './address-guard.js';

/** The answer's first bytes kept in the delivery log. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export interface AttemptResult {
  ok: boolean;
  /** The answer's status; null when none came. */
  status: number | null;
  latencyMs: number;
  response: string;
  error: string | null;
}

export interface DeliverOptions {
  timeoutMs: number;
  allowPrivate: boolean;
}

// Kept-alive connections to busy endpoints: an address is checked when its connection is made.
const agents = {
  guarded: { http: new http.Agent({ keepAlive: true, lookup: guardedLookup }), https: new https.Agent({ keepAlive: true, lookup: guardedLookup }) },
  open: { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) },
};

export function deliver(target: string, headers: Record<string, string>, body: string, options: DeliverOptions): Promise<AttemptResult> {
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  const failed = (error: string, status: number | null = null): AttemptResult => ({ ok: false, status, latencyMs: latency(), response: '', error });
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return Promise.resolve(failed('the URL is malformed'));
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  // Node resolves no name for an IP literal, so the guarded lookup would not see it.
  if (!options.allowPrivate && isIP(host) && !isPublicAddress(host)) return Promise.resolve(failed(new RefusedAddress(host, host).message));
  const secure = url.protocol === 'https:';
  const pool = options.allowPrivate ? agents.open : agents.guarded;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const request = (secure ? https : http).request(
      url,
      {
        method: 'POST',
        agent: secure ? pool.https : pool.http,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'agent-accounts-webhooks/1' },
      },
      (response) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        response.on('data', (chunk: Buffer) => {
          if (kept < RESPONSE_EXCERPT_BYTES) {
            chunks.push(chunk);
            kept += chunk.length;
          }
        });
        response.on('error', () => undefined);
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          const excerpt = Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8');
          const ok = status >= 200 && status < 300;
          finish({ ok, status, latencyMs: latency(), response: excerpt, error: ok ? null : `the endpoint answered ${status}` });
        });
      },
    );
    const timer = setTimeout(() => {
      request.destroy();
      finish(failed(`no answer within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    request.on('error', (error: Error) =>
      finish(failed(error instanceof RefusedAddress ? error.message : `${(error as NodeJS.ErrnoException).code ?? 'ERROR'}: ${error.message}`)),
    );
    request.end(body);
  });
}
