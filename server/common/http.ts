/**
 * The express shell both services share: request ids and access logs, security headers,
 * the JSON body limit, the catch-all 404 and the one error handler, and graceful shutdown.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer, IncomingMessage, ServerResponse, type Server, type ServerOptions } from 'node:http';
import { Server as NetServer, type AddressInfo, type Socket } from 'node:net';
import type { AnyRouter, inferRouterContext } from '@trpc/server';
import { createExpressMiddleware } from '@trpc/server/adapters/express';
import express, { type ErrorRequestHandler, type Express, type Request, type RequestHandler, type Response } from 'express';
import { AppError, mapError, notFound, type MappedError } from './errors.js';
import type { Logger } from './log.js';
import { methodLabel, observeRequest, routeLabel, type ServiceMetrics } from './metrics.js';
import type { RequestTracing } from './tracing.js';

export const JSON_BODY_LIMIT = '1mb';

declare module 'express-serve-static-core' {
  interface Request {
    id: string;
    log: Logger;
  }
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

const BASE_LOG = Symbol('baseLog');
type WithBaseLog = Request & { [BASE_LOG]?: Logger; _log?: Logger };

/**
 * `req.log` is a child logger bound to the request id, made on first use only: most requests on a
 * hot path never log, and a pino child per request was a measurable share of their cost. Defined
 * on the app's own request prototype (`app.request`, which express makes per app from
 * `express.request`), so nothing outside the app's requests is touched.
 */
function lazyRequestLog(app: Express): void {
  Object.defineProperty(app.request, 'log', {
    configurable: true,
    get(this: WithBaseLog): Logger {
      this._log ??= (this[BASE_LOG] as Logger).child({ reqId: this.id });
      return this._log;
    },
    set(this: WithBaseLog, value: Logger) {
      this._log = value;
    },
  });
}

const PARAMETER_NAME = /^[\w.[\]-]{1,24}$/;

/**
 * A request's URL as the access log writes it: the path, and of the query only its parameter
 * names. Query values are where secrets travel (a sign-in link's `token`, an OAuth callback's
 * `code` and `state`, a tRPC query's `input` with a user's chat text), and a log is read by more
 * people and kept longer than the request (docs/security.md, Logs hold no secrets).
 */
export function loggedUrl(originalUrl: string): string {
  const mark = originalUrl.indexOf('?');
  if (mark === -1) return originalUrl;
  const names = [...new URLSearchParams(originalUrl.slice(mark + 1)).keys()];
  // A value sent without a name (`?<token>`) arrives as a name: only short, name-like ones are kept.
  const query = names.map((name) => `${PARAMETER_NAME.test(name) ? name : '…'}=…`).join('&');
  return query ? `${originalUrl.slice(0, mark)}?${query}` : originalUrl.slice(0, mark);
}

/** Request id, lazy request logger, access log, metrics, trace span and the security headers every answer carries. */
function requestContext(log: Logger, metrics: ServiceMetrics | undefined, tracing: RequestTracing | undefined): RequestHandler {
  // The access log line only when it would be written (LOG_LEVEL info or lower): no per-request
  // timer and listener when neither it nor metrics nor traces want one.
  const accessLog = log.isLevelEnabled('info');
  const timed = accessLog || metrics !== undefined || tracing !== undefined;
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    req.id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    (req as WithBaseLog)[BASE_LOG] = log;
    res.setHeader('X-Request-Id', req.id);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
    if (timed) {
      const started = process.hrtime.bigint();
      const traceparent = req.headers.traceparent;
      const endSpan = tracing?.begin(methodLabel(req.method), req.id, typeof traceparent === 'string' ? traceparent : undefined);
      // 'close' also comes for answers the client cut short (a stream it left).
      res.once('close', () => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        if (metrics) observeRequest(metrics, req, res, seconds);
        endSpan?.(routeLabel(req, res), res.statusCode);
        if (accessLog)
          req.log.info({ method: req.method, url: loggedUrl(req.originalUrl), status: res.statusCode, ms: Math.round(seconds * 10_000) / 10 }, 'request');
      });
    }
    next();
  };
}

