/**
 * Talking to a user's agent: a typed tRPC client over the agent's /trpc with its secret —
 * queries and mutations over HTTP, subscriptions over SSE — and an adapter that turns a client
 * subscription back into an async iterable, so an account procedure can re-yield it event by
 * event without buffering.
 */
import { createTRPCClient, httpLink, httpSubscriptionLink, splitLink, type TRPCClient } from '@trpc/client';
import type { AnyRouter } from '@trpc/server';
import { EventSource } from 'eventsource';
import superjson from 'superjson';
import type { AgentRouter } from '@contracts/agent/router.js';
import type { AgentEndpoint } from './registry.js';
import { agentFetch } from './transport.js';

export type AgentClient = TRPCClient<AgentRouter>;

const clients = new Map<string, AgentClient>();

/**
 * A typed tRPC client for `url` (a service's /trpc) that sends `Authorization` on every call —
 * queries and mutations over HTTP, subscriptions over SSE (Node has no EventSource that can send
 * headers, so the `eventsource` package's fetch hook adds it). `authorization` is read per call.
 */
export function bearerTrpcClient<R extends AnyRouter>(url: string, authorization: () => string, fetchImpl: typeof fetch = fetch): TRPCClient<R> {
  // With R generic, tRPC cannot see that both our routers use superjson (server/common/trpc.ts):
  // the options are typed for the concrete router by the caller's R.
  const options = {
    links: [
      splitLink({
        condition: (op) => op.type === 'subscription',
        true: httpSubscriptionLink({
          url,
          transformer: superjson,
          EventSource,
          eventSourceOptions: {
            fetch: (input: string | URL | Request, init?: RequestInit) =>
              fetchImpl(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), authorization: authorization() } }),
          },
        }),
        false: httpLink({ url, transformer: superjson, fetch: fetchImpl, headers: () => ({ authorization: authorization() }) }),
      }),
    ],
  };
  return createTRPCClient<R>(options as never);
}

export function agentClient(agent: Pick<AgentEndpoint, 'url' | 'secret'>): AgentClient {
  const key = `${agent.url} ${agent.secret}`;
  let client = clients.get(key);
  if (!client) {
    const authorization = `Bearer ${agent.secret}`;
    const { base, fetch: fetchImpl } = agentFetch(agent.url);
    client = bearerTrpcClient<AgentRouter>(`${base}/trpc`, () => authorization, fetchImpl);
    // Agents move (restarts on new ports): keep the cache from growing without bound.
    if (clients.size > 1_000) clients.clear();
    clients.set(key, client);
  }
  return client;
}

export interface SubscribeCallbacks<T> {
  onData(value: T): void;
  onError(error: unknown): void;
  onComplete(): void;
  onStopped?(): void;
  onConnectionStateChange?(state: { state: string; error: unknown }): void;
}

/**
 * `subscribe(callbacks)` → async iterable. Values are queued only between a push and the
 * consumer's next pull; ending the iteration (the downstream client went away) unsubscribes.
 * Once `until` aborts, the iteration ends there, without an error (and unsubscribes).
 */
export async function* subscriptionIterable<T>(
  subscribe: (callbacks: SubscribeCallbacks<T>) => { unsubscribe(): void },
  until?: AbortSignal,
): AsyncGenerator<T> {
  const queue: T[] = [];
  let finished = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const subscription = subscribe({
    onData: (value) => {
      queue.push(value);
      notify();
    },
    onError: (error) => {
      failure = error;
      finished = true;
      notify();
    },
    onComplete: () => {
      finished = true;
      notify();
    },
    onStopped: () => {
      finished = true;
      notify();
    },
    // The link would reconnect to the agent on its own, silently, for ever (a dead agent comes
    // back at another address): the caller's stream ends with the failure instead, so the
    // client can say so and resume through the proxy once the agent is back.
    onConnectionStateChange: (state) => {
      if (state.state !== 'connecting' || !state.error || finished) return;
      failure = state.error;
      finished = true;
      notify();
    },
  });
  until?.addEventListener('abort', notify, { once: true });
  try {
    for (;;) {
      if (until?.aborted) return;
      if (queue.length > 0) {
        yield queue.shift() as T;
        continue;
      }
      if (finished) break;
      await new Promise<void>((resolve) => (wake = resolve));
    }
    if (failure !== undefined) throw failure;
  } finally {
    until?.removeEventListener('abort', notify);
    subscription.unsubscribe();
  }
}
