import type { IncomingMessage } from 'node:http';
import { createServer } from 'node:net';

/** A loopback port that was free a moment ago (for child processes that must be told their port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 addresses. */
export function isLoopbackAddress(address: string | undefined): boolean {
  return address !== undefined && (address === '::1' || /^(?:::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i.test(address));
}

/**
 * A request that came straight from a process on this machine: a loopback peer that no proxy
 * relayed. A reverse proxy on this machine also connects from loopback, but on behalf of anyone,
 * and says so with `X-Forwarded-For` or `Forwarded`. Neither TRUST_PROXY nor `req.ip` is read:
 * what is served here must not depend on what a client claims.
 */
export function cameFromThisMachine(req: IncomingMessage): boolean {
  return isLoopbackAddress(req.socket.remoteAddress) && req.headers['x-forwarded-for'] === undefined && req.headers.forwarded === undefined;
}