/**
 * CORS for exactly one origin (the web client's, when it is served from another origin than the
 * API): credentials are bearer headers, so no cookies are allowed cross-origin. Every other origin
 * gets no CORS header at all, so browsers keep their same-origin rule; preflights end here (204).
 */
export function corsFor(allowedOrigin: string): RequestHandler {
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (origin === undefined) return next();
    res.vary('Origin');
    const allowed = origin === allowedOrigin;
    if (allowed) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Expose-Headers', 'Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, X-Request-Id');
    }
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      if (allowed) {
        res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PATCH, DELETE');
        res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-Request-Id, trpc-accept');
        res.setHeader('Access-Control-Max-Age', '600');
      }
      res.status(204).end();
      return;
    }
    next();
  };
}

/** Whether a request comes with a body (HTTP/1.1: a length above 0, or chunks). */
export const hasBody = (req: IncomingMessage): boolean => req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;

/**
 * How long a request body may take to arrive (docs/security.md, "Stalled bodies"). A client that
 * sends headers and then a trickle, or nothing, would otherwise hold its request (and whatever
 * the request holds: an agent, a socket on it) for as long as it liked. Node's own
 * `requestTimeout` cannot serve: it would cut long uploads too, and answers without our error body.
 */
export interface BodyTimeouts {
  /** A body must be complete this long after its headers (REQUEST_BODY_TIMEOUT): else 408 REQUEST_TIMEOUT. */
  deadlineMs: number;
  /** An upload must instead deliver 1 KiB in every window this long (UPLOAD_IDLE_TIMEOUT_SECONDS): else 408 UPLOAD_STALLED. */
  uploadIdleMs: number;
  isUpload(req: Request): boolean;
}

const UPLOAD_MIN_BYTES_PER_WINDOW = 1024;

function bodyTimeouts(timeouts: BodyTimeouts): RequestHandler {
  return (req, res, next) => {
    if (!hasBody(req)) return next();
    const socket = req.socket;
    // Answered 408 when the route has not answered yet; either way the rest of the body is never
    // read: once the answer is out the request is destroyed, so the route sees it aborted (a
    // partial upload is removed, a proxied request ends on the agent) and the connection closes.
    // Closing the socket alone would not do: a request already answered is not aborted with it.
    const cut = (error: AppError) => {
      clearTimeout(timer);
      if (!res.headersSent) {
        res.setHeader('Connection', 'close');
        sendError(req, res, mapError(error));
      }
      const abort = () => req.destroy();
      if (res.writableEnded && !res.writableFinished) res.once('finish', abort);
      else abort();
    };
    // Each verdict waits for the next turn of the event loop: a timer that fires late (the loop was
    // busy) runs before the reads that were waiting, and would take bytes that came for a stall.
    let timer: NodeJS.Timeout;
    if (timeouts.isUpload(req)) {
      let seen = socket.bytesRead;
      const seconds = timeouts.uploadIdleMs / 1000;
      timer = setInterval(() => {
        setImmediate(() => {
          if (req.complete || socket.destroyed) return clearInterval(timer);
          // A full buffer means this side is not reading (an agent starting, a slow disk): not the client's stall.
          const ourWait = req.readableLength >= req.readableHighWaterMark;
          if (ourWait || socket.bytesRead - seen >= UPLOAD_MIN_BYTES_PER_WINDOW) {
            seen = socket.bytesRead;
            return;
          }
          cut(new AppError(408, 'UPLOAD_STALLED', `Upload too slow: under 1 KiB in ${seconds} s`));
        });
      }, timeouts.uploadIdleMs);
    } else {
      timer = setTimeout(() => {
        setImmediate(() => {
          if (!req.complete && !socket.destroyed)
            cut(new AppError(408, 'REQUEST_TIMEOUT', `The request body did not arrive within ${timeouts.deadlineMs / 1000} s`));
        });
      }, timeouts.deadlineMs);
    }
    timer.unref();
    // An answer given before the body is in (a 401, say) leaves the timer to end the connection.
    res.once('close', () => {
      if (req.complete) clearTimeout(timer);
    });
    next();
  };
}

