/**
 * The agent's outgoing HTTP (model provider, Telegram). A sandboxed agent has no network of its
 * own: the account service gives it an egress gateway (server/account/agents/egress/gateway.ts),
 * which checks each destination against an allowlist, adds the operator's credentials and
 * forwards the request. A local agent reaches it on one Unix socket, AGENT_EGRESS_SOCKET; an agent
 * in a Kubernetes pod on the account service's TCP address, AGENT_EGRESS_URL, presenting its own
 * AGENT_EGRESS_TOKEN in `Proxy-Authorization` (the NetworkPolicy lets the pod reach nothing else).
 * Requests travel as plain HTTP; the destination is the Host header, always with its port, and
 * the gateway knows from its allowlist whether that origin speaks TLS. Without a gateway (a
 * standalone agent on its own VM) requests go out directly.
 */
import net from 'node:net';

/** Where this agent's egress gateway listens. */
export type EgressGatewayAddress = { socketPath: string } | { url: URL; token: string };

/** What node:http needs to send a request through the gateway: where to connect, and the headers that authenticate it. */
export function gatewayConnection(gateway: EgressGatewayAddress): {
  connect: { socketPath: string } | { host: string; port: number };
  headers: Record<string, string>;
} {
  if ('socketPath' in gateway) return { connect: { socketPath: gateway.socketPath }, headers: {} };
  return {
    connect: { host: gateway.url.hostname, port: Number(gateway.url.port || 80) },
    headers: { 'proxy-authorization': `Bearer ${gateway.token}` },
  };
}

/** `https://api.example.com/v1` → where a request for it goes over the gateway socket. */
export function gatewayTarget(url: URL): { host: string; path: string } {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return { host: `${url.hostname.includes(':') ? `[${url.hostname}]` : url.hostname}:${port}`, path: `${url.pathname}${url.search}` };
}

/**
 * A WHATWG fetch that sends every request through `gateway`. undici is loaded on the first call:
 * only agents whose model or bot uses fetch pay for it.
 */
export function gatewayFetch(gateway: EgressGatewayAddress): typeof fetch {
  const { connect, headers: authentication } = gatewayConnection(gateway);
  let client: Promise<{ dispatcher: import('undici').Agent; undiciFetch: typeof import('undici').fetch }> | undefined;
  const viaGateway = async (input: string | URL | Request, init?: RequestInit) => {
    client ??= import('undici').then(({ Agent, fetch: undiciFetch }) => ({
      // Every connection goes to the gateway, whatever host the URL names.
      dispatcher: new Agent({
        connect:
          'socketPath' in connect
            ? connect
            : (_options, callback) => {
                const socket = net.connect(connect);
                socket.once('connect', () => callback(null, socket));
                socket.once('error', (error) => callback(error, null));
              },
      }),
      undiciFetch,
    }));
    const { dispatcher, undiciFetch } = await client;
    const request = new Request(input, init);
    const { host, path } = gatewayTarget(new URL(request.url));
    const headers = new Headers(request.headers);
    for (const [name, value] of Object.entries(authentication)) headers.set(name, value);
    // undici takes Host from the URL; the URL's scheme is plain http because TLS, if any, is the gateway's.
    return undiciFetch(`http://${host}${path}`, {
      method: request.method,
      headers,
      body: request.body,
      signal: request.signal,
      redirect: 'manual',
      dispatcher,
      ...(request.body ? { duplex: 'half' } : {}),
    } as Parameters<typeof undiciFetch>[1]);
  };
  return viaGateway as unknown as typeof fetch;
}
