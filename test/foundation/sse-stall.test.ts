/**
 * The SSE bridge cuts off a client that has stopped reading for `stallTimeoutMs`, and the
 * subscription behind it is ended (its generator's `finally` runs): a stuck client cannot hold
 * a connection and a live subscription forever. A client that keeps reading is never cut.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { requestSignal } from '../../rest-bridge/routes.js';
import { writeEventStream } from '../../rest-bridge/sse.js';

const FRAME = { text: 'x'.repeat(16 * 1024) };

async function serveEndlessStream(stallTimeoutMs: number) {
  const state = { sent: 0, ended: false };
  const app = express();
  app.get('/stream', async (req, res) => {
    async function* endless() {
      try {
        for (;;) {
          state.sent += 1;
          yield FRAME;
          await new Promise((r) => setImmediate(r));
        }
      } finally {
        state.ended = true;
      }
    }
    await writeEventStream(req, res, endless(), requestSignal(res), { stallTimeoutMs });
  });
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { state, port: (server.address() as AddressInfo).port, close: () => new Promise((r) => server.close(r)) };
}

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

describe('SSE stall timeout', () => {
  it('a client that stops reading is cut off and the subscription ends', async () => {
    const served = await serveEndlessStream(300);
    closers.push(served.close);
    const socket = connect(served.port, '127.0.0.1');
    socket.on('error', () => undefined);
    closers.push(async () => void socket.destroy());
    socket.write('GET /stream HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.pause(); // never reads: the kernel windows fill, then the bridge waits for 'drain'
    const closed = once(socket, 'close');
    const deadline = Date.now() + 10_000;
    while (!served.state.ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(served.state.ended).toBe(true);
    const sentAtCut = served.state.sent;
    socket.resume(); // drain what the kernel holds; the server side is gone
    await closed;
    expect(served.state.sent).toBe(sentAtCut); // nothing produced after the cut
  });

  it('a client that keeps reading is not cut', async () => {
    const served = await serveEndlessStream(300);
    closers.push(served.close);
    const controller = new AbortController();
    const res = await fetch(`http://127.0.0.1:${served.port}/stream`, { signal: controller.signal });
    const reader = res.body!.getReader();
    let bytes = 0;
    const until = Date.now() + 1_500; // five stall timeouts
    while (Date.now() < until) bytes += (await reader.read()).value?.length ?? 0;
    expect(served.state.ended).toBe(false);
    expect(bytes).toBeGreaterThan(1024 * 1024);
    controller.abort();
  });
});