/** `trustProxy`: express's `trust proxy` (a hop count, or the proxies believed), checked by the service's config; unset trusts none. */
export function createHttpApp(
  log: Logger,
  opts: { trustProxy?: number | string[]; metrics?: ServiceMetrics; tracing?: RequestTracing; bodyTimeouts?: BodyTimeouts; strictRouting?: boolean } = {},
): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', opts.trustProxy ?? false);
  if (opts.strictRouting) {
    // One spelling per path: `/CHAT`, `/chat/` are not `/chat` (docs/security.md, "One spelling
    // per agent path"). Set before the first route: express builds its router with them then.
    app.enable('case sensitive routing');
    app.enable('strict routing');
  }
  lazyRequestLog(app);
  app.use(requestContext(log, opts.metrics, opts.tracing));
  if (opts.bodyTimeouts) app.use(bodyTimeouts(opts.bodyTimeouts));
  return app;
}

/**
 * A service's tRPC endpoint (mounted at /trpc). An error's own headers (Retry-After on 429) reach
 * tRPC clients as they reach REST ones; unexpected failures are logged with the request id.
 */
export function trpcEndpoint<R extends AnyRouter>(router: R, createContext: (req: Request) => inferRouterContext<R>): RequestHandler {
  const procedures = router._def.procedures as Record<string, unknown>;
  const endpoint = createExpressMiddleware({
    router,
    createContext: ({ req }) => createContext(req as Request),
    responseMeta: ({ errors }) => {
      const withHeaders = errors.find((error): error is AppError => error instanceof AppError && Object.keys(error.headers).length > 0);
      return withHeaders ? { headers: withHeaders.headers } : {};
    },
    onError: ({ error, req }) => {
      if (error.code === 'INTERNAL_SERVER_ERROR') (req as Request).log.error({ err: error.cause ?? error }, 'trpc error');
    },
  });
  return (req, res, next) => {
    // The metrics label: a procedure this router has, never a name the caller made up.
    const name = req.path.slice(1);
    res.locals.route = Object.hasOwn(procedures, name) ? `/trpc/${name}` : '/trpc/*';
    return endpoint(req, res, next);
  };
}

/** JSON bodies only when the client says so; anything else is left for the route to refuse. */
export const jsonBody = express.json({ limit: JSON_BODY_LIMIT, strict: false, type: ['application/json', 'application/*+json'] });

export function sendError(req: Request, res: Response, mapped: MappedError): void {
  if (mapped.unexpected) req.log.error({ err: mapped }, 'unexpected error');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  for (const [name, value] of Object.entries(mapped.headers)) res.setHeader(name, value);
  res.status(mapped.status).json(mapped.body);
}

/** Last in the chain: unknown routes → 404 body; every error → the mapped body, never a stack. */
export function finishHttpApp(app: Express): void {
  app.use((req, res) => sendError(req, res, mapError(notFound(`No route for ${req.method} ${req.path}`, 'ROUTE_NOT_FOUND'))));
  const onError: ErrorRequestHandler = (error, req, res, _next) => {
    const mapped = mapError(error);
    if (mapped.unexpected) req.log.error({ err: error }, 'unhandled error');
    sendError(req, res, { ...mapped, unexpected: false });
  };
  app.use(onError);
}

export interface RunningServer {
  server: Server;
  url: string;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then cuts the rest. */
  close(graceMs?: number): Promise<void>;
}

/** How long a connection that has no request in progress may still start one while we stop. */
const IDLE_GRACE_MS = 300;

