/**
 * How the account service reaches an agent. A static agent has an http(s) URL. A local agent
 * listens on a Unix socket in a directory only the account service can open (the sandbox sees
 * its own copy of that one file and nothing beside it), and its URL is `unix:<socket path>`:
 * no TCP port exists that another tenant could connect to.
 */
import { Agent, fetch as undiciFetch } from 'undici';

const UNIX = 'unix:';

export const unixAgentUrl = (socketPath: string): string => `${UNIX}${socketPath}`;

export function socketPathOf(agentUrl: string): string | undefined {
  return agentUrl.startsWith(UNIX) ? agentUrl.slice(UNIX.length) : undefined;
}

/** Where node:http(s) connects for `agentUrl`: a socket path, or host and port. */
export function agentRequestTarget(agentUrl: string): { tls: boolean; connect: { socketPath: string } | { host: string; port: string } } {
  const socketPath = socketPathOf(agentUrl);
  if (socketPath) return { tls: false, connect: { socketPath } };
  const url = new URL(agentUrl);
  return { tls: url.protocol === 'https:', connect: { host: url.hostname, port: url.port } };
}

const dispatchers = new Map<string, Agent>();

function dispatcherFor(socketPath: string): Agent {
  let dispatcher = dispatchers.get(socketPath);
  if (!dispatcher) {
    dispatcher = new Agent({ connect: { socketPath } });
    dispatchers.set(socketPath, dispatcher);
  }
  return dispatcher;
}

/** Forgets the connection pool of a socket whose agent is gone. */
export function releaseAgentConnections(agentUrl: string): void {
  const socketPath = socketPathOf(agentUrl);
  const dispatcher = socketPath ? dispatchers.get(socketPath) : undefined;
  if (!socketPath || !dispatcher) return;
  dispatchers.delete(socketPath);
  void dispatcher.close().catch(() => undefined);
}

/**
 * A base URL and a WHATWG fetch for `agentUrl`: for a socket, requests name a placeholder host
 * and travel over the socket.
 */
export function agentFetch(agentUrl: string): { base: string; fetch: typeof fetch } {
  const socketPath = socketPathOf(agentUrl);
  if (!socketPath) return { base: agentUrl, fetch };
  const dispatcher = dispatcherFor(socketPath);
  const overSocket = (input: string | URL | Request, init?: RequestInit) =>
    undiciFetch(input instanceof Request ? input.url : input, { ...init, dispatcher } as Parameters<typeof undiciFetch>[1]);
  return { base: 'http://agent.local', fetch: overSocket as unknown as typeof fetch };
}
