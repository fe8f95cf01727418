/**
 * JSON routes from procedure metadata: every query/mutation with `meta.openapi` is served at its
 * documented method and path. Input = path params + (JSON body | query string); the answer is
 * the procedure's output as JSON (201 with `rest.kind = 'created'`), or 204 (`rest.kind = 'empty'`), or a 302 (`rest.kind = 'redirect'`).
 */
import type { ErrorCode } from '@contracts/errors.js';
import { callTRPCProcedure, type AnyRouter, type inferRouterContext } from '@trpc/server';
import type { Request, RequestHandler } from 'express';
import { ZodVoid } from 'zod';
import { AppError } from '../server/common/errors.js';
import { jsonBody } from '../server/common/http.js';
import type { ProcedureMeta } from '../server/common/trpc.js';
import type { HttpMethod, RouteTable } from './routes.js';

/** What `jsonBody` and `requireJsonObject` answer for a body they refuse. */
const JSON_BODY_ERRORS: ErrorCode[] = ['MALFORMED_JSON', 'BAD_REQUEST', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'REQUEST_TIMEOUT'];

function hasBody(req: Request): boolean {
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
}

/** A body must be JSON and an object: anything else is refused before a procedure sees it. */
export const requireJsonObject: RequestHandler = (req, _res, next) => {
  if (!hasBody(req)) return next();
  if (!req.is(['application/json', 'application/*+json'])) {
    return next(new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Request body must be application/json'));
  }
  if (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body)) {
    return next(new AppError(400, 'BAD_REQUEST', 'Request body must be a JSON object'));
  }
  next();
};

/**
 * Procedures are called by path with `callTRPCProcedure` (what tRPC's own HTTP adapters do), not
 * through a per-request `createCaller` proxy: same middlewares, validation and errors, less work
 * on the hottest REST paths. They get no `signal` (tRPC's type allows none): no JSON procedure
 * reads it, and an AbortController with its `close` listener for every request cost `/auth/me`
 * ≈ 8 µs of its 68 µs of CPU (1.11× the requests a second without it, alternating 1 s runs).
 * Streams and uploads, which do stop with their client, take theirs in their own routes
 * (`requestSignal`).
 */
export function mountJsonProcedures<R extends AnyRouter>(table: RouteTable, router: R, contextFor: (req: Request) => inferRouterContext<R>): void {
  for (const [dottedPath, procedure] of Object.entries(
    router._def.procedures as Record<string, { _def: { type: string; meta?: ProcedureMeta; inputs: unknown[] } }>,
  )) {
    const { meta, type, inputs } = procedure._def;
    if (!meta?.openapi || type === 'subscription') continue;
    const takesInput = inputs.length > 0 && !(inputs[0] instanceof ZodVoid);
    const method = meta.openapi.method.toLowerCase() as HttpMethod;
    const usesBody = method !== 'get' && method !== 'delete';
    const handler: RequestHandler = async (req, res) => {
      // Body or query string, read only by procedures that take input (`req.query` parses on access).
      const input = takesInput
        ? { ...((usesBody ? (hasBody(req) ? req.body : undefined) : req.query) as Record<string, unknown> | undefined), ...req.params }
        : undefined;
      const result = await callTRPCProcedure({
        router,
        path: dottedPath,
        type: type as 'query' | 'mutation',
        ctx: contextFor(req),
        getRawInput: () => Promise.resolve(input),
        signal: undefined,
        batchIndex: 0,
      });
      if (meta.rest?.kind === 'empty') {
        res.status(204).end();
      } else if (meta.rest?.kind === 'redirect') {
        res.redirect(302, (result as { location: string }).location);
      } else if (meta.rest?.kind === 'created') {
        res.status(201).json(result);
      } else {
        res.json(result);
      }
    };
    table.add(method, meta.openapi.path, usesBody ? [jsonBody, requireJsonObject, handler] : [handler], undefined, {
      errors: [...(usesBody ? JSON_BODY_ERRORS : []), ...(takesInput ? (['VALIDATION_FAILED'] as const) : []), ...(meta.errors ?? [])],
      authenticated: meta.openapi.protect !== false,
    });
  }
}
