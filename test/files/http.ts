/**
 * Raw HTTP for the files tests: the request target is sent byte for byte as given (fetch and
 * URL would normalise `..`, `%2e` and backslashes before they reach the server).
 */
import { request } from 'node:http';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export function rawRequest(
  baseUrl: string,
  target: string,
  opts: { method?: string; headers?: Record<string, string>; body?: Buffer | string } = {},
): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method: opts.method ?? 'GET', path: target, headers: opts.headers, insecureHTTPParser: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** A tRPC query over HTTP (superjson envelope), as a tRPC client sends it. */
export async function trpcQuery(baseUrl: string, proc: string, input: unknown, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await fetch(`${baseUrl}/trpc/${proc}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`, { headers });
  return { status: res.status, body: await res.json() };
}
