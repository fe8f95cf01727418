/**
 * SSE clients that stop reading must not grow the agent's memory without bound. The agent runs as
 * its own process with a probe (test/support/agent-probe.ts) that reports its memory after a full
 * GC and the bytes each connection holds in user space waiting for the kernel. The scripted model
 * streams a ~9 MB reply as fast as it can, in 3 KB chunks.
 *
 * - One client reads a whole run: the reference cost (the run's own buffer, kept for reconnects).
 * - Then sixteen raw TCP clients follow one run (the `POST /chat` that starts it and fifteen
 *   `GET /chat/{id}/stream`), read their first bytes and stop reading. Their kernel windows fill,
 *   so every further byte the bridge would write piles up in the agent: about 5 MB per client
 *   without backpressure. With it (rest-bridge/sse.ts waits for `drain`) each connection holds at
 *   most the socket's high-water mark plus one frame, and the sixteen together cost under 1 MB each
 *   beyond what the reading client cost.
 * - The run finishes without its stuck followers and its history is whole; a stuck follower that
 *   reads again gets every remaining event up to `done` (paused, not dropped); the connections
 *   are released when the clients go away, and a normal client is served afterwards.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../chat/helpers.js';
import { startAgentProcess, type AgentProcess, type ProbeStats } from '../support/agent-process.js';
import { lastUserText, startScriptedModel, type ScriptedModel, type ScriptedStep } from '../support/scripted-model.js';
import { tempDir } from '../support/servers.js';
import { openSse, readFrames, withoutKeepalive } from '../support/sse.js';

const CHUNKS = 3_000;
const CHUNK = 'x'.repeat(3_000);
const REPLY_BYTES = CHUNKS * CHUNK.length;
const STUCK = 16;
const MB = 1024 * 1024;
/** Per connection: Node's default high-water mark (16 KiB) plus one frame, with room to spare. */
const MAX_BUFFERED = 64 * 1024;

const big: ScriptedStep = { text: { count: CHUNKS, chunk: () => CHUNK } };

/** The agent's resident set (MB) from /proc: cheap enough to sample without disturbing it. */
async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

/** Rejects after `ms`: nothing in this file may wait forever on a socket. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A raw HTTP/1.1 client that reads until `ready` holds, then stops reading (until `drain`). */
class RawClient {
  readonly socket: Socket;
  private text = '';
  private changed: () => void = () => undefined;

  constructor(port: number, request: string) {
    this.socket = connect(port, '127.0.0.1');
    // Listeners first: an event between connect() and a later `once` would be missed.
    this.socket.on('error', () => undefined);
    this.socket.setEncoding('latin1');
    this.socket.on('data', (d: string) => {
      this.text += d;
      this.changed();
    });
    this.socket.on('close', () => this.changed());
    this.socket.write(request);
  }

  get received(): number {
    return this.text.length;
  }

  /** Reads until `ready(text)`; true if it did, false if the connection closed first. */
  private readUntil(ready: (text: string) => boolean): Promise<boolean> {
    return new Promise((resolve) => {
      this.changed = () => {
        if (ready(this.text)) resolve(true);
        else if (this.socket.destroyed) resolve(false);
      };
      this.changed();
    });
  }

  /** Reads the first bytes (until `ready`), then stops reading: the kernel window fills. */
  async stall(ready: (text: string) => boolean): Promise<void> {
    expect(await within(10_000, 'first bytes', this.readUntil(ready))).toBe(true);
    this.socket.pause();
  }

  /** Reads again, to the end of the run. */
  async drain(): Promise<string> {
    this.socket.resume();
    expect(
      await within(
        60_000,
        'the rest of the stream',
        this.readUntil((t) => t.includes('"type":"done"')),
      ),
    ).toBe(true);
    return this.text;
  }
}

