/**
 * The agent's outgoing HTTP (model provider, Telegram). A sandboxed agent has no network: the
 * account service gives it one Unix socket, AGENT_EGRESS_SOCKET, behind which its egress gateway
 * (server/account/agents/egress-gateway.ts) checks each destination against an allowlist, adds the
 * operator's credentials and forwards the request. Requests travel over the socket as plain HTTP;
 * the destination is the Host header, always with its port, and the gateway knows from its
 * allowlist whether that origin speaks TLS. Without the socket (a standalone agent on its own
 * VM) requests go out directly.
 */

/** `https://api.example.com/v1` → where a request for it goes over the gateway socket. */
export function gatewayTarget(url: URL): { host: string; path: string } {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return { host: `${url.hostname.includes(':') ? `[${url.hostname}]` : url.hostname}:${port}`, path: `${url.pathname}${url.search}` };
}

/**
 * A WHATWG fetch that sends every request through the gateway on `socketPath`. undici is loaded on
 * the first call: only agents whose model or bot uses fetch pay for it.
 */
export function gatewayFetch(socketPath: string): typeof fetch {
  let client: Promise<{ dispatcher: import('undici').Agent; undiciFetch: typeof import('undici').fetch }> | undefined;
  const viaGateway = async (input: string | URL | Request, init?: RequestInit) => {
    client ??= import('undici').then(({ Agent, fetch: undiciFetch }) => ({ dispatcher: new Agent({ connect: { socketPath } }), undiciFetch }));
    const { dispatcher, undiciFetch } = await client;
    const request = new Request(input, init);
    const { host, path } = gatewayTarget(new URL(request.url));
    // undici takes Host from the URL; the URL's scheme is plain http because TLS, if any, is the gateway's.
    return undiciFetch(`http://${host}${path}`, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal: request.signal,
      redirect: 'manual',
      dispatcher,
      ...(request.body ? { duplex: 'half' } : {}),
    } as Parameters<typeof undiciFetch>[1]);
  };
  return viaGateway as unknown as typeof fetch;
}

/** The fetch outgoing calls use: through the gateway when there is one, else the global one. */
export function egressFetch(socketPath: string | undefined): typeof fetch {
  return socketPath ? gatewayFetch(socketPath) : fetch;
}