/**
 * The http server's request and response constructors, made so that their instances already have
 * the app's prototypes (`app.request`, `app.response`). Express's `app.handle` re-parents every
 * request and response with `Object.setPrototypeOf`, which gives each one a new hidden class and
 * slows every later property access on it; when the prototype is already the one being set, that
 * call does nothing. Everything else is as express makes it. Measured (bench/ A/B, 32
 * connections): a bare express JSON route served 1.8–1.9× the requests, our refresh 1.13–1.33×.
 *
 * Node's IncomingMessage and ServerResponse are plain constructor functions, so a function can
 * run them on an object it was given (`Reflect.construct` with another `newTarget` does the same
 * but measured slower than re-parenting). Should a Node release make them classes, the server
 * falls back to its own constructors.
 */
function serverClassesFor(app: Express): ServerOptions {
  const callable = (fn: unknown) => typeof fn === 'function' && !Function.prototype.toString.call(fn).startsWith('class');
  if (!callable(IncomingMessage) || !callable(ServerResponse)) return {};
  const initRequest = IncomingMessage as unknown as (this: IncomingMessage, socket: Socket) => void;
  const initResponse = ServerResponse as unknown as (this: ServerResponse, req: IncomingMessage, options?: unknown) => void;
  function ExpressRequest(this: IncomingMessage, socket: Socket) {
    initRequest.call(this, socket);
  }
  ExpressRequest.prototype = app.request;
  function ExpressResponse(this: ServerResponse, req: IncomingMessage, options?: unknown) {
    initResponse.call(this, req, options);
  }
  ExpressResponse.prototype = app.response;
  return { IncomingMessage: ExpressRequest as unknown as typeof IncomingMessage, ServerResponse: ExpressResponse as unknown as typeof ServerResponse };
}

function httpUrlOf(address: AddressInfo): string {
  return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}

/**
 * Serves `app` on host:port, or on the Unix socket `socketPath` when given (a sandboxed agent:
 * only the account service, which owns the socket's directory, can reach it). The URL of a socket
 * server is `unix:<path>`.
 */
export async function listen(app: Express, host: string, port: number, socketPath?: string): Promise<RunningServer> {
  const server = createServer(serverClassesFor(app), app);
  if (socketPath) rmSync(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const ready = () => {
      server.off('error', reject);
      resolve();
    };
    if (socketPath) server.listen(socketPath, ready);
    else server.listen(port, host, ready);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0; // long SSE streams and large uploads: bodies have their own timeouts (BodyTimeouts)

  // Node's own server.close() drops every connection it deems idle — including one whose request
  // has arrived but not yet been parsed — so shutdown tracks connections itself.
  const busy = new Map<Socket, number>();
  let closing = false;
  server.on('connection', (socket: Socket) => {
    busy.set(socket, 0);
    socket.once('close', () => busy.delete(socket));
  });
  server.on('request', (req, res) => {
    const socket = req.socket;
    busy.set(socket, (busy.get(socket) ?? 0) + 1);
    if (closing) res.setHeader('Connection', 'close');
    res.once('close', () => {
      const left = (busy.get(socket) ?? 1) - 1;
      busy.set(socket, left);
      if (closing && left === 0) socket.end();
    });
  });

  let closed: Promise<void> | undefined;
  return {
    server,
    url: socketPath ? `unix:${socketPath}` : httpUrlOf(server.address() as AddressInfo),
    close(graceMs = 5_000) {
      closed ??= new Promise<void>((resolve) => {
        closing = true;
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        force.unref();
        // net.Server#close: stop accepting and wait for connections, without http's idle sweep.
        NetServer.prototype.close.call(server, () => {
          clearTimeout(force);
          resolve();
        });
        setTimeout(() => {
          for (const [socket, requests] of busy) if (requests === 0) socket.end();
        }, IDLE_GRACE_MS).unref();
      });
      return closed;
    },
  };
}

/** SIGTERM/SIGINT → `stop()` once; a second signal exits at once. */
export function onShutdownSignal(log: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    log.info({ signal }, 'shutting down');
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', handler);
  process.once('SIGINT', handler);
}
