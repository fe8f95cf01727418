import type { AnyRouter } from '@trpc/server';
import { generateOpenApiDocument } from 'trpc-to-openapi';
import type { ZodOpenApiOperationObject } from 'zod-openapi';
import { z } from 'zod';
import type { RouteTable } from './routes.js';

export const ErrorBody = z
  .object({
    detail: z.string(),
    code: z.string(),
    issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .meta({ id: 'ErrorBody' });

/** Generated from the procedures' metadata plus the adapters' own entries; never hand-written. */
export function openApiDocument(router: AnyRouter, table: RouteTable, info: { title: string; version: string; baseUrl: string }) {
  return generateOpenApiDocument(router, { ...info, paths: table.extraPaths });
}

/** OpenAPI entry for an SSE route. */
export function eventStreamDoc(summary: string, event: z.ZodType, requestBody?: z.ZodType): ZodOpenApiOperationObject {
  return {
    summary,
    ...(requestBody ? { requestBody: { content: { 'application/json': { schema: requestBody } } } } : {}),
    responses: {
      '200': {
        description: 'text/event-stream; each event is a `data:` line holding one JSON object',
        content: { 'text/event-stream': { schema: event } },
      },
      default: { description: 'Error', content: { 'application/json': { schema: ErrorBody } } },
    },
  };
}
