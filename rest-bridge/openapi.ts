import { ERRORS, type ErrorCode } from '@contracts/errors.js';
import type { AnyRouter } from '@trpc/server';
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

/**
 * Generated from the procedures' metadata plus the adapters' own entries; never hand-written.
 * trpc-to-openapi is imported on the first request for the document: it is several MB of memory
 * that a service which is never asked for it (most agents) does not need.
 */
export async function openApiDocument(router: AnyRouter, table: RouteTable, info: { title: string; version: string; baseUrl: string }) {
  const { generateOpenApiDocument } = await import('trpc-to-openapi');
  const document = generateOpenApiDocument(router, { ...info, paths: table.extraPaths });
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(operations as Record<string, { description?: string } | undefined>)) {
      const codes = table.errorCodes.get(`${method} ${path}`);
      if (operation && codes) listErrorCodes(operation, codes);
    }
  }
  return document;
}

/**
 * An operation's possible error codes, from the catalogue (contracts/errors.ts): in its
 * description for people, and as `x-error-codes` ({code, status, message}) for tools.
 */
function listErrorCodes(operation: { description?: string; 'x-error-codes'?: unknown }, codes: ErrorCode[]): void {
  const sorted = [...codes].sort((a, b) => ERRORS[a].status - ERRORS[b].status || a.localeCompare(b));
  operation['x-error-codes'] = sorted.map((code) => ({ code, ...ERRORS[code] }));
  const list = `Error codes: ${sorted.map((code) => `\`${code}\` (${ERRORS[code].status})`).join(', ')}.`;
  operation.description = operation.description ? `${operation.description}\n\n${list}` : list;
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

/** OpenAPI entry for a raw file body (rest-bridge/file.ts). */
export function fileBodyDoc(summary: string, parameters: ZodOpenApiOperationObject['parameters'] = []): ZodOpenApiOperationObject {
  const error = { description: 'Error', content: { 'application/json': { schema: ErrorBody } } };
  return {
    summary,
    parameters,
    responses: {
      '200': {
        description: 'The file; `Content-Type` from its extension, `ETag`, `Last-Modified`, `Content-Disposition`',
        content: { 'application/octet-stream': { schema: z.string().meta({ format: 'binary' }) } },
      },
      '206': { description: 'The requested byte range (`Range: bytes=a-b`)' },
      '304': { description: 'Not modified (`If-None-Match` / `If-Modified-Since`)' },
      '403': { ...error, description: 'Outside the workspace, or a protected file' },
      '404': { ...error, description: 'No such file (or a directory)' },
      '416': { ...error, description: 'Range not satisfiable' },
      default: error,
    },
  };
}

/** OpenAPI entry for a multipart/form-data request answered with JSON (rest-bridge/multipart.ts). */
export function multipartDoc(summary: string, form: z.ZodType, result: z.ZodType, errors: Record<string, string> = {}): ZodOpenApiOperationObject {
  const error = (description: string) => ({ description, content: { 'application/json': { schema: ErrorBody } } });
  return {
    summary,
    requestBody: { required: true, content: { 'multipart/form-data': { schema: form } } },
    responses: {
      '200': { description: 'OK', content: { 'application/json': { schema: result } } },
      ...Object.fromEntries(Object.entries(errors).map(([status, description]) => [status, error(description)])),
      default: error('Error'),
    },
  };
}
