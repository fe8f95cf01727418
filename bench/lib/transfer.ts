/**
 * Workspace transfers shared by bench/files.ts and bench/proxy.ts: a streamed multipart upload
 * and a counted download against `base` — the agent itself (`http://host:port`) or the account
 * service's REST proxy (`http://host:port/api/v1/agent`) — with a bearer token (the agent secret
 * or the user's access token), timing, and the peak RSS growth of the processes involved.
 * MB = 10^6 bytes.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { request } from 'node:http';
import { rssOf } from './harness.js';

const under = (base: URL, rel: string) => `${base.pathname.replace(/\/$/, '')}${rel}`;

export function upload(base: URL, token: string, file: string, size: number, name: string): Promise<number> {
  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: base.hostname,
        port: base.port,
        method: 'POST',
        path: under(base, '/files/upload'),
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': head.length + size + tail.length,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(size) : reject(new Error(`upload ${res.statusCode}: ${Buffer.concat(chunks).toString()}`))));
      },
    );
    req.on('error', reject);
    req.write(head);
    const source = createReadStream(file, { highWaterMark: 256 * 1024 });
    source.on('error', reject);
    source.pipe(req, { end: false });
    source.on('end', () => req.end(tail));
  });
}

export function download(base: URL, token: string, rel: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: base.hostname, port: base.port, path: under(base, `/files/${rel}`), headers: { authorization: `Bearer ${token}` } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`download ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Samples each process's RSS every 5 ms while `work` runs; returns each one's peak above its start (bytes). */
export async function withRss<T>(pids: number[], work: () => Promise<T>): Promise<{ result: T; growth: number[] }> {
  const base = await Promise.all(pids.map(rssOf));
  const peak = [...base];
  let running = true;
  const sampler = (async () => {
    while (running) {
      const now = await Promise.all(pids.map(rssOf));
      for (const [i, v] of now.entries()) peak[i] = Math.max(peak[i]!, v);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  try {
    const result = await work();
    return { result, growth: peak.map((p, i) => Math.max(0, p - base[i]!)) };
  } finally {
    running = false;
    await sampler;
  }
}

export const mbps = (bytes: number, ms: number) => bytes / 1e6 / (ms / 1000);
export const mb = (bytes: number) => bytes / 1e6;

export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const started = performance.now();
  const result = await fn();
  return { ms: performance.now() - started, result };
}
