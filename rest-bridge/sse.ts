/**
 * Server-Sent Events from a tRPC subscription: each yielded value becomes `data: <json>\n\n`
 * (plus `id: <n>` when the subscription yields `tracked(id, value)`), written as it arrives, with
 * headers that stop proxies from buffering. A client that goes away aborts the subscription.
 *
 * Backpressure: when the socket's buffer is full the subscription waits for `drain`, so a client
 * that stops reading costs one socket buffer, not a growing queue. A client that has not taken a
 * byte for `stallTimeoutMs` (runs send a keepalive after each AGENT_KEEPALIVE_INTERVAL of quiet,
 * 2 s by default, so a live client always has something to read) is cut off, which frees its
 * connection and aborts the subscription.
 */
import { isTrackedEnvelope } from '@trpc/server';
import type { Request, Response } from 'express';

export const SSE_STALL_TIMEOUT_MS = 60_000;

export async function writeEventStream(
  req: Request,
  res: Response,
  events: AsyncIterable<unknown>,
  signal: AbortSignal,
  { stallTimeoutMs = SSE_STALL_TIMEOUT_MS }: { stallTimeoutMs?: number } = {},
): Promise<void> {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  req.socket.setNoDelay(true);
  const iterator = events[Symbol.asyncIterator]();
  const stop = () => void iterator.return?.();
  signal.addEventListener('abort', stop, { once: true });
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done || signal.aborted) break;
      const value: unknown = next.value;
      const frame = isTrackedEnvelope(value) ? `id: ${String(value[0])}\ndata: ${JSON.stringify(value[1])}\n\n` : `data: ${JSON.stringify(value)}\n\n`;
      if (!res.write(frame)) await waitForDrain(res, signal, stallTimeoutMs);
    }
  } finally {
    signal.removeEventListener('abort', stop);
    res.end();
  }
}

function waitForDrain(res: Response, signal: AbortSignal, stallTimeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const stalled = setTimeout(() => {
      res.destroy(); // 'close' → the request signal aborts → done
      done();
    }, stallTimeoutMs);
    const done = () => {
      clearTimeout(stalled);
      res.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.on('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}
