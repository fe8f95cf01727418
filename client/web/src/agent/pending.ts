/**
 * Proactive messages (heartbeat, subagents): `GET /pending` through the proxy every 10 s while
 * signed in. The agent clears what it returns, so they are kept here (localStorage, the newest
 * 50) and handed to listeners (the layout's inbox, the open chat). A 404 means the agent has no
 * pending endpoint yet: polling stops quietly.
 */
import { agentFetch, awaitingSecondFactor, signedIn } from '../api.js';
import type { PendingMessage } from './types.js';

const KEY = 'agent.pending';
const INTERVAL_MS = 10_000;
const listeners = new Set<(messages: PendingMessage[]) => void>();
let timer: ReturnType<typeof setTimeout> | undefined;
let running = false;
/** Which start the polling belongs to: a stop (sign-out) ends it, and a later start is another. */
let round = 0;

export function storedPending(): PendingMessage[] {
  try {
    const parsed = JSON.parse(localStorage.getItem(KEY) ?? '[]') as PendingMessage[];
    return Array.isArray(parsed) ? parsed : [];
  } catch {
    return [];
  }
}

export function dismissPending(message: PendingMessage): void {
  localStorage.setItem(KEY, JSON.stringify(storedPending().filter((m) => !(m.created_at === message.created_at && m.content === message.content))));
  for (const listener of listeners) listener([]);
}

export function onPending(listener: (messages: PendingMessage[]) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

async function poll(): Promise<void> {
  timer = undefined;
  // A session at its second step gets 403 for everything but that step: nothing to ask yet.
  if (!running || !signedIn() || awaitingSecondFactor() || document.visibilityState === 'hidden') return schedule();
  const asked = round;
  try {
    const res = await agentFetch('/pending');
    // Signed out while the answer was on its way (and maybe in again): the messages were that
    // account's, which this browser has forgotten; the next person here must not find them.
    if (asked !== round) return;
    if (res.status === 404) {
      running = false;
      return;
    }
    if (res.ok) {
      const { messages } = (await res.json()) as { messages: PendingMessage[] };
      if (messages.length > 0) {
        localStorage.setItem(KEY, JSON.stringify([...storedPending(), ...messages].slice(-50)));
        for (const listener of listeners) listener(messages);
      }
    }
  } catch {
    /* offline or signed out: try again later */
  }
  schedule();
}

function schedule(): void {
  if (running && timer === undefined) timer = setTimeout(() => void poll(), INTERVAL_MS);
}

export function startPendingPoll(): void {
  if (running) return;
  running = true;
  timer = setTimeout(() => void poll(), 1_000);
}

export function stopPendingPoll(): void {
  running = false;
  round++;
  if (timer) clearTimeout(timer);
  timer = undefined;
}
