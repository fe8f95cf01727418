/**
 * 503 AGENT_CAPACITY: every agent the service can run is working. A call that meets it waits the
 * Retry-After the service gives and tries again (a few times), and a status line tells the person
 * what is going on meanwhile, instead of an error they would have to act on.
 */
import type { ErrorCode } from '@contracts/errors.js';

export const CAPACITY_RETRIES = 5;
const MAX_WAIT_S = 30;

type BusyListener = (retryInSeconds: number | null) => void;
const listeners = new Set<BusyListener>();
const notify = (seconds: number | null) => {
  for (const listener of listeners) listener(seconds);
};

/** Called with the wait before a retry, then with null once a call got through (or gave up). */
export function onBusy(listener: BusyListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function wait(ms: number, signal: AbortSignal | null | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

export function retryingWhenBusy(base: typeof fetch): typeof fetch {
  return async (input, init) => {
    for (let attempt = 0; ; attempt++) {
      const res = await base(input, init);
      const refused =
        res.status === 503 &&
        attempt < CAPACITY_RETRIES &&
        (
          (await res
            .clone()
            .json()
            .catch(() => ({}))) as { code?: ErrorCode }
        ).code === 'AGENT_CAPACITY';
      if (!refused) {
        if (attempt > 0) notify(null);
        return res;
      }
      const seconds = Math.min(MAX_WAIT_S, Math.max(1, Number(res.headers.get('retry-after')) || 5));
      notify(seconds);
      await wait(seconds * 1000, init?.signal);
    }
  };
}

/** The status line: hidden until the service says it is busy. */
export function busyNotice(document: Document): HTMLElement {
  const el = document.createElement('p');
  el.setAttribute('role', 'status');
  el.className = 'busy-notice';
  el.hidden = true;
  onBusy((seconds) => {
    el.hidden = seconds === null;
    el.textContent = seconds === null ? '' : `The service is busy right now. Trying again in ${seconds} s…`;
  });
  return el;
}
