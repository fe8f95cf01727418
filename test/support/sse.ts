/**
 * A small SSE reader over fetch for tests: yields each frame (`id:` if any, `data:` parsed as
 * JSON) as it arrives, so tests can stop mid-stream, reconnect and compare.
 */
export interface SseFrame {
  id?: string;
  data: { type: string; [key: string]: unknown };
}

export interface SseStream {
  status: number;
  headers: Headers;
  frames: AsyncGenerator<SseFrame>;
  /** Drops the connection (client disconnect). */
  close(): void;
}

export async function openSse(url: string, init: RequestInit = {}): Promise<SseStream> {
  const controller = new AbortController();
  const res = await fetch(url, { ...init, signal: controller.signal });
  return { status: res.status, headers: res.headers, frames: sseFrames(res, () => controller.signal.aborted), close: () => controller.abort() };
}

/**
 * The frames of an event-stream answer as they arrive. A cut connection ends the frames quietly
 * when `expectedCut()` says the cut was wanted (the test aborted it, or it counts cut streams
 * itself); otherwise it is the test's error.
 */
export async function* sseFrames(res: Response, expectedCut: () => boolean): AsyncGenerator<SseFrame> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const raw = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame: Partial<SseFrame> = {};
        for (const line of raw.split('\n')) {
          if (line.startsWith('id: ')) frame.id = line.slice(4);
          else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6)) as SseFrame['data'];
        }
        if (frame.data) yield frame as SseFrame;
      }
    }
  } catch (error) {
    if (!expectedCut()) throw error;
  }
}

/**
 * Reads frames until `done` (inclusive) or `stopWhen` says so; returns what it read. The stream
 * stays open, so a later call continues where this one stopped (no `for await`, which would
 * close it on break).
 */
export async function readFrames(stream: SseStream, stopWhen?: (frame: SseFrame, all: SseFrame[]) => boolean): Promise<SseFrame[]> {
  const all: SseFrame[] = [];
  for (;;) {
    const next = await stream.frames.next();
    if (next.done) break;
    all.push(next.value);
    if (next.value.data.type === 'done' || stopWhen?.(next.value, all)) break;
  }
  return all;
}

/** Reads until `n` frames other than keepalive have arrived (or the stream ends). */
export function takeEvents(stream: SseStream, n: number): Promise<SseFrame[]> {
  return readFrames(stream, (_f, all) => withoutKeepalive(all).length >= n).then(withoutKeepalive);
}

export const withoutKeepalive = (frames: SseFrame[]) => frames.filter((f) => f.data.type !== 'keepalive');

/**
 * The run's events, keepalives left out: when they come depends on how busy the machine is
 * (AGENT_KEEPALIVE_INTERVAL, 2 s by default); runs.test.ts checks them.
 */
export const events = (frames: SseFrame[]) => withoutKeepalive(frames).map((f) => f.data);
