/**
 * One error type for every failure a client may see, and one mapping from any thrown value to
 * the wire error body `{detail, code, issues?}` (docs/api.md, "Errors and limits").
 *
 * AppError extends TRPCError so that tRPC clients get the right HTTP status and the same
 * machine code (in `error.data.code`), while the REST bridge writes the documented body.
 */
import type { ErrorCode } from '@contracts/errors.js';
import { TRPCError } from '@trpc/server';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';
import { ZodError } from 'zod';

export interface ErrorBody {
  detail: string;
  /** A catalogue code (contracts/errors.ts), or tRPC's own for a failure before our code runs. */
  code: string;
  issues?: Array<{ path: string; message: string }>;
  /** When a ban ends (USER_BANNED; null: until lifted), ISO 8601 UTC. */
  expires_at?: string | null;
}

const trpcCodeByStatus: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_SUPPORTED',
  408: 'TIMEOUT',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE_CONTENT',
  429: 'TOO_MANY_REQUESTS',
  499: 'CLIENT_CLOSED_REQUEST',
  500: 'INTERNAL_SERVER_ERROR',
  501: 'NOT_IMPLEMENTED',
  502: 'BAD_GATEWAY',
  503: 'SERVICE_UNAVAILABLE',
  504: 'GATEWAY_TIMEOUT',
};

const statusByTrpcCode = Object.fromEntries(Object.entries(trpcCodeByStatus).map(([status, code]) => [code, Number(status)])) as Record<
  TRPC_ERROR_CODE_KEY,
  number
>;

export class AppError extends TRPCError {
  readonly status: number;
  readonly appCode: ErrorCode;
  /** Extra response headers, e.g. Retry-After on 429. */
  readonly headers: Record<string, string>;
  /** Fields the answer carries beside `detail` and `code` (ErrorBody lists them). */
  readonly fields: Pick<ErrorBody, 'expires_at'> = {};

  constructor(status: number, appCode: ErrorCode, detail: string, headers: Record<string, string> = {}, fields: Pick<ErrorBody, 'expires_at'> = {}) {
    super({ code: trpcCodeByStatus[status] ?? 'INTERNAL_SERVER_ERROR', message: detail });
    this.name = 'AppError';
    this.status = status;
    this.appCode = appCode;
    this.headers = headers;
    this.fields = fields;
  }
}

export const badRequest = (detail: string, code: ErrorCode = 'BAD_REQUEST') => new AppError(400, code, detail);
export const unauthorized = (detail = 'Missing or invalid credentials', code: ErrorCode = 'UNAUTHORIZED') => new AppError(401, code, detail);
export const forbidden = (detail = 'Forbidden', code: ErrorCode = 'FORBIDDEN') => new AppError(403, code, detail);
export const notFound = (detail = 'Not found', code: ErrorCode = 'NOT_FOUND') => new AppError(404, code, detail);
export const conflict = (detail: string, code: ErrorCode = 'CONFLICT') => new AppError(409, code, detail);

export interface MappedError {
  status: number;
  body: ErrorBody;
  headers: Record<string, string>;
  /** True when the failure is ours (5xx from an unexpected throw): log it with its stack. */
  unexpected: boolean;
}

function zodIssues(error: ZodError): ErrorBody['issues'] {
  return error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
}

/** Body-parser and http-errors style errors carry `status`/`type` (express.json, busboy limits). */
function httpParserError(error: unknown): MappedError | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { status, type } = error as { status?: unknown; type?: unknown };
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  const byType: Record<string, [ErrorCode, string]> = {
    'entity.parse.failed': ['MALFORMED_JSON', 'Request body is not valid JSON'],
    'entity.too.large': ['PAYLOAD_TOO_LARGE', 'Request body is too large'],
    'encoding.unsupported': ['UNSUPPORTED_ENCODING', 'Unsupported content encoding'],
    'charset.unsupported': ['UNSUPPORTED_CHARSET', 'Unsupported charset'],
    'request.aborted': ['REQUEST_ABORTED', 'Request aborted'],
  };
  const [code, detail] = byType[String(type)] ?? ['BAD_REQUEST', 'Bad request'];
  return { status, body: { detail, code }, headers: {}, unexpected: false };
}

/** Maps anything thrown anywhere to the wire error. Never leaks messages of unexpected errors. */
export function mapError(error: unknown): MappedError {
  const cause = error instanceof TRPCError && error.cause ? error.cause : undefined;
  if (error instanceof AppError) {
    return { status: error.status, body: { detail: error.message, code: error.appCode, ...error.fields }, headers: error.headers, unexpected: false };
  }
  if (cause instanceof AppError) return mapError(cause);
  const zod = error instanceof ZodError ? error : cause instanceof ZodError ? cause : undefined;
  if (zod) {
    return {
      status: 400,
      body: { detail: 'Invalid input', code: 'VALIDATION_FAILED', issues: zodIssues(zod) },
      headers: {},
      unexpected: false,
    };
  }
  if (error instanceof TRPCError && error.code !== 'INTERNAL_SERVER_ERROR') {
    const status = statusByTrpcCode[error.code] ?? 500;
    return { status, body: { detail: error.message, code: error.code }, headers: {}, unexpected: status >= 500 };
  }
  const parser = httpParserError(error);
  if (parser) return parser;
  if (isStoreUnavailable(error)) {
    return {
      status: 503,
      body: { detail: 'The store is unavailable; try again shortly', code: 'STORE_UNAVAILABLE' },
      headers: { 'Retry-After': '1' },
      unexpected: false,
    };
  }
  return { status: 500, body: { detail: 'Internal error', code: 'INTERNAL' }, headers: {}, unexpected: true };
}

/** Connection-level failures of the database (refused, reset, timed out, terminated, server
 *  shutting down), through Prisma, its driver adapters or pg itself: the store is down, not us. */
const STORE_DOWN_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'P1001',
  'P1002',
  'P1008',
  'P1017',
  'P2024',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08006',
]);
const STORE_DOWN_KINDS = new Set(['DatabaseNotReachable', 'DatabaseAccessDenied', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
const STORE_DOWN_MESSAGE =
  /Connection terminated|Server has closed the connection|connection timeout|Can't reach database server|Client has encountered a connection error|server closed the connection|timeout exceeded when trying to connect|ECONNREFUSED|ECONNRESET/i;

export function isStoreUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; typeof e === 'object' && e !== null && depth < 6; depth++) {
    const { code, kind, message, name } = e as { code?: unknown; kind?: unknown; message?: unknown; name?: unknown };
    if (typeof code === 'string' && STORE_DOWN_CODES.has(code)) return true;
    if (typeof kind === 'string' && STORE_DOWN_KINDS.has(kind)) return true;
    if (name === 'PrismaClientInitializationError') return true;
    if (typeof message === 'string' && STORE_DOWN_MESSAGE.test(message)) return true;
    e = (e as { cause?: unknown }).cause ?? (e as { originalError?: unknown }).originalError;
  }
  return false;
}
