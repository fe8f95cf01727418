/**
 * The bridge's route table: every REST route is registered here, so that JSON routes (from
 * procedure metadata) and hand-made adapters (SSE, 204, redirects, multipart, files) share one
 * error path, one 405 answer for known paths with the wrong method, and one OpenAPI document.
 */
import type { AnyRouter } from '@trpc/server';
import type { IRouter, NextFunction, Request, RequestHandler, Response } from 'express';
import type { ErrorCode } from '@contracts/errors.js';
import type { ZodOpenApiOperationObject, ZodOpenApiPathsObject } from 'zod-openapi';
import { AppError, mapError } from '../server/common/errors.js';
import { sendError } from '../server/common/http.js';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** A caller for the service's router, made per request (context from the request). */
export type CallerFor<R extends AnyRouter> = (req: Request, signal: AbortSignal) => ReturnType<R['createCaller']>;

/** The codes a service's routes can answer with whatever they do (its own auth codes, say), for the OpenAPI document. */
export interface ServiceErrorCodes {
  everyRoute: ErrorCode[];
  /** Added to the routes that take the service's credentials. */
  authenticated: ErrorCode[];
}

export interface RouteOptions {
  /** Overrides the path derived from `openapiPath` (`{id}` → `:id`), e.g. for a parameter that spans segments. */
  expressPath?: string;
  /** The route's own error codes (the OpenAPI document lists them with the service's). */
  errors?: ErrorCode[];
  authenticated?: boolean;
}

export class RouteTable {
  private readonly methodsByPath = new Map<string, Set<string>>();
  /** Routes without parameters by `METHOD /path`: found with one lookup (see constructor). */
  private readonly exactRoutes = new Map<string, RequestHandler[]>();
  /** OpenAPI entries for routes trpc-to-openapi cannot describe (streams, files, uploads). */
  readonly extraPaths: ZodOpenApiPathsObject = {};
  /** Each route's possible error codes by `method openapiPath` (lower-case method), for the OpenAPI document. */
  readonly errorCodes = new Map<string, ErrorCode[]>();

  constructor(
    readonly app: IRouter,
    private readonly serviceErrors: ServiceErrorCodes,
  ) {
    // Express tries every route's pattern in turn; the hottest calls (`GET /auth/me`, refresh)
    // are static paths, so an exact `METHOD /path` match is served first, with one Map lookup.
    // Everything else (parameters, HEAD, a trailing slash or other case that express also
    // accepts) falls through to the same handlers registered on the router below.
    app.use((req, res, next) => {
      const handlers = this.exactRoutes.get(`${req.method} ${req.path}`);
      if (!handlers) return next();
      // A route's handlers answer or fail (every chain ends in a handler that responds).
      let index = 0;
      const step = (error?: unknown): void => {
        if (error !== undefined) {
          next(error);
          return;
        }
        handlers[index++]?.(req, res, step);
      };
      step();
    });
  }

  /** `opts.expressPath`: e.g. `/files/{path}` served as `/files/*path`. */
  add(method: HttpMethod, openapiPath: string, handlers: RequestHandler[], doc?: ZodOpenApiOperationObject, opts: RouteOptions = {}): void {
    const expressPath = opts.expressPath ?? openapiPath.replace(/\{(\w+)\}/g, ':$1');
    const methods = this.methodsByPath.get(expressPath) ?? new Set<string>();
    methods.add(method.toUpperCase());
    if (method === 'get') methods.add('HEAD');
    this.methodsByPath.set(expressPath, methods);
    const wrapped = handlers.map((handler) => catchAsync(handler, openapiPath));
    if (!/[:*]/.test(expressPath)) this.exactRoutes.set(`${method.toUpperCase()} ${expressPath}`, wrapped);
    this.app[method](expressPath, ...wrapped);
    if (doc) this.extraPaths[openapiPath] = { ...this.extraPaths[openapiPath], [method]: doc };
    const codes = [...this.serviceErrors.everyRoute, ...(opts.authenticated ? this.serviceErrors.authenticated : []), ...(opts.errors ?? [])];
    this.errorCodes.set(`${method} ${openapiPath}`, [...new Set(codes)]);
  }

  /** Known path, unknown method → 405 with Allow. Call after every route is added. */
  finish(): void {
    for (const [expressPath, methods] of this.methodsByPath) {
      const allow = [...methods].sort().join(', ');
      this.app.all(expressPath, (req, res) => {
        res.setHeader('Allow', allow);
        sendError(req, res, mapError(new AppError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed here (allowed: ${allow})`)));
      });
    }
  }
}

/**
 * Express 5 forwards rejected promises, but an explicit wrapper keeps the contract obvious. It
 * also names the route for the metrics (the template, never the raw path).
 */
function catchAsync(handler: RequestHandler, route: string): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    res.locals.route = route;
    try {
      const result = handler(req, res, next) as unknown;
      if (result instanceof Promise) result.catch(next);
    } catch (error) {
      next(error);
    }
  };
}

/** An AbortSignal that fires when the client goes away before the answer is complete. */
export function requestSignal(res: Response): AbortSignal {
  const controller = new AbortController();
  // 'close' before the answer is finished covers every way the client can go away.
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
