/**
 * tRPC initialisation shared by both services: superjson, an error formatter that exposes the
 * same machine code the REST bridge writes (and never a stack), and the procedure metadata that
 * the bridge and the OpenAPI document read.
 */
import type { ErrorCode } from '@contracts/errors.js';
import { initTRPC } from '@trpc/server';
import superjson from 'superjson';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { mapError } from './errors.js';

/**
 * `openapi` (trpc-to-openapi) places a procedure at a REST path. `rest` says how the bridge
 * answers when the answer is not a plain 200 JSON body: `created` → 201 with the JSON body,
 * `empty` → 204, `redirect` → 302 to the returned `location`. Streams, uploads and file bodies have their own bridge adapters.
 */
export type ProcedureMeta = OpenApiMeta & {
  rest?: { kind: 'created' | 'empty' | 'redirect' };
  /** The codes its own domain can answer with, for the OpenAPI document (the bridge adds the ones every route has). */
  errors?: ErrorCode[];
};

export function initServiceTrpc<Ctx extends object>() {
  return initTRPC
    .context<Ctx>()
    .meta<ProcedureMeta>()
    .create({
      transformer: superjson,
      errorFormatter({ shape, error }) {
        const mapped = mapError(error);
        return {
          message: mapped.body.detail,
          code: shape.code,
          data: {
            code: mapped.body.code,
            httpStatus: mapped.status,
            issues: mapped.body.issues,
            path: shape.data.path,
            ...(mapped.body.expires_at === undefined ? {} : { expires_at: mapped.body.expires_at }),
          },
        };
      },
    });
}