describe('SSE clients that stop reading', () => {
  let model: ScriptedModel;
  let agent: AgentProcess;
  let workspace: string;
  let port: number;
  let openGate: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (openGate = resolve));
  const clients: RawClient[] = [];
  const secret = randomBytes(24).toString('hex');
  const auth = { authorization: `Bearer ${secret}` };

  beforeAll(async () => {
    // The stuck run's reply waits for the gate, so that every follower is attached before it streams.
    model = await startScriptedModel({
      responder: async (request) => {
        const text = lastUserText(request);
        if (text === 'stuck') await gate;
        return text === 'after' ? { text: 'fine' } : big;
      },
    });
    workspace = await tempDir('stuck-sse');
    // A long grace keeps the reading run's buffer through both measurements, so they compare alike.
    agent = await startAgentProcess(
      {
        AGENT_SECRET: secret,
        AGENT_WORKSPACE: workspace,
        MODEL: model.modelSpec,
        AGENT_MODEL_RETRIES: '0',
        AGENT_RUN_TIMEOUT: '120',
        AGENT_STREAM_GRACE: '600',
      },
      { probe: true },
    );
    port = Number(new URL(agent.url).port);
  });
  afterAll(async () => {
    openGate();
    for (const c of clients) c.socket.destroy();
    agent?.child.kill('SIGKILL');
    await model?.close();
    if (workspace) await rm(workspace, { recursive: true, force: true });
  });

  /** Peak RSS growth (MB) of the agent while `work` runs, sampled every 25 ms. */
  async function peakRssGrowth(work: () => Promise<void>): Promise<number> {
    const pid = agent.child.pid!;
    const base = await rssMb(pid);
    let peak = base;
    let running = true;
    const sampler = (async () => {
      while (running) {
        peak = Math.max(peak, await rssMb(pid));
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    try {
      await work();
    } finally {
      running = false;
      await sampler;
    }
    return peak - base;
  }

  /** `POST /chat` read to the end by a normal client. */
  const chat = async (chatId: string, message: string) =>
    readFrames(
      await openSse(`${agent.url}/chat`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ chat_id: chatId, message }),
      }),
    );

  const active = async (chatId: string) =>
    ((await (await fetch(`${agent.url}/chat/${chatId}/active`, { headers: auth })).json()) as { active: boolean }).active;

  async function assistantText(chatId: string): Promise<string> {
    const res = await fetch(`${agent.url}/chat/${chatId}/history`, { headers: auth });
    const { messages } = (await res.json()) as { messages: Array<{ type: string; name?: string; content?: string }> };
    return messages
      .filter((m) => m.type === 'text' && m.name !== 'user')
      .map((m) => m.content ?? '')
      .join('');
  }

  /** The probe's view of our raw clients' connections (matched by port). */
  const ours = (stats: ProbeStats) => stats.sockets.filter((s) => clients.some((c) => c.socket.localPort === s.remotePort));

  it(`${STUCK} stuck followers cost under 1 MB each beyond a reading client; the run completes; the stream resumes; a normal client works`, async () => {
    // A first run loads the model provider and warms the code paths: not part of either cost.
    await within(10_000, 'warm-up', chat('warm-up', 'after'));
    const base = await agent.stats();

    // Reference: one client reads a whole run.
    const readingRss = await peakRssGrowth(async () => {
      const frames = await within(60_000, 'reading client', chat('reading', 'reading'));
      expect(frames.at(-1)?.data.type).toBe('done');
      await until(async () => !(await active('reading')), 10_000);
    });
    const afterReading = await agent.stats();
    const readingCost = afterReading.retained - base.retained;

    // Sixteen followers of one run stop reading after their first bytes.
    const body = JSON.stringify({ chat_id: 'stuck', message: 'stuck' });
    const head = `Host: 127.0.0.1\r\nAuthorization: Bearer ${secret}\r\n`;
    const stuckRss = await peakRssGrowth(async () => {
      const starter = new RawClient(
        port,
        `POST /chat HTTP/1.1\r\n${head}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      clients.push(starter);
      await starter.stall((t) => t.includes('\r\n\r\n'));
      await until(() => active('stuck'), 10_000);
      for (let i = 1; i < STUCK; i++) {
        const follower = new RawClient(port, `GET /chat/stuck/stream HTTP/1.1\r\n${head}\r\n`);
        clients.push(follower);
        // `stream_meta` proves it joined the active run (a late one would get a lone `done`).
        await follower.stall((t) => t.includes('"type":"stream_meta"'));
      }
      openGate();
      // The run goes on and finishes without its stuck followers.
      await until(async () => !(await active('stuck')), 60_000);
    });
    const stuck = await agent.stats();
    const stuckCost = stuck.retained - afterReading.retained;
    const buffered = ours(stuck).map((s) => s.writableLength);
    const received = clients.map((c) => c.received);
    console.log(
      `agent memory after GC: reading client +${(readingCost / MB).toFixed(1)} MB, ${STUCK} stuck clients +${(stuckCost / MB).toFixed(1)} MB; ` +
        `peak RSS growth ${readingRss.toFixed(1)} MB vs ${stuckRss.toFixed(1)} MB; reply ${(REPLY_BYTES / MB).toFixed(1)} MB; ` +
        `per stuck connection: agent buffers ≤ ${Math.max(...buffered)} B, client read ≤ ${Math.max(...received)} B`,
    );
    // Every stuck connection is held at the high-water mark: the bridge stopped writing to it.
    expect(buffered).toHaveLength(STUCK);
    for (const bytes of buffered) expect(bytes).toBeLessThanOrEqual(MAX_BUFFERED);
    // None of them got the reply, so what was not written stayed unwritten (not buffered).
    for (const bytes of received) expect(bytes).toBeLessThan(REPLY_BYTES / 2);
    expect(stuckCost).toBeLessThan(readingCost + STUCK * MB);
    // Peak RSS moves with GC timing (±25 MB between runs here); this only catches a gross leak,
    // like the ~90 MB sixteen unbounded writers add. The retained-memory bound above is the tight one.
    expect(stuckRss).toBeLessThan(readingRss + 64);
    // History is whole for both runs.
    expect((await assistantText('reading')).length).toBe(REPLY_BYTES);
    expect((await assistantText('stuck')).length).toBe(REPLY_BYTES);

    // A stuck follower that reads again gets every remaining event, up to `done`.
    const rest = await clients[1]!.drain();
    expect(rest.length).toBeGreaterThan(REPLY_BYTES);
    // The clients go away: the agent lets their connections go.
    for (const c of clients) c.socket.destroy();
    await until(async () => ours(await agent.stats()).length === 0, 10_000);

    // A normal client afterwards.
    const frames = await within(10_000, 'normal client', chat('after', 'after'));
    expect(withoutKeepalive(frames).map((f) => f.data.type)).toEqual(['text', 'done']);
    expect((await fetch(`${agent.url}/health`)).status).toBe(200);
  }, 150_000);
});
