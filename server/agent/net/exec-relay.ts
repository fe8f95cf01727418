/**
 * With AGENT_EXEC_NETWORK=allowlist the account service lets `exec` commands share the agent's
 * network namespace, where nothing leads out but this relay: a loopback TCP port whose bytes go
 * unchanged to the egress gateway's Unix socket for exec (AGENT_EXEC_EGRESS_SOCKET), not the
 * agent's own: there the gateway adds no provider key. Commands use it as their HTTP(S) proxy
 * (HTTP_PROXY, HTTPS_PROXY), so the gateway, which speaks the proxy protocol, decides what they
 * may reach with the same allowlist as the agent's own calls.
 */
import net from 'node:net';

export async function startExecRelay(proxyUrl: string, egressSocket: string): Promise<{ close(): Promise<void> }> {
  const { hostname, port } = new URL(proxyUrl);
  const server = net.createServer((client) => {
    const gateway = net.connect(egressSocket);
    client.pipe(gateway).pipe(client);
    client.on('error', () => gateway.destroy());
    gateway.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(port), hostname, () => resolve());
  });
  return { close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
