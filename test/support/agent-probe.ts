/**
 * Loaded into an agent child process with `--import` (see `startAgentProcess({ probe: true })`):
 * answers an IPC `stats` message with the process's memory after a full GC and, per accepted TCP
 * connection, the bytes its socket holds in user space waiting for the kernel (`writableLength`).
 * That is what a writer without backpressure would pile up for a client that stops reading, and
 * it is invisible from outside the process (kernel buffers are not in RSS either).
 */
import net from 'node:net';

export interface ProbeSocket {
  /** The client's port: matches `localPort` of the test's socket. */
  remotePort: number;
  writableLength: number;
}

export interface ProbeStats {
  rss: number;
  /** `heapUsed + external` after a full GC: what the process still holds. */
  retained: number;
  sockets: ProbeSocket[];
}

const sockets = new Set<net.Socket>();
type Emit = (this: net.Server, event: string | symbol, ...args: unknown[]) => boolean;
const emit = net.Server.prototype.emit as Emit;
// http.Server inherits emit from net.Server: every accepted connection passes here.
net.Server.prototype.emit = function (this: net.Server, event: string | symbol, ...args: unknown[]) {
  if (event === 'connection') {
    const socket = args[0] as net.Socket;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  }
  return emit.call(this, event, ...args);
} as typeof net.Server.prototype.emit;

const gc = (globalThis as { gc?: () => void }).gc;

process.on('message', (message) => {
  if (message !== 'stats') return;
  // Two collections a turn apart: the second one frees what finalizers of the first released.
  gc?.();
  setImmediate(() => {
    gc?.();
    report();
  });
});

function report(): void {
  const memory = process.memoryUsage();
  const stats: ProbeStats = {
    rss: memory.rss,
    retained: memory.heapUsed + memory.external,
    sockets: [...sockets].map((s) => ({ remotePort: s.remotePort ?? 0, writableLength: s.writableLength })),
  };
  process.send?.(stats);
}
// The IPC channel must not keep the agent alive on its own (graceful stop still exits).
process.channel?.unref();
