/**
 * Streaming measurements shared by bench/chat.ts and bench/proxy.ts: a raw SSE client (no
 * EventSource, one connection per stream), a fan-out phase that runs N chats at once while it
 * samples the servers' RSS, and the percentile and rounding they report with.
 *
 * Latency per event: the scripted model (in the bench process) stamps each chunk with
 * `performance.now()` when it writes it (`stampedChunk`); the client (same process, same clock)
 * subtracts it when the `data:` line arrives (`latencyOfStamp`).
 *
 * Reconnect replay: `timedReplay` times one read of a run's buffer, from the request to the last
 * event (a run's `done`, or the last buffered event of a run that is still active).
 */
import { readFileSync } from 'node:fs';
import { request, Agent } from 'node:http';
import { performance } from 'node:perf_hooks';
import { lastUserText, type ModelRequest } from '../../test/support/scripted-model.js';
import { cpuMsOf } from './harness.js';

export const round = (n: number) => Math.round(n * 100) / 100;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A chunk that carries the time it was written. */
export const stampedChunk = () => `t=${performance.now().toFixed(3)};`;

/** The user message of bench chat `chat` of `chats` (from 0); `chunkGrid` reads it back from the model request. */
export const benchMessage = (chat: number, chats: number): string => `bench ${chat}/${chats}`;

/**
 * The scripted model's chunk schedule (a `pauseBefore`) for the bench chat whose request this is:
 * every `intervalMs` on a grid offset by `chat × intervalMs / chats`, so the chats' chunks are
 * spread evenly over each interval whatever the server under test does. A plain pause after each
 * chunk keeps every stream in the phase its run happened to start at; with hundreds of runs
 * started at once that pattern differs per server and per round (measured: up to 80 of 500
 * chunks within the same 10 ms of a 500 ms interval), and the queueing it causes moved one
 * round's p99 by several ms.
 */
export function chunkGrid(request: ModelRequest, intervalMs: number): (index: number) => number {
  const [, chat = 0, chats = 1] = (/^bench (\d+)\/(\d+)$/.exec(lastUserText(request)) ?? []).map(Number);
  const offset = (chat % chats) * (intervalMs / chats);
  let due = 0;
  return (index) => {
    const now = performance.now();
    // The first chunk waits for the chat's next slot at least half an interval away, as the others wait a whole one.
    due = index === 0 ? offset + Math.ceil((now + intervalMs / 2 - offset) / intervalMs) * intervalMs : due + intervalMs;
    return due - now;
  };
}

/** ms since the chunk was written, or undefined when `content` is not a stamped chunk. */
export function latencyOfStamp(content: string | undefined): number | undefined {
  return content?.startsWith('t=') ? performance.now() - Number(content.slice(2, -1)) : undefined;
}

export function rssMb(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

export function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const httpAgent = new Agent({ keepAlive: false, maxSockets: Infinity });

export type StreamEvent = { type: string; content?: string };

/** One SSE request; calls `onData` with each `data:` JSON (and the frame's `id:`, if any); resolves at the end of the body. */
export function sse(
  url: string,
  opts: { method: string; headers?: Record<string, string>; body?: string },
  onData: (data: StreamEvent, id: string | undefined) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method, headers: opts.headers, agent: httpAgent }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`${url}: HTTP ${res.statusCode}`));
        res.resume();
        return;
      }
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const at = frame.indexOf('data: ');
          const id = frame.startsWith('id: ') ? frame.slice(4, frame.indexOf('\n')) : undefined;
          if (at >= 0) onData(JSON.parse(frame.slice(at + 6)) as StreamEvent, id);
        }
      });
      res.on('end', resolve);
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

export interface PhaseResult {
  server: string;
  chats: number;
  events: number;
  seconds: number;
  eventsPerSecond: number;
  medianMs: number;
  p99Ms: number;
  maxMs: number;
  peakRssMb: number;
  idleRssMb: number;
  errors: number;
  /** CPU time of the server (`pid`) per event received, in µs (10 ms clock ticks over the phase). */
  cpuUsPerEvent: number;
  /** RSS once a second during the phase. */
  rssTimelineMb: number[];
  /** Peak RSS of the other processes sampled (e.g. the proxy in front of `pid`), by name. */
  otherPeakRssMb?: Record<string, number>;
}

