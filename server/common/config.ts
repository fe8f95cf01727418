/**
 * Configuration is read once, from the environment, through a zod schema per service.
 * A bad value stops the service with one line naming the variable (no stack trace).
 *
 * Each variable's schema also carries what docs/configuration.md and .env.example say about it
 * (scripts/docs.ts generates both): `.describe(meaning)`, or `.meta({ description, default,
 * values, internal })` where the default or the allowed values need words the schema cannot give,
 * and `internal: true` for the variables the account service sets for the agents it starts.
 */
import { z } from 'zod';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses `env` with `schema`; throws ConfigError whose message names every bad variable. */
export function parseConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`);
  throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
}

/** Empty strings count as unset, so `FOO= npm start` behaves like no FOO at all. */
export const optionalString = z.preprocess((v) => (v === '' ? undefined : v), z.string().optional());

export const port = (fallback: number) => z.preprocess((v) => (v === '' || v === undefined ? fallback : v), z.coerce.number().int().min(0).max(65535));

export const httpUrl = z.url({ protocol: /^https?$/ });

export const logLevel = z
  .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  .default('info')
  .describe('the least severe log level written; logs are JSON lines with a request id (`X-Request-Id` is echoed, or generated)');

export const logPretty = optionalString
  .pipe(z.enum(['0', '1']).optional())
  .describe('`1` prints human-readable logs (pino-pretty, a development dependency) instead of JSON lines');

/** Both services' body timeouts (http.ts `BodyTimeouts`; docs/security.md, "Stalled bodies"). */
export const requestBodyTimeout = z
  .preprocess((v) => (v === '' || v === undefined ? 30 : v), z.coerce.number().positive().max(3600))
  .describe(
    'seconds a request body may take to arrive in full after its headers; a later one is cut with 408 `REQUEST_TIMEOUT` (uploads instead: `UPLOAD_IDLE_TIMEOUT_SECONDS`)',
  );

export const uploadIdleTimeout = z
  .preprocess((v) => (v === '' || v === undefined ? 30 : v), z.coerce.number().positive().max(3600))
  .describe('an upload delivering under 1 KiB in this window is cut (408 `UPLOAD_STALLED`): a slow upload goes on as long as it progresses');

export const otlpEndpoint = optionalString.pipe(httpUrl.optional()).meta({
  description:
    'OTLP/HTTP collector base URL: each HTTP request is then traced (one span, with the request id) and exported to `<url>/v1/traces`; the SDK is loaded only when set',
  default: 'unset → no tracing, nothing loaded',
  values: '`http(s)://` URL',
});