/**
 * `chats` concurrent `post(chat)` calls; each records its events' latencies into `latencies`
 * (advancing `counter.n`). Samples the RSS of `pid` (and of `others`) every 100 ms.
 */
export async function streamPhase(
  name: string,
  pid: number,
  post: (chat: number) => Promise<void>,
  latencies: Float64Array,
  counter: { n: number },
  chats: number,
  others: Record<string, number> = {},
): Promise<PhaseResult> {
  const idleRssMb = rssMb(pid);
  let peak = idleRssMb;
  const otherPeaks = Object.fromEntries(Object.entries(others).map(([k, p]) => [k, rssMb(p)]));
  const sampleOthers = () => {
    for (const [k, p] of Object.entries(others)) otherPeaks[k] = Math.max(otherPeaks[k]!, rssMb(p));
  };
  const timeline: number[] = [];
  let ticks = 0;
  const sampler = setInterval(() => {
    const now = rssMb(pid);
    peak = Math.max(peak, now);
    sampleOthers();
    if (++ticks % 10 === 0) timeline.push(Math.round(now));
  }, 100);
  counter.n = 0;
  let errors = 0;
  const cpuBefore = await cpuMsOf(pid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: chats }, (_, chat) =>
      post(chat).catch((error: unknown) => {
        errors++;
        if (errors < 3) console.error(`${name}: ${String(error)}`);
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuMs = (await cpuMsOf(pid)) - cpuBefore;
  clearInterval(sampler);
  peak = Math.max(peak, rssMb(pid));
  sampleOthers();
  const sorted = latencies.slice(0, counter.n).sort();
  return {
    server: name,
    chats,
    events: counter.n,
    seconds: round(seconds),
    eventsPerSecond: Math.round(counter.n / seconds),
    medianMs: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted[sorted.length - 1] ?? NaN),
    peakRssMb: Math.round(peak),
    idleRssMb: Math.round(idleRssMb),
    errors,
    cpuUsPerEvent: Math.round((cpuMs * 1000) / Math.max(1, counter.n)),
    rssTimelineMb: timeline,
    ...(Object.keys(others).length ? { otherPeakRssMb: Object.fromEntries(Object.entries(otherPeaks).map(([k, v]) => [k, Math.round(v)])) } : {}),
  };
}

export interface ReplayResult {
  /** Events received up to and including the last one (keepalives not counted). */
  events: number;
  /** From the request to the last event (or to the end, failure or timeout when incomplete). */
  ms: number;
  /** The last event arrived within the time limit. */
  complete: boolean;
  error?: string;
}

/**
 * One replay, timed: `read(onData)` opens the stream; the clock stops at the event for which
 * `isLast(event, n)` holds (n: events so far, this one included), or when the stream ends,
 * fails or `timeoutMs` passes first (then `complete` is false). The stream is the caller's: a
 * replay of an active run stays open after its last buffered event.
 */
export function timedReplay(
  read: (onData: (event: StreamEvent) => void) => Promise<void>,
  isLast: (event: StreamEvent, n: number) => boolean,
  timeoutMs: number,
): Promise<ReplayResult> {
  return new Promise((resolve) => {
    let events = 0;
    let settled = false;
    const started = performance.now();
    const settle = (complete: boolean, error?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ events, ms: round(performance.now() - started), complete, ...(error === undefined ? {} : { error: String(error) }) });
    };
    const timer = setTimeout(() => settle(false, `over ${timeoutMs} ms`), timeoutMs);
    read((event) => {
      if (settled || event.type === 'keepalive') return;
      if (isLast(event, ++events)) settle(true);
    }).then(
      () => settle(false, 'the stream ended before its last event'),
      (error: unknown) => settle(false, error),
    );
  });
}
